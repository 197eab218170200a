"""Where a selective replay runs live: propagation after the anchor, and recorded egress.

Once the anchor's request (augmented with guidance) is sent live, the anchor and its causal
descendants in G are no longer expected. A later call goes live when its lane already went
live in a turn ordered before the call's own (events.turns_independent(): concurrent turns of
one agent, two `ask()`s under `gather`, are independent: the sibling of the anchor's turn keeps
being served, as the graph's lane order says, docs/replay-semantics.md), its turn was
caused by a lane that went live (attribution `dispatched_by`: a manager's speaker selection,
the sender of a message or chat result that triggered the turn, with or without content), or
a value its request carries comes from a live event; any other call must still match the
remaining records strictly. Each live call keeps its reason (the
child's lineage lists them as `live_reasons`).

Where a value comes from is decided by the run's own graph (model/graph.py
`GraphBuilder.sources`), the lookup that drew the recording's data edges: by fingerprint, a
part of a reply, or quoted inside a larger message, and, when several events produced the
same value, the one inside the call's causal context. So a live reply of one team that
repeats a value another team's request carries (both planners asking a tool the same thing)
does not make that request live, and the edges that decided what the anchor superseded and
the values that make a call live follow one rule. The graph sees every event of the replayed
run (served ones are followed, live ones derived); this frontier also tells it whose turn
caused whose for the calls it serves (GraphBuilder.note_turn), as recording did.

Egress: the endpoints the recording talked to through httpx are known; a replay that reaches
one of them by another route (a raw socket) bypassed the boundary, and the socket guard asks
the replayer to fail (see boundaries/egress.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from symtrace.model.events import Event, turns_independent
from symtrace.model.graph import GraphBuilder
from symtrace.session.context import Turn
from symtrace.session.core import BoundaryCall

HOW = {
    "value": "its request carries a value live event {source} produced",
    "quote": "its request quotes live event {source}'s reply",
}


class LiveFrontier:
    """What has gone live so far, and whether (and why) a new call follows it."""

    def __init__(self, graph: GraphBuilder) -> None:
        self.started = False
        self._graph = graph  # the replayed run's graph: where each value a call carries came from
        self._lanes: dict[str, str] = {}  # lane -> its first live event
        self._lane_turns: dict[str, list[Turn | None]] = {}  # lane -> the turns it went live in
        self._live: set[str] = set()  # live events whose results are in the run
        self.reasons: dict[str, str] = {}  # live event id -> why it went live

    def went_live(self, call: BoundaryCall, event_id: str, reason: str) -> None:
        self._lanes.setdefault(call.attribution.lane, event_id)
        turns = self._lane_turns.setdefault(call.attribution.lane, [])
        if call.turn not in turns:
            turns.append(call.turn)
        self.reasons[event_id] = reason

    def produced_by(self, event: Event) -> None:
        """A live event completed: later requests carrying its values depend on the live run
        (the graph registered its values when it was emitted)."""
        self._live.add(event.id)

    def follows(self, call: BoundaryCall) -> str | None:
        """Why *call* depends on the live part of the run (so it runs live too), or None.

        Asked about every call the replay claims, live or served, before and after the
        anchor: it first tells the graph which lanes caused the call's turn."""
        attribution = call.attribution
        lane, causes = attribution.lane, attribution.dispatched_by
        self._graph.note_turn(lane, causes)
        if not self.started:
            return None
        if lane in self._lanes and not all(ran_at_once(live, call.turn)
                                           for live in self._lane_turns[lane]):
            return f"lane {lane} went live at {self._lanes[lane]}"
        for cause in causes:
            # the call's own lane is the rule above (as in the graph's cause_edges): a classic
            # AG2 reply names the agent among its causes, and its live turn in another chat
            # (an independent sibling) does not make this one live
            if cause != lane and cause in self._lanes:
                return (f"its turn was caused by lane {cause} (a speaker choice, or a message "
                        f"or chat result it sent), live since {self._lanes[cause]}")
        if not self._live:
            return None
        sources = self._graph.sources(call.event_type, lane, call.request, call.meta, causes)
        for source, how in sorted(sources.items()):
            if source in self._live:
                return HOW[how].format(source=source)
        return None


def ran_at_once(a: Turn | None, b: Turn | None) -> bool:
    """Whether the order of turns *a* and *b* is open (events.turns_independent(), the rule
    the graph's lane order and the matcher follow): siblings, or turns inside siblings, that
    overlapped or that other tasks or threads opened. A turn and one inside it, turns one
    task opened one after the other, forks of one turn that did not overlap (AgentChat runs
    each model call in a task of its own, awaited before the next: Magentic-One's
    orchestrator) are ordered, so the anchor's lane going live takes the later one live;
    so is anything without a turn."""
    if a is None or b is None or a is b:
        return False
    return turns_independent(a.info, b.info)


def recorded_endpoints(records: Iterable[Event]) -> set[tuple[str, int]]:
    """(host, port) of every endpoint the recording talked to through an HTTP seam."""
    out = set()
    for record in records:
        host, port = record.meta.get("host"), record.meta.get("port")
        if host:
            out.add((str(host), int(port) if port else 443))
            if not port:
                out.add((str(host), 80))
    return out
