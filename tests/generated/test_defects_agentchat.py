"""Issue 19, AgentChat: fan-out order without timing; Magentic-One anchored at its ledgers.

* GraphFlow fan-out: the reviewers' results must reach the editor in the recorded completion
  order however the scheduler interleaves the tasks. The chaos wrapper injects random
  yields to the event loop right after a recorded result is handed to its caller (where a
  busy machine delays a task), the place a time-based hand-off lets the next held result
  overtake it.
* Magentic-One: a selective replay anchored at any orchestrator request (facts, plan,
  progress ledger, final answer) goes live there and writes a child that replays.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import tempfile
from pathlib import Path

import pytest
from gen_harness import needs

needs("autogen_agentchat")
needs("autogen_ext.models.openai")

import gen_examples  # noqa: E402
from gen_check import Check  # noqa: E402
from gen_react import LedgerAware  # noqa: E402

import symtrace  # noqa: E402
from symtrace.bundle import load_bundle  # noqa: E402

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]
FANOUT = gen_examples.ROOT / "bundles" / "autogen_agentchat-graph_fanout"
CHAOS_REPLAYS = 20


def chaotic(session, rng: random.Random) -> None:
    """Random yields to the loop after each delivery, before the caller goes on with it."""
    deliver = session.abegin

    async def abegin(call):
        ticket = await deliver(call)
        for _ in range(rng.randint(0, 4)):
            await asyncio.sleep(0)
        return ticket

    session.abegin = abegin


def test_fan_out_replays_in_completion_order_under_random_scheduling(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    run = gen_examples.runner("autogen_agentchat", "graph_fanout", entry="run")
    program = gen_examples.program("autogen_agentchat", "graph_fanout")
    expected = (FANOUT / "stdout.txt").read_text().splitlines()
    rng = random.Random(secrets.randbits(64))
    outcomes = []
    for _ in range(CHAOS_REPLAYS):
        try:
            with symtrace.replay(FANOUT) as handle:
                chaotic(handle.session, rng)
                outcomes.append(run(program) == expected)
        except symtrace.ReplayDivergence as exc:
            outcomes.append(f"{exc.report.code} at {exc.report.event_id}")
    assert outcomes == [True] * CHAOS_REPLAYS


def test_fan_out_child_of_a_selective_replay_replays(stochastic_stub) -> None:
    """The child's live reviews finish in whatever order the live run had: the child must
    replay in that order."""
    check = Check(gen_examples.runner("autogen_agentchat", "graph_fanout", entry="run"),
                  "autogen_agentchat", stochastic_stub,
                  Path(tempfile.mkdtemp(prefix="symtrace-defect-")), strict_replays=3)
    finding = check(gen_examples.program("autogen_agentchat", "graph_fanout"))
    assert finding.anchors["live"] == finding.llm_requests == 4


@pytest.fixture
def ledger_stub(monkeypatch):
    """The unseeded stochastic stub whose progress ledgers name a real team member (else the
    orchestrator gives up after its first ledger and there is nothing to anchor at)."""
    from symtrace.stub import StubLLM

    with StubLLM(responder=LedgerAware()) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        yield stub


def test_magentic_one_selective_replay_at_every_orchestrator_request(ledger_stub) -> None:
    work = Path(tempfile.mkdtemp(prefix="symtrace-defect-"))
    check = Check(gen_examples.runner("autogen_agentchat", "magentic_one", entry="run"),
                  "autogen_agentchat", ledger_stub, work, strict_replays=1)
    finding = check(gen_examples.program("autogen_agentchat", "magentic_one"))
    assert finding.anchors["live"] == finding.llm_requests
    # the recording had orchestrator ledger turns, and each was an anchor above
    reasons = [e.reason for e in load_bundle(work / "recorded").events if e.is_llm]
    assert reasons.count("progress_ledger") >= 2, reasons


def test_magentic_one_ledger_anchor_through_the_cli(ledger_stub, tmp_path) -> None:
    """The reported failure: `symtrace replay --anchor <ledger>` exited 1 and its child did
    not replay. Through the CLI, as a user runs it."""
    import subprocess
    import sys

    example = gen_examples.EXAMPLES / "autogen_agentchat" / "magentic_one.py"
    env = {**os.environ, "OPENAI_BASE_URL": ledger_stub.url, "OPENAI_API_KEY": "sk-test"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                              text=True, env=env, timeout=300, cwd=tmp_path)

    recorded = cli("record", "-o", str(tmp_path / "b"), "--quiet", "--", sys.executable,
                   str(example))
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    ledgers = [e for e in load_bundle(tmp_path / "b").events if e.reason == "progress_ledger"]
    anchor = ledgers[len(ledgers) // 2]
    selective = cli("replay", str(tmp_path / "b"), "--anchor", anchor.id, "--guidance",
                    "Name the agent best placed to answer next.", "-o", str(tmp_path / "c"),
                    "--quiet", "--", sys.executable, str(example))
    assert selective.returncode == 0, selective.stderr[-2000:]
    served = ledger_stub.served
    again = cli("replay", str(tmp_path / "c"), "--quiet", "--", sys.executable, str(example))
    assert again.returncode == 0, again.stderr[-2000:]
    assert ledger_stub.served == served
