"""One value, several producers: the causal context decides, in the graph and in a replay.

Two teams the program starts at once (AG2 1.x `asyncio.gather` over two planners) name no
causes: nothing caused their first turns but the program. When both planners ask their tool
the same thing, each planner's next request carries a call and a result that the other team
produced too. The value is linked to the producer inside the call's causal context (its own
lane, the lanes under it, what it caused: model/graph.py context_of()), and a selective
replay decides by the same lookup whether a call carries a live value (replay/live.py).
Before: the latest producer won, whichever team it was on, so a selective replay anchored at
the other team's planner superseded this team's next request and then, when that request
carried nothing live, stopped with SYM-R102; when the live reply repeated the call, this
team's tool call and request went live although nothing live reached them.
"""

from __future__ import annotations

from typing import Any

import pytest

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.model.canonical import canonical_http_request
from symtrace.model.redaction import Redactor
from symtrace.replay.replayer import Replayer
from symtrace.session.context import Attribution
from symtrace.session.core import LLM, BoundaryCall

from ._support import chat_response, recorder, run, tool_call

RESULT = "Porto: 19 degrees and sunny all afternoon."
TEAMS = ("planner", "planner@2")


def _call(call_id: str, city: str = "Porto", name: str = "lookup") -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function",
             "function": {"name": name, "arguments": f'{{"city": "{city}"}}'}}]


def _request(team: int, *turn: dict[str, Any]) -> dict[str, Any]:
    messages = [{"role": "system", "content": "You are the planner."},
                {"role": "user", "content": f"Plan a day (request {team})."}, *turn]
    return canonical_http_request("POST", "/v1/chat/completions", "",
                                  {"model": "m", "messages": messages})


def _second_request(team: int, call_id: str, result: str = RESULT) -> dict[str, Any]:
    return _request(team, {"role": "assistant", "content": None, "tool_calls": _call(call_id)},
                    {"role": "tool", "tool_call_id": call_id, "content": result})


def _llm(request: dict[str, Any], lane: str, *causes: str) -> BoundaryCall:
    return BoundaryCall.make(LLM, request, {}, Attribution(lane.split("/")[0], lane, None,
                                                           causes))


CALL_IDS = ("call_a", "call_b")


def _record_two_teams(path) -> list[Any]:
    """Both planners ask lookup(Porto); team 1's call and result come last, then team 0's
    second request (the order a slower team 0 tool gives)."""
    session, writer = recorder(path)
    for team, lane in enumerate(TEAMS):
        run(session, _llm(_request(team), lane), chat_response(None, _call(CALL_IDS[team])))
    for team, lane in enumerate(TEAMS):
        run(session, tool_call("lookup", {"city": "Porto"}, lane=f"{lane}/tool#0",
                               call_id=CALL_IDS[team]), {"value": RESULT})
    for team, lane in enumerate(TEAMS):
        run(session, _llm(_second_request(team, CALL_IDS[team]), lane),
            chat_response("Porto it is."))
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    return list(load_bundle(path).events)


def _team(lane: str) -> str:
    return lane.split("/")[0]


def test_two_teams_started_by_the_program_never_link_across(tmp_path):
    events = _record_two_teams(tmp_path / "b")
    lane_of = {e.id: e.lane for e in events}
    for event in events:
        if event.lane != "main":  # the run's final result follows both
            assert {_team(lane_of[p]) for p in event.parent_ids} <= {_team(event.lane)}
    second = [e for e in events if e.is_llm][2]
    assert second.lane == "planner"
    assert {lane_of[p] for p in second.parent_ids} == {"planner", "planner/tool#0"}


def test_a_delegate_is_in_the_context_of_the_agent_that_asked_it(tmp_path):
    """`as_tool` delegation: helper and helper@2 answer their own planner identically; each
    planner's next request carries its own helper's answer."""
    answer = "Porto is mild today, nineteen degrees, light wind."
    session, writer = recorder(tmp_path / "b")
    for team, lane in enumerate(TEAMS):
        run(session, _llm(_request(team), lane),
            chat_response(None, _call(CALL_IDS[team], name="ask_helper")))
    for team, lane in enumerate(TEAMS):
        helper = "helper" if team == 0 else "helper@2"
        run(session, _llm(_request(team, {"role": "user", "content": "Weather in Porto?"}),
                          helper, lane), chat_response(answer))
    run(session, _llm(_second_request(0, CALL_IDS[0], answer), "planner"),
        chat_response("Porto it is."))
    complete_bundle(writer, exit_code=0, value=None, status="ok")
    events = list(load_bundle(tmp_path / "b").events)
    lane_of = {e.id: e.lane for e in events}
    asked = [e for e in events if e.is_llm][-1]
    assert asked.lane == "planner" and {lane_of[p] for p in asked.parent_ids} == {"helper"}


def test_the_causal_context_of_a_lane():
    from symtrace.model.graph import context_of, in_context

    caused = {"planner": {"helper"}, "helper": {"researcher"}, "researcher": {"planner"}}
    exact, trees = context_of("planner/tool#1", ("manager",), caused)
    assert exact == {"planner"} and trees == {"planner/tool#1", "manager"}
    exact, trees = context_of("planner", (), caused)
    assert trees == {"planner", "helper", "researcher"}  # delegations, transitively, once
    assert in_context("helper/tool#0", exact, trees)  # under a lane of the context
    assert not in_context("planner@2", exact, trees)
    assert not in_context("helperx", exact, trees)  # a prefix is not a sub-lane
    exact, trees = context_of("planner/tool#1", (), {})
    assert in_context("planner", exact, trees)  # the reply that asked for the tool
    assert not in_context("planner/tool#0", exact, trees)  # a sibling call


@pytest.mark.parametrize("live_city", ["Faro", "Porto"])
def test_a_selective_replay_at_one_team_leaves_the_other_team_served(tmp_path, live_city):
    """Anchored at team 1's first request. Faro: team 1's live reply asks something else;
    team 0's second request carries nothing live and must still be served (before: it was
    superseded, matched nothing: SYM-R102). Porto: the live reply repeats team 0's call
    under another id; team 0's tool call and request still come from team 0 (before: both
    went live by value)."""
    events = _record_two_teams(tmp_path / "b")
    anchor = next(e for e in events if e.is_llm and e.lane == "planner@2")
    replay = Replayer(load_bundle(tmp_path / "b"), Redactor(), anchor=anchor.id,
                      guidance="Check again.")
    assert not replay.begin(_llm(_request(0), "planner")).live
    ticket = replay.begin(_llm(_request(1), "planner@2"))
    assert ticket.live
    replay.finish(ticket, chat_response(None, _call("call_live", live_city)))

    own = replay.begin(tool_call("lookup", {"city": "Porto"}, lane="planner/tool#0",
                                 call_id="call_a"))
    assert not own.live and own.served["value"] == RESULT
    other = replay.begin(tool_call("lookup", {"city": live_city}, lane="planner@2/tool#0",
                                   call_id="call_live"))
    assert other.live  # the live reply asked for it, by its call id
    assert replay.frontier.reasons[other.event_id] == (
        f"its request carries a value live event {ticket.event_id} produced")
    replay.finish(other, {"value": f"{live_city}: 22 degrees."})

    second = replay.begin(_llm(_second_request(0, "call_a"), "planner"))
    assert not second.live
    assert second.served["body"]["choices"][0]["message"]["content"] == "Porto it is."
    assert replay.begin(_llm(_second_request(1, "call_live"), "planner@2")).live
    replay.close()
