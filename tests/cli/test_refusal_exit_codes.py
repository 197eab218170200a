"""Issue 40: every refusal an adapter has ends `symtrace record` with exit 94 and its message,
and keeps no bundle, even when the program's framework turns it into an ordinary crash or the
program swallows it (the child hands the refusal back; the parent refuses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli

PROGRAMS = Path(__file__).parent / "programs" / "refusals"


@pytest.mark.slow
@pytest.mark.parametrize(("program", "framework", "message"), [
    ("ag2_shared_recipient", "autogen", "chats 1 and 2 of a_initiate_chats run at the same time"),
    ("crewai_shared_agent", "crewai", "tasks 'lisbon' and 'porto' are async_execution=True"),
    ("crewai_double_handoff", "crewai", "one response hands work to coworker 'planner' twice"),
])
def test_a_refusal_inside_the_framework_exits_94_and_keeps_nothing(
        program, framework, message, tmp_path):
    pytest.importorskip(framework, reason=f"needs {framework}")
    from symtrace.stub import StubLLM

    script = PROGRAMS / f"{program}.json"
    with StubLLM(mode="scripted", script=script if script.exists() else {"rules": []}) as stub:
        env = {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test",
               "HOME": str(tmp_path / "home")}
        done = run_cli("record", "-o", str(tmp_path / "b"), "--", sys.executable,
                       str(PROGRAMS / f"{program}.py"), env=env, cwd=tmp_path)
        sent = stub.served
    assert done.returncode == 94, done.stderr[-2000:]
    assert f"symtrace: error: {message}" in done.stderr
    assert not (tmp_path / "b").exists()  # no bundle that could "replay" the refused run
    if program != "crewai_double_handoff":  # refused before the first model call
        assert sent == 0


@pytest.mark.slow
@pytest.mark.parametrize("concurrent", ["raise", "catch"])
def test_a_refusal_during_replay_exits_94_not_as_a_divergence(concurrent, tmp_path):
    """Recorded with one chat; replayed, the program takes the refused construct. The replay
    fails with the refusal (exit 94, its message), also when the program catches it."""
    pytest.importorskip("autogen", reason="needs autogen")
    from symtrace.stub import StubLLM

    program = PROGRAMS / "ag2_refused_on_replay.py"
    with StubLLM(mode="scripted", script={"rules": []}) as stub:
        env = {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test",
               "HOME": str(tmp_path / "home")}
        recorded = run_cli("record", "-o", str(tmp_path / "b"), "--", sys.executable,
                           str(program), env=env, cwd=tmp_path)
        assert recorded.returncode == 0, recorded.stderr[-2000:]
        assert run_cli("replay", str(tmp_path / "b"), env=env, cwd=tmp_path).returncode == 0
        done = run_cli("replay", str(tmp_path / "b"), "--set-env", f"CONCURRENT={concurrent}",
                       env=env, cwd=tmp_path)
    assert done.returncode == 94, done.stderr[-2000:]
    assert ("symtrace: error: chats 1 and 2 of a_initiate_chats run at the same time"
            in done.stderr)
