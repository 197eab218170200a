"""Real SDK programs under `symtrace record/replay`, against the stub endpoint on 127.0.0.1.

Each program records every LLM request it makes (as many LLM events as the endpoint served),
replays strictly with 0 endpoint requests and identical stdout, and diverges (exit 90) when
one prompt changes. The same file runs in the main environment (openai 2 over httpx) and in
the second one (openai 3 / anthropic 2 over httpx2): whichever stack is installed is proved.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import load_bundle

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.slow


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=240)


def endpoint_env(stub) -> dict[str, str]:
    return {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": stub.root_url, "ANTHROPIC_API_KEY": "sk-ant-test"}


def expected_transport(sdk: str) -> str:
    """The HTTP library the installed SDK sends through (openai 3 and anthropic: httpx2)."""
    if sdk == "anthropic":
        return "httpx2"
    major = int(metadata.version("openai").split(".", 1)[0])
    return "httpx2" if major >= 3 else "httpx"


PROGRAM_CASES = [
    pytest.param("openai_program.py", "openai", id="openai"),
    pytest.param("anthropic_program.py", "anthropic", id="anthropic"),
    pytest.param("agentchat_program.py", "autogen_agentchat", id="agentchat"),
]


@pytest.mark.parametrize(("program", "needs"), PROGRAM_CASES)
def test_record_replay_and_diverge(program, needs, stub_llm_factory, tmp_path):
    pytest.importorskip(needs)
    stub = stub_llm_factory(seed=7)
    env = endpoint_env(stub)
    bundle = tmp_path / "run"
    recorded = symtrace("record", "-o", str(bundle), "--", "python",
                        str(PROGRAMS / program), "Lisbon", env=env)
    assert recorded.returncode == 0, recorded.stderr[-4000:]
    served_live = stub.served
    loaded = load_bundle(bundle)
    llm_events = [e for e in loaded.events if e.is_llm]
    assert served_live > 0
    assert len(llm_events) == served_live, "every LLM request the endpoint saw is recorded"
    assert {e.meta["transport"] for e in llm_events} == {expected_transport(needs)}

    replayed = symtrace("replay", str(bundle), env=env)
    assert replayed.returncode == 0, replayed.stderr[-4000:]
    assert stub.served == served_live, "strict replay made no endpoint request"
    assert replayed.stdout == recorded.stdout
    boundary_calls = [e for e in loaded.events if e.type.value in ("agent_action", "tool_call")]
    assert f"served {len(boundary_calls)} boundary call" in replayed.stderr
    assert "0 live requests" in replayed.stderr

    report = tmp_path / "report.json"
    changed = symtrace("replay", str(bundle), "--report-json", str(report), "--",
                       "python", str(PROGRAMS / program), "Porto", env=env)
    assert changed.returncode == 90, changed.stderr[-4000:]
    assert stub.served == served_live
    found = orjson.loads(report.read_bytes())["report"]
    assert found["kind"] == "request_mismatch"
    assert found["event_id"] == llm_events[0].id
