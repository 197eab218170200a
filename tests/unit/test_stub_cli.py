"""`symtrace stub-llm` and the pytest plugin, exercised in real subprocesses."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import httpx

import symtrace.stub
from symtrace.cli import stub as cli

REPO = Path(symtrace.stub.__file__).resolve().parents[2]
LINE = re.compile(r"^stub-llm listening on (http://127\.0\.0\.1:(\d+)/v1)$")


def env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "symtrace.cli.stub", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )


def test_cli_serves_until_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"default": {"content": "scripted hello"}}))
    proc = start("--script", str(script), "--print-url")
    try:
        assert proc.stdout is not None
        match = LINE.match(proc.stdout.readline().rstrip("\n"))
        assert match, "first line must announce the URL"
        url = match.group(1)
        assert proc.stdout.readline().strip() == url
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        resp = httpx.post(f"{url}/chat/completions", json=body, timeout=10)
        assert resp.json()["choices"][0]["message"]["content"] == "scripted hello"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # waits, and closes its pipes


def test_cli_stochastic_sigint(tmp_path: Path) -> None:
    proc = start("--seed", "3", "--tool-probability", "1", "--terminate-probability", "0")
    try:
        assert proc.stdout is not None
        match = LINE.match(proc.stdout.readline().rstrip("\n"))
        assert match
        stats = httpx.get(match.group(1).removesuffix("/v1") + "/_stub/stats", timeout=10).json()
        assert stats == {"served": 0, "by_path": {}, "mode": "stochastic"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # waits, and closes its pipes


def test_cli_usage_errors_exit_2_before_listening(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[not json")
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"rules": [{"match": {"nope": 1}, "reply": {"content": "x"}}]}))
    cases = {
        ("--script", str(tmp_path / "missing.json")): "not found",
        ("--script", str(broken)): "not valid JSON",
        ("--script", str(invalid)): "unknown key 'nope'",
        ("--host", "0.0.0.0"): "loopback",
        ("--tool-probability", "2"): "probability",
    }
    for args, message in cases.items():
        result = subprocess.run(
            [sys.executable, "-m", "symtrace.cli.stub", *args],
            capture_output=True,
            text=True,
            env=env(),
            timeout=20,
        )
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == ""
        assert message in result.stderr and "error" in result.stderr


def test_add_parser_registers_subcommand(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="symtrace")
    cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["stub-llm", "--script", str(tmp_path / "no.json"), "--seed", "4"])
    assert args.func is cli.run and args.seed == 4 and args.port == 0
    assert args.host == "127.0.0.1" and args.mode is None and not args.print_url
    assert args.func(args) == 2  # missing script: an error before anything listens


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, symtrace.testing.pytest_plugin, symtrace.stub;"
        "assert 'openai' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env(), timeout=30)


PLUGIN_TESTS = """
import json, urllib.request

SEEN = []

def post(stub, text):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    req = urllib.request.Request(stub.url + "/chat/completions", data=body, method="POST")
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]

def test_use(stub_llm, stub_llm_factory):
    assert stub_llm.running and stub_llm.mode == "stochastic" and stub_llm.seed is None
    assert post(stub_llm, "hello world")
    scripted = stub_llm_factory(script={"default": {"content": "fixed"}})
    seeded = stub_llm_factory(mode="stochastic", seed=9)
    assert post(scripted, "x") == "fixed" and post(seeded, "x")
    SEEN.extend([stub_llm, scripted, seeded])

def test_all_stopped_after_teardown():
    assert len(SEEN) == 3 and not any(s.running for s in SEEN)
"""


def test_pytest_plugin_fixtures_in_a_real_session(tmp_path: Path) -> None:
    (tmp_path / "test_plugin_use.py").write_text(PLUGIN_TESTS)
    registered = any(
        ep.value == "symtrace.testing.pytest_plugin" for ep in entry_points(group="pytest11")
    )
    plugin_args: list[str] = [] if registered else ["-p", "symtrace.testing.pytest_plugin"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args, "."],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
