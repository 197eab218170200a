"""No planted credential reaches any output, and the program still replays unchanged.

More than twenty kinds of credential (below) are planted in a recorded program: the captured
environment, the command line, HTTP headers and query, prompts, a tool's arguments, a tool's
result and stdout. Every output a user can make of the bundle is scanned for every one of
them: the bundle's files, the HTML view, the OTel export file, `show --json`, `show`,
`diagnose`, `verify` and an `export --otlp` error naming a URL with credentials. The strict
replay must match (redaction is applied alike on both sides) and the program must see its
own values again (exit 0 only if its tool got back the declared value).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace.bundle import verify_bundle

PROGRAM = str(Path(__file__).parent / "programs" / "credentials_everywhere.py")
# kind -> (environment variable, value); each value is searched for in every output
PLANTED = {
    "openai key (env, Authorization header)": ("OPENAI_API_KEY", "sk-live-" + "Qw3" * 10),
    "OTLP headers (env)": ("OTEL_EXPORTER_OTLP_HEADERS",
                           "api-key=otelhdr-9a8b7c6d,x-honeycomb-team=hnyteam-5e4f3a2b"),
    "query api_key": ("QUERY_KEY", "qk-" + "71c3" * 6),
    "custom header": ("HEADER_TOKEN", "hdr-tok-" + "5d6e" * 5),
    "database URL password": ("DATABASE_URL", "postgres://dbuser:db-pass-8c7d6e5f@db:5432/app"),
    "proxy URL password": ("UPSTREAM_PROXY", "http://proxyuser:proxy-pass-1f2e3d4c@proxy:3128"),
    "X-Amz-Security-Token": ("AMZ_SESSION", "FQoGZXIvYXdzEJr" + "aB1" * 8),
    "X-Amz-Signature": ("AMZ_SIGNATURE", "fe12" * 16),
    "OAuth code": ("OAUTH_CODE", "4-0AX4XfWh" + "Kp2" * 6),
    "JWT": ("SESSION_JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2ItMTIzNDUifQ."
                           "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "bearer token": ("BEARER_VALUE", "bearer-" + "Zx8" * 9),
    "GitHub token": ("GITHUB_PAT_VALUE", "ghp_" + "A1b2C3d4E5" * 4),
    "AWS key id": ("AWS_KEY_ID_VALUE", "AKIA" + "QWERTYUIOPASDFGH"),
    "Slack token": ("SLACK_VALUE", "xoxb-" + "1234567890-abcdefghij"),
    "another sk- key in a prompt": ("OTHER_SK", "sk-proj-" + "Mn4" * 9),
    "access_token parameter": ("ACCESS_VALUE", "acc-" + "9z8y" * 5),
    "client_secret": ("CLIENT_SECRET_VALUE", "cs-" + "4r5t" * 5),
    "credential-named variable in a prompt": ("MY_SERVICE_TOKEN", "svc-" + "0p9o" * 5),
    "tool argument api_token": ("TOOL_TOKEN", "tool-tok-" + "3e4r" * 4),
    "tool argument password": ("TOOL_PASSWORD", "tool-pw-" + "6y7u" * 4),
    "tool argument secret": ("TOOL_SECRET", "tool-sec-" + "8i9o" * 4),
    "declared value in a received URL's key=": ("RESULT_SECRET", "result-" + "2w3e" * 4),
    "argv --password=": ("ARGV_PASSWORD", "argv-pw-" + "5t6y" * 4),
    "argv --token VALUE": ("CLI_TOKEN", "cli-tok-" + "7u8i" * 4),
}
DECLARED = ("RESULT_SECRET", "ARGV_PASSWORD")  # what the program receives back: restorable
pytestmark = pytest.mark.slow


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=180)


def test_no_planted_credential_in_any_output_and_replay_matches(tmp_path, stub_llm_factory):
    assert len(PLANTED) >= 20
    # a scripted reply: a stochastic one may echo a prompt's (undeclared) credential back
    stub = stub_llm_factory(script={"rules": [], "default": {"content": "Trip planned."}})
    env = {"OPENAI_BASE_URL": stub.url, **dict(PLANTED.values())}
    bundle = tmp_path / "b"
    argv = ["python", PROGRAM, f"--password={env['ARGV_PASSWORD']}", "--token",
            env["CLI_TOKEN"]]
    secret_env = [arg for name in DECLARED for arg in ("--secret-env", name)]
    captured = [arg for name in ("DATABASE_URL", "UPSTREAM_PROXY") for arg in ("--env", name)]
    rec = symtrace("record", "-o", str(bundle), "--quiet", *secret_env, *captured, "--", *argv,
                   env=env)
    assert rec.returncode == 0, rec.stderr
    verify_bundle(bundle)
    outputs = {"record's messages": rec.stderr}  # (its stdout is the program's own)
    for path in sorted(bundle.iterdir()):
        outputs[f"bundle {path.name}"] = path.read_text()
    runs = {
        "view": ["view", str(bundle), "-o", str(tmp_path / "v.html")],
        "export": ["export", str(bundle), "--otel", str(tmp_path / "o.json")],
        "show --json": ["show", str(bundle), "--json"],
        "show": ["show", str(bundle), "--width", "400"],
        "diagnose": ["diagnose", str(bundle)],
        "verify": ["verify", str(bundle)],
        "export --otlp error": [
            "export", str(bundle), "--otlp",
            f"http://user:{env['TOOL_PASSWORD']}@127.0.0.1:9/?api_key={env['QUERY_KEY']}"],
    }
    for name, args in runs.items():
        done = symtrace(*args, env=env)
        outputs[name] = done.stdout + done.stderr
    outputs["view HTML"] = (tmp_path / "v.html").read_text()
    outputs["OTel file"] = (tmp_path / "o.json").read_text()
    assert "[REDACTED" in outputs["bundle manifest.json"]
    leaks = [f"{kind} in {where}" for kind, (_, value) in PLANTED.items()
             for where, text in outputs.items()
             for part in _parts(value) if part in text]
    assert not leaks, "\n".join(leaks)
    trust = ["--trust"] if "--trust" in symtrace("replay", "--help", env=env).stdout else []
    replay = symtrace("replay", str(bundle), *trust, env=env)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert f"got /data?key={env['RESULT_SECRET']}&user=bob" in replay.stdout  # restored


def _parts(value: str) -> list[str]:
    """The secret parts of a planted value (a URL's password, each header's value)."""
    if "://" in value and "@" in value:
        return [value.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]]
    if "," in value and "=" in value:
        return [item.split("=", 1)[1] for item in value.split(",")]
    return [value]
