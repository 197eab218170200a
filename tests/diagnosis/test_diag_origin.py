"""The anchor is traced back along G from the first eligible symptom to where the failure was
introduced (origin.py): each of the three moves has a positive and a negative case."""

from __future__ import annotations

from symtrace.diagnosis import ScoringConfig, diagnose, without
from symtrace.diagnosis.rules import DEFAULT_RULES

from ._support import TraceBuilder

TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
TASK = "Plan a day in Lisbon: check the weather first."


def team(
    *,
    fact: str = "Lisboa-Norte",
    error: str = "unknown city 'Lisboa-Norte'",
    task: str = TASK,
    planner_lane: str = "main",
    seen_in_tool: bool = False,
) -> TraceBuilder:
    """Planner hands a city to the Researcher, whose weather call fails; the Writer answers."""
    b = TraceBuilder(task, tools=TOOLS)
    if seen_in_tool:
        b.agent(None, calls=[("weather", {"city": "Lisbon"})], agent="Scout")
        b.tool("weather", {"city": "Lisbon"}, value={"nearby": [fact]})
    b.agent(f"Researcher: check the weather in {fact}.", agent="Planner", lane=planner_lane)
    b.agent(None, calls=[("weather", {"city": fact})], agent="Researcher")
    b.tool("weather", {"city": fact}, error={"type": "ValueError", "message": error})
    b.agent("No weather available.", agent="Researcher")
    b.agent("Final answer: a day in Lisbon.", agent="Writer")
    return b


def planner_id(b: TraceBuilder) -> str:
    return next(e.id for e in b.events if e.agent == "Planner")


def researcher_ids(b: TraceBuilder) -> list[str]:
    return [e.id for e in b.events if e.agent == "Researcher" and e.type.value == "agent_action"]


class TestCausedByCall:
    def test_an_error_naming_the_argument_goes_to_the_decision_that_made_the_call(self):
        b = team(fact="Lisbn", error="unknown city 'Lisbn'", task="Weather in Lisbn, please.")
        d = diagnose(b.bundle())
        call_maker = researcher_ids(b)[0]
        assert d.anchor.symptom == "tool_result_0000"
        assert (d.anchor.target, d.anchor.anchor, d.anchor.relation) == (
            call_maker,
            call_maker,
            "self",
        )
        assert [s.rule for s in d.anchor.trace] == ["caused_by_call"]

    def test_an_environment_failure_stays_and_is_handled_downstream(self):
        b = team(error="the weather service did not answer within 10 s")
        d = diagnose(b.bundle())
        handler = researcher_ids(b)[1]
        assert d.anchor.trace == ()
        assert (d.anchor.target, d.anchor.anchor) == ("tool_result_0000", handler)
        assert d.anchor.relation == "downstream"

    def test_trace_back_off_keeps_the_first_symptom(self):
        b = team()
        d = diagnose(b.bundle(), trace_back=False)
        assert d.anchor.target == d.anchor.symptom == "tool_result_0000"
        assert d.anchor.anchor == researcher_ids(b)[1] and d.anchor.trace == ()


class TestValueProvenance:
    def test_a_value_introduced_by_an_earlier_agent_goes_to_that_agent(self):
        b = team()
        d = diagnose(b.bundle())
        assert d.anchor.symptom == "tool_result_0000"
        assert d.anchor.anchor == d.anchor.target == planner_id(b)
        assert [s.rule for s in d.anchor.trace] == ["caused_by_call", "value_provenance"]
        assert "Lisboa-Norte" in d.anchor.trace[-1].detail

    def test_a_value_from_the_task_is_not_an_agent_mistake(self):
        b = team(task="Plan a day in Lisboa-Norte: check the weather first.")
        d = diagnose(b.bundle())
        assert d.anchor.anchor == researcher_ids(b)[0]
        assert [s.rule for s in d.anchor.trace] == ["caused_by_call"]

    def test_a_value_a_tool_supplied_is_not_an_agent_mistake(self):
        b = team(seen_in_tool=True)
        d = diagnose(b.bundle())
        assert d.anchor.anchor == researcher_ids(b)[0]

    def test_an_agent_not_connected_in_g_is_not_the_origin(self):
        b = team(planner_lane="elsewhere")  # no edge from the Planner to the Researcher
        d = diagnose(b.bundle())
        assert d.anchor.anchor == researcher_ids(b)[0]


class TestPropagation:
    def test_propagated_evidence_leads_to_the_failure_it_continues(self):
        """Without the rule that flags the failed result itself (and a θ low enough for a
        propagation-only node), the first eligible node is the decision that continues from
        the failure; the trace-back goes to the failure, then to the call that caused it."""
        b = team(fact="Lisbn", error="unknown city 'Lisbn'", task="Weather in Lisbn, please.")
        rules = without(DEFAULT_RULES, ["c3_error_recorded"])
        d = diagnose(b.bundle(), rules=rules, config=ScoringConfig(theta=0.3))
        reader = researcher_ids(b)[1]
        assert d.anchor.symptom == reader
        assert all(e.scope.value == "propagated" for e in d.node(reader).confirmed_evidence)
        assert [s.rule for s in d.anchor.trace] == ["propagation", "caused_by_call"]
        assert d.anchor.anchor == researcher_ids(b)[0]

    def test_local_evidence_is_not_propagation(self):
        """A decision with its own (local) symptom is its own origin."""
        b = TraceBuilder("Answer from the weather tool.", tools=TOOLS)
        b.agent("Final answer: 25°C", agent="Researcher")
        b.final("25°C")
        d = diagnose(b.bundle())
        assert d.anchor.anchor == d.anchor.target == d.anchor.symptom == "agent_action_0000"
        assert d.anchor.trace == ()
