"""Issue 19, CrewAI: ReAct text gives data edges; one coworker handed work twice is refused.

* ReAct text path (an `o1-…` model: no function calling). The agent answers
  `Thought: …\\nFinal Answer: X` and CrewAI hands only X to the next task; it calls tools by
  `Action: <tool>` / `Action Input: {…}` text. Both must be data edges in the graph, so a
  selective replay anchored at the first agent makes the next agent's call live.
* Hierarchical manager delegating to the same coworker several times in one response: CrewAI
  runs one hand-off and fails the others ("Executor is already running") by thread timing, so
  no bundle can replay it; recording refuses it with UnsupportedConstruct (as it refuses two
  overlapping async tasks on one agent) before any hand-off runs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gen_harness import needs

needs("crewai")

from gen_check import Check  # noqa: E402
from gen_react import ReActStochastic  # noqa: E402
from gen_spec import AgentSpec, Program, ToolSpec  # noqa: E402

import symtrace  # noqa: E402
from symtrace.bundle import load_bundle  # noqa: E402
from symtrace.model.events import EdgeKind, EventType  # noqa: E402
from symtrace.stub import Reply, StubLLM, ToolCall  # noqa: E402

pytestmark = [pytest.mark.framework("crewai"), pytest.mark.slow]

REACT = Program("crewai", "react", (
    AgentSpec("planner", 0, (ToolSpec("planner_ok_0", "ok"),)),
    AgentSpec("researcher", 1),
), turns=3)


class ScriptedReAct:
    """First agent: one `Action:` tool call, then a final answer; the next agent answers."""

    mode = "policy"

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        system = str(body["messages"][0].get("content"))
        if "planner" in system and len(body["messages"]) <= 2:  # the task, nothing after it
            return Reply(content='Thought: I need facts.\nAction: planner_ok_0\n'
                         'Action Input: {"topic": "Lisbon"}')
        who = "planner" if "planner" in system else "researcher"
        return Reply(content=f"Thought: I now know the final answer.\nFinal Answer: The "
                     f"{who} settled on the tram museum and a riverside lunch.")


@pytest.fixture
def stub_with(gen_home: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    started: list[StubLLM] = []

    def start(responder: Any) -> StubLLM:
        stub = StubLLM(responder=responder).start()
        started.append(stub)
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return stub

    yield start
    for stub in started:
        stub.stop()


def test_react_final_answer_and_actions_are_data_edges(stub_with, tmp_path) -> None:
    import gen_crewai

    stub_with(ScriptedReAct())
    with symtrace.record(tmp_path / "b", adapters=["crewai"]):
        gen_crewai.run(REACT)
    events = load_bundle(tmp_path / "b").events
    llm = [e for e in events if e.is_llm]
    planner = [e for e in llm if "planner" in str(e.request["body"]["messages"][0])]
    researcher = [e for e in llm if e not in planner]
    assert len(planner) == 2 and researcher
    tool_call = next(e for e in events if e.type is EventType.TOOL_CALL)
    # the Action: text is what the tool call carries out
    assert (planner[0].id, EdgeKind.DATA) in {(p.source, p.kind) for p in tool_call.parents}
    # only the Final Answer reaches the next task, and that is a data edge
    assert (planner[-1].id, EdgeKind.DATA) in {
        (p.source, p.kind) for p in researcher[0].parents
    }


def test_react_selective_replay_at_every_request(stub_with) -> None:
    import gen_crewai

    stub = stub_with(ReActStochastic())
    check = Check(gen_crewai.run, "crewai", stub, Path(tempfile.mkdtemp(prefix="symtrace-")),
                  strict_replays=1)
    finding = check(REACT)
    assert finding.anchors["live"] == finding.llm_requests >= 2


class TwoHandOffsToOneCoworker:
    mode = "policy"

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        system = str(body["messages"][0].get("content"))
        if "Crew Manager" in system and not any(m.get("role") == "tool"
                                                for m in body["messages"]):
            calls = tuple(
                ToolCall("delegate_work_to_coworker",
                         f'{{"task": "{task}", "context": "Lisbon trip", '
                         f'"coworker": "planner"}}')
                for task in ("List three food stops", "List two museums")
            )
            return Reply(tool_calls=calls)
        return Reply(content="Done: food stops and museums listed.")


def test_one_coworker_handed_work_twice_in_one_response_is_refused(stub_with,
                                                                    tmp_path) -> None:
    import gen_crewai

    stub = stub_with(TwoHandOffsToOneCoworker())
    program = Program("crewai", "hierarchical", (AgentSpec("planner", 0),
                                                 AgentSpec("researcher", 1)))
    with pytest.raises(symtrace.UnsupportedConstruct, match="planner"), \
            symtrace.record(tmp_path / "b", adapters=["crewai"]):
        gen_crewai.run(program)
    # refused when the response arrived: no coworker ran
    assert [r for r in stub.requests if "You are planner" in str(r["messages"][0])] == []
