"""Retries of a selective replay's anchor: the guidance goes with every attempt.

SDKs (openai's and anthropic's `max_retries`) and frameworks send a request again after a
failed attempt: an HTTP 429 or 5xx, a timeout, a reset connection, a stream cut off. At the
anchor the first attempt carries q ⊕ Δ; the attempt the SDK sends next is the program's q
again. Sent as it is, the repair would silently run unguided: a node repair turned into a
resample, more often the busier the provider. So a retry of the anchor is sent with the same
Δ, placed the same way.

A call is a retry of the anchor ("the same request") when it is an LLM call

* whose canonical request equals the anchor's: method, path, query and JSON body after
  canonicalisation and redaction. Headers are never part of a canonical request, so what an
  SDK varies per attempt (`Idempotency-Key`, `x-stainless-retry-count`, a timeout header,
  `anthropic-*` retry headers) may differ; a body that differs in anything is a new request;
* on the anchor's lane, with no other boundary call of that lane since the last attempt (the
  same turn, before the program went on with it);
* sent after the last attempt failed: an HTTP error status (400 and up), a transport error (a
  timeout, a refused or reset connection), a stream cut off before its provider's last
  event, or no response at all yet (the caller gave up on it: a framework's own timeout).

Each retry is its own live event of the child bundle, marked `meta.retry_of` (the first
attempt's id) and `meta.attempt` (2, 3, …); a strict replay of the child re-applies Δ to
every one of them (replay/matching.py). If the last attempt failed when the run ends, no
guided request reached the model: the replay ends with GuidedAnchorFailed (SYM-R109). (An
attempt still waiting for its response when the run ends is not, alone, such a failure: the
program ended or gave up first, and the run's own outcome says so.)
"""

from __future__ import annotations

from dataclasses import dataclass

from symtrace.model.attempts import failure_of, wire_format_of
from symtrace.model.canonical import JSONValue
from symtrace.session.core import LLM, BoundaryCall

NO_RESPONSE = "no response (the caller gave up on it)"


@dataclass(slots=True)
class Attempt:
    """One attempt of the anchor: its live event, and why it failed (None: it succeeded)."""

    event_id: str
    failure: str | None = NO_RESPONSE


class AnchorAttempts:
    """The attempts of a selective replay's anchor, and whether a new call retries it."""

    def __init__(self) -> None:
        self._anchor: BoundaryCall | None = None
        self.attempts: list[Attempt] = []
        self._turn_open = False  # the anchor's turn has not gone on: a retry may still come

    def started(self, call: BoundaryCall, event_id: str) -> None:
        """The anchor's first attempt went live as *event_id*."""
        self._anchor = call
        self.attempts = [Attempt(event_id)]
        self._turn_open = True

    @property
    def first(self) -> str | None:
        return self.attempts[0].event_id if self.attempts else None

    def is_retry(self, call: BoundaryCall) -> bool:
        """Whether *call* retries the anchor (see the module doc); a call of the anchor's
        lane that does not closes the anchor's turn."""
        anchor = self._anchor
        if (anchor is None or not self._turn_open
                or call.attribution.lane != anchor.attribution.lane):
            return False
        if (call.kind == LLM and call.request_hash == anchor.request_hash
                and self.attempts[-1].failure is not None):
            return True
        self._turn_open = False
        return False

    def retried(self, event_id: str) -> None:
        self.attempts.append(Attempt(event_id))

    def finished(self, event_id: str, call: BoundaryCall, response: JSONValue) -> None:
        """An attempt's result reached the program: keep whether it failed."""
        for attempt in self.attempts:
            if attempt.event_id == event_id:
                attempt.failure = failure_of(response, wire_format_of(call.meta))
                return

    @property
    def failed(self) -> bool:
        """No guided attempt succeeded and the provider failed at least one. An attempt still
        waiting for its response when the run ends, alone, is not the provider's failure
        (the program ended or gave up first: the run's own outcome says so)."""
        return (bool(self.attempts) and self.attempts[-1].failure is not None
                and any(a.failure not in (None, NO_RESPONSE) for a in self.attempts))

    def failures(self) -> list[str]:
        return [a.failure for a in self.attempts if a.failure is not None]

    def to_json(self) -> list[dict[str, JSONValue]]:
        """Each attempt's event id and failure (None: the one that succeeded), in order."""
        return [{"event_id": a.event_id, "failure": a.failure} for a in self.attempts]
