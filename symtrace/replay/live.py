"""Where a selective replay runs live: propagation after the anchor, and recorded egress.

Once the anchor's request (augmented with guidance) is sent live, the anchor and its causal
descendants in G are no longer expected. A later call goes live when its lane already went
live, its turn was caused by a lane that went live (attribution `dispatched_by`: a manager's
speaker selection, the sender of a message or chat result that triggered the turn, with or
without content), or its request carries a value a live event produced (by fingerprint,
a part of a reply, or quoted inside a larger message: see model/graph.py); any other call must
still match the remaining records. Each live call keeps its reason (the child's lineage lists
them as `live_reasons`).

Egress: the endpoints the recording talked to through httpx are known; a replay that reaches
one of them by another route (a raw socket) bypassed the boundary, and the socket guard asks
the replayer to fail (see boundaries/egress.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from symtrace.model.dataflow import consumed, produced, quoted_texts, request_text
from symtrace.model.events import Event
from symtrace.session.core import LLM, BoundaryCall


class LiveFrontier:
    """What has gone live so far, and whether (and why) a new call follows it."""

    def __init__(self) -> None:
        self.started = False
        self._lanes: dict[str, str] = {}  # lane -> its first live event
        self._values: dict[str, str] = {}  # value fingerprint -> live event producing it
        self._quoted: list[tuple[str, str]] = []  # (longer live text, its event)
        self.reasons: dict[str, str] = {}  # live event id -> why it went live

    def went_live(self, call: BoundaryCall, event_id: str, reason: str) -> None:
        self._lanes.setdefault(call.attribution.lane, event_id)
        self.reasons[event_id] = reason

    def produced_by(self, event: Event) -> None:
        """A live event completed: later requests carrying its values depend on the live run."""
        self._values.update(dict.fromkeys(produced(event), event.id))
        self._quoted.extend((text, event.id) for text in quoted_texts(event))

    def follows(self, call: BoundaryCall) -> str | None:
        """Why *call* depends on the live part of the run (so it runs live too), or None."""
        if not self.started:
            return None
        lane = call.attribution.lane
        if lane in self._lanes:
            return f"lane {lane} went live at {self._lanes[lane]}"
        for cause in call.attribution.dispatched_by:
            if cause in self._lanes:
                return (f"its turn was caused by lane {cause} (a speaker choice, or a message "
                        f"or chat result it sent), live since {self._lanes[cause]}")
        for fp in consumed(call.event_type, call.request, call.meta):
            source = self._values.get(fp)
            if source is not None:
                return f"its request carries a value live event {source} produced"
        if call.kind == LLM and self._quoted:
            haystack = request_text(call.request)
            for text, source in self._quoted:
                if text in haystack:
                    return f"its request quotes live event {source}'s reply"
        return None


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
