"""No credential reaches any byte of a bundle; declared secrets never break a program.

Credentials go in as the Authorization header, an `api_key` query parameter, a
credential-named environment variable's value in a prompt, and a declared `--secret-env`
value in a prompt, a tool argument, a tool result and stdout. Every byte of every file of
the bundle is scanned; the strict replay must match (redaction is applied before hashing on
both sides) and the program must see its own values again. An undeclared secret in what the
program received is refused with exit 95 and nothing is written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace.bundle import verify_bundle
from symtrace.errors import EXIT_REDACTION
from symtrace.model.redaction import Redactor

PROGRAM = str(Path(__file__).parent / "programs" / "secrets_everywhere.py")
SECRETS = {
    "OPENAI_API_KEY": "sk-live-" + "K3y" * 10,
    "QUERY_KEY": "q-" + "9f8e7d6c5b4a" * 2,
    "MY_SERVICE_TOKEN": "tok-" + "a1b2c3d4" * 3,
    "PROMPT_WORD": "marmalade-sunrise",  # declared: not a credential-like name
}
pytestmark = pytest.mark.slow


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "symtrace", *args], capture_output=True, text=True,
        env={**os.environ, **env}, timeout=120,
    )


@pytest.fixture
def env(stub_llm):
    return {"OPENAI_BASE_URL": stub_llm.url, **SECRETS}


def all_bytes(bundle: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file())


def test_no_credential_in_any_byte_and_replay_matches(tmp_path, env):
    out = tmp_path / "b"
    rec = symtrace("record", "-o", str(out), "--secret-env", "PROMPT_WORD", "--",
                   "python", PROGRAM, env=env)
    assert rec.returncode == 0, rec.stderr
    assert SECRETS["PROMPT_WORD"] in rec.stdout  # the program ran unchanged
    data = all_bytes(out)
    for name, value in SECRETS.items():
        assert value.encode() not in data, name
    # a credential-named variable's value is named wherever it is, a query parameter too
    assert b"[REDACTED:PROMPT_WORD]" in data and b"api_key=[REDACTED:QUERY_KEY]" in data
    verify_bundle(out)
    replay = symtrace("replay", str(out), env=env)
    assert replay.returncode == 0, replay.stderr
    assert SECRETS["PROMPT_WORD"] in replay.stdout  # restored from this process's variable


def test_replay_matches_with_other_key_values(tmp_path, env):
    out = tmp_path / "b"
    rec = symtrace("record", "-o", str(out), "--secret-env", "PROMPT_WORD", "--",
                   "python", PROGRAM, env=env)
    assert rec.returncode == 0, rec.stderr
    other = {**env, "OPENAI_API_KEY": "sk-other-" + "x" * 20,
             "MY_SERVICE_TOKEN": "tok-other-" + "y" * 12, "QUERY_KEY": "q-other-zzzzzz"}
    replay = symtrace("replay", str(out), env=other)
    assert replay.returncode == 0, replay.stderr


def test_undeclared_secret_received_by_the_program_is_refused_and_nothing_written(
    tmp_path, env
):
    out = tmp_path / "b"
    rec = symtrace("record", "-o", str(out), "--secret-env", "PROMPT_WORD", "--",
                   "python", PROGRAM, env={**env, "SECRET_IN_RESULT": "1"})
    assert rec.returncode == EXIT_REDACTION, rec.stderr
    assert "--secret-env" in rec.stderr
    assert not out.exists()


def test_one_pass_redactor_replaces_every_kind():
    redactor = Redactor.from_environment(
        env={"A_KEY": "value-of-a-key", "PLAIN": "plain-value-1"}, names=["PLAIN"]
    )
    scrubbed = redactor.scrub({
        "query": "api_key=abc123&x=1&access_token=zzz",
        "body": {"text": "value-of-a-key plain-value-1 https://h/p?key=k1&b=2 "
                 "Bearer abcdefghijklmnopqrstuvwxyz"},
    })
    assert scrubbed == {
        "query": "api_key=[REDACTED]&x=1&access_token=[REDACTED]",
        "body": {"text": "[REDACTED:A_KEY] [REDACTED:PLAIN] https://h/p?key=[REDACTED]&b=2 "
                 "[REDACTED]"},
    }
    restored = redactor.restore(scrubbed["body"])["text"]  # this process's own values
    assert restored.startswith("value-of-a-key plain-value-1 ")
    assert Redactor().restore("[REDACTED:A_KEY]", env={"A_KEY": "new"}) == "new"
    untouched = {"text": "nothing to see"}
    assert redactor.scrub(untouched) is untouched  # one search, no copy
