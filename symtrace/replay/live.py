"""Where a selective replay runs live: propagation after the anchor, and recorded egress.

Once the anchor's request (augmented with guidance) is sent live, the anchor and its causal
descendants in G are no longer expected. A later call goes live when its lane already went
live, or its request carries a value a live event produced (by fingerprint, or quoted inside a
larger message: see model/graph.py); any other call must still match the remaining records.

Egress: the endpoints the recording talked to through httpx are known; a replay that reaches
one of them by another route (a raw socket) bypassed the boundary, and the socket guard asks
the replayer to fail (see boundaries/egress.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from symtrace.model.events import Event
from symtrace.model.graph import consumed, produced, quoted_texts, request_text
from symtrace.session.core import LLM, BoundaryCall


class LiveFrontier:
    """What has gone live so far, and whether a new call follows it."""

    def __init__(self) -> None:
        self.started = False
        self._lanes: set[str] = set()
        self._values: set[str] = set()  # fingerprints of values live events produced
        self._quoted: list[str] = []  # longer live texts a later prompt may quote

    def went_live(self, call: BoundaryCall) -> None:
        self._lanes.add(call.attribution.lane)

    def produced_by(self, event: Event) -> None:
        """A live event completed: later requests carrying its values depend on the live run."""
        self._values.update(produced(event))
        self._quoted.extend(quoted_texts(event))

    def follows(self, call: BoundaryCall) -> bool:
        """True when *call* depends on the live part of the run (so it runs live too)."""
        if not self.started:
            return False
        if call.attribution.lane in self._lanes:
            return True
        fingerprints = consumed(call.event_type, call.request, call.meta)
        if any(fp in self._values for fp in fingerprints):
            return True
        if call.kind == LLM and self._quoted:
            haystack = request_text(call.request)
            return any(text in haystack for text in self._quoted)
        return False


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
