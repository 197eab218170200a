"""The AG2 1.x adapter through the CLI, as a user wraps a program they already have: the
adapter arms itself on `import ag2` in the child process (no `--adapter`), the bundle names
it, and `symtrace replay` reproduces the program's output with no endpoint request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from symtrace import load_bundle
from tests.next_stack.ag2v1._support import EXAMPLES

pytestmark = pytest.mark.slow


def symtrace_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, cwd=cwd, timeout=300)


def test_record_then_replay_through_the_cli(endpoint, tmp_path: Path) -> None:
    stub = endpoint("delegation")
    env = {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test", "PYTHONHASHSEED": "0"}
    program = str(EXAMPLES / "delegation.py")
    recorded = symtrace_cli("record", "-o", str(tmp_path / "b"), "--", sys.executable,
                            program, env=env, cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    bundle = load_bundle(tmp_path / "b")
    assert bundle.config["adapters"] == ["ag2v1"]
    served = stub.served
    assert served == len([e for e in bundle.events if e.is_llm]) == 4
    assert {e.lane for e in bundle.events if e.type.value == "tool_call"} == {
        "researcher/tool#0", "researcher/tool#1"}

    replayed = symtrace_cli("replay", str(tmp_path / "b"), env=env, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert replayed.stdout == recorded.stdout
    assert stub.served == served
