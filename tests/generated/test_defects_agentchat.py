"""Issue 19, AgentChat: fan-out order without timing; Magentic-One anchored at its ledgers;
two teams whose tools return the same text.

* GraphFlow fan-out: the reviewers' results must reach the editor in the recorded completion
  order however the scheduler interleaves the tasks. The chaos wrapper injects random
  yields to the event loop right after a recorded result is handed to its caller (where a
  busy machine delays a task), the place a time-based hand-off lets the next held result
  overtake it.
* Magentic-One: a selective replay anchored at any orchestrator request (facts, plan,
  progress ledger, final answer) goes live there and writes a child that replays.
* Two teams of one shape (the generated `round_robin` programs drawn `concurrent`): both
  planners got the identical tool text back, and team A's researcher's request was linked to
  team B's copy when B's finished last. A selective replay anchored at team B's planner then
  dropped team A's researcher record (a descendant of the anchor) while nothing sent that call
  live: SYM-R102 inside the AgentChat runtime (the CI failure of the round_robin check, where
  autogen_core printed "task_done() called too many times" as the other team was cancelled).
  The adapter names the members whose messages a participant buffered as its turn's causes.
  Two standalone runs of same-named assistants (the `single` programs drawn `concurrent`)
  likewise: a turn that named no causes was linked to every copy of the text (model/graph.py
  now resolves such a value inside the call's own lane too).
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import tempfile
from pathlib import Path

import orjson
import pytest
from gen_harness import needs

needs("autogen_agentchat")
needs("autogen_ext.models.openai")

import gen_examples  # noqa: E402
import gen_twin_teams  # noqa: E402
from gen_check import Check  # noqa: E402
from gen_react import LedgerAware  # noqa: E402

import symtrace  # noqa: E402
from symtrace.bundle import load_bundle  # noqa: E402
from symtrace.model.events import EdgeKind  # noqa: E402

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


@pytest.fixture
def same_lookup_stub(monkeypatch):
    from symtrace.stub import StubLLM

    with StubLLM(responder=gen_twin_teams.SameLookup()) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield stub


def _record_twin_teams(tmp_path: Path) -> tuple[list[str], list]:
    with symtrace.record(tmp_path / "b", adapters=["autogen_agentchat"]):
        recorded = gen_twin_teams.run()
    return recorded, load_bundle(tmp_path / "b").events


def test_same_tool_text_in_two_teams_links_within_each_team(same_lookup_stub, tmp_path) -> None:
    _, events = _record_twin_teams(tmp_path)
    lane = {e.id: e.lane for e in events}
    results = [e for e in events if e.type.value == "tool_result"]
    assert [lane[r.id] for r in results] == ["planner/tool#0", "planner@2/tool#0"]
    assert results[0].response == results[1].response  # one value, a producer in each team
    researcher = next(e for e in events if e.is_llm and e.lane == "researcher")
    parents = {p.source: p.kind for p in researcher.parents}
    # it read team A's lookup (through team A's planner, whose turn caused its own)
    assert parents.get(results[0].id) is EdgeKind.DATA
    assert not [s for s in parents if "@2" in lane[s]], f"linked across teams: {parents}"


def test_selective_replay_in_one_team_serves_the_other(same_lookup_stub, tmp_path) -> None:
    """Anchored at team B's planner, whose live answer no longer looks anything up: team A
    replays from the bundle (it never read team B), team B runs live; the child replays."""
    recorded, events = _record_twin_teams(tmp_path)
    anchor = next(e for e in events if e.is_llm and e.lane == "planner@2")
    served = same_lookup_stub.served
    with symtrace.replay(tmp_path / "b", anchor=anchor.id, guidance=gen_twin_teams.GUIDANCE,
                         out=tmp_path / "child") as handle:
        got = gen_twin_teams.run()
    live = same_lookup_stub.requests[served:]
    assert gen_twin_teams.GUIDANCE in str(live[0]["messages"])
    assert len(live) == 2  # team B's planner (now without a lookup) and team B's researcher
    assert handle.session.served_count == 3  # team A: planner, its lookup, the researcher
    assert got[:4] == recorded[:4] and got[-1] == recorded[-1]  # team A as recorded
    assert got != recorded
    served = same_lookup_stub.served
    with symtrace.replay(tmp_path / "child"):
        assert gen_twin_teams.run() == got
    assert same_lookup_stub.served == served


def test_same_tool_text_in_two_standalone_runs(same_lookup_stub, tmp_path) -> None:
    """Anchored at the first assistant: the second one (lane planner@2) reflects on its own
    lookup and replays from the bundle; before, its reflection was linked to the first one's
    lookup too, and the selective replay stopped with SYM-R102 on lane planner@2."""
    with symtrace.record(tmp_path / "b", adapters=["autogen_agentchat"]):
        recorded = gen_twin_teams.run_standalone()
    events = load_bundle(tmp_path / "b").events
    lane = {e.id: e.lane for e in events}
    reflection = [e for e in events if e.is_llm and e.lane == "planner@2"][-1]
    assert {lane[p.source] for p in reflection.parents} == {"planner@2", "planner@2/tool#0"}
    anchor = next(e for e in events if e.is_llm and e.lane == "planner")
    served = same_lookup_stub.served
    with symtrace.replay(tmp_path / "b", anchor=anchor.id, guidance=gen_twin_teams.GUIDANCE,
                         out=tmp_path / "child") as handle:
        got = gen_twin_teams.run_standalone()
    assert same_lookup_stub.served == served + 1  # the anchor only: it looks nothing up now
    assert handle.session.served_count == 3  # the second assistant: request, lookup, reflection
    assert got[-4:] == recorded[-4:]
    with symtrace.replay(tmp_path / "child"):
        assert gen_twin_teams.run_standalone() == got
    assert same_lookup_stub.served == served + 1


def test_a_divergence_inside_the_agentchat_runtime_reaches_the_user(same_lookup_stub,
                                                                     tmp_path) -> None:
    """Two teams at once, team B's researcher prompt changed: the request is refused inside
    AgentChat's runtime, whose handler wraps it (APIConnectionError, then RuntimeError from
    the team; the other team is cancelled by asyncio.run, where autogen_core itself may print
    "task_done() called too many times"). The user still gets the divergence: in-process as
    RequestMismatch, through the CLI as exit 90 with the report naming the changed call."""
    import subprocess
    import sys

    program = [sys.executable, str(Path(gen_twin_teams.__file__)), "--concurrent"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                              text=True, env=env, timeout=300, cwd=tmp_path)

    recorded = cli("record", "-o", "b", "--quiet", "--", *program)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    changed = next(e for e in load_bundle(tmp_path / "b").events
                   if e.is_llm and e.lane == "researcher@2")
    served = same_lookup_stub.served
    replayed = cli("replay", "b", "--report-json", "report.json", "--", *program, "--perturb")
    assert replayed.returncode == 90, replayed.stderr[-3000:]
    report = orjson.loads((tmp_path / "report.json").read_bytes())
    assert report["status"] == "diverged"
    assert (report["report"]["kind"], report["report"]["event_id"]) == (
        "request_mismatch", changed.id)
    assert "symtrace: replay diverged" in replayed.stderr.rsplit("Traceback", 1)[-1]
    assert same_lookup_stub.served == served

    with pytest.raises(symtrace.RequestMismatch) as raised, symtrace.replay(tmp_path / "b"):
        asyncio.run(gen_twin_teams._run(perturb=True, concurrent=True))
    assert raised.value.report.event_id == changed.id
    assert same_lookup_stub.served == served
