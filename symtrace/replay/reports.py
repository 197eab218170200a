"""The divergence reports a replay raises: what was expected, what came, what is near.

The replayer decides *when* a replay diverges; this module says *what* the report holds (a
`DivergenceReport` value, with the hint that names the likely cause in the user's terms) and
which `ReplayDivergence` subclass carries it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from symtrace.bundle.reader import Bundle
from symtrace.errors import (
    EgressBlocked,
    GuidedAnchorFailed,
    MissingCall,
    OrderUnreachable,
    OutcomeMismatch,
    ReplayDivergence,
    RequestMismatch,
    UnexpectedCall,
)
from symtrace.model.canonical import JSONValue
from symtrace.model.divergence import (
    Candidate,
    DivergenceKind,
    DivergenceReport,
    json_differences,
)
from symtrace.model.events import Event, summarize
from symtrace.replay.matching import Matcher
from symtrace.session.core import BoundaryCall
from symtrace.session.scheduling import StarvedPool

ERRORS: dict[DivergenceKind, type[ReplayDivergence]] = {
    DivergenceKind.REQUEST_MISMATCH: RequestMismatch,
    DivergenceKind.UNEXPECTED_CALL: UnexpectedCall,
    DivergenceKind.MISSING_CALL: MissingCall,
    DivergenceKind.ORDER_UNREACHABLE: OrderUnreachable,
    DivergenceKind.EGRESS_BLOCKED: EgressBlocked,
    DivergenceKind.OUTCOME_MISMATCH: OutcomeMismatch,
    DivergenceKind.ANCHOR_FAILED: GuidedAnchorFailed,
}

NEAREST = 3  # unconsumed records listed around the divergence

HINT_MISSING = (
    "the program finished (or stopped calling) before making this recorded call; a branch "
    "or loop took a different turn upstream"
)
HINT_ABANDONED = (
    "the recording has no response for this call (its caller gave up on it); the program "
    "now uses it"
)
HINT_NO_RESULT = "the recording stopped before this tool call returned"


def egress_hint(attempt: dict[str, Any]) -> str:
    """Why a connection was refused during a strict replay, and where it was opened."""
    where = attempt["connect"]
    if attempt.get("alias_of"):
        where += f", an alias of the recorded endpoint {attempt['alias_of']}"
    elif attempt.get("recorded_endpoint"):
        where += ", a recorded endpoint"
    frames = "\n    ".join((attempt.get("stack") or ["(no Python frames)"])[-10:])
    return (
        f"the program connected to {where} during a strict replay, which serves every "
        "boundary call from the bundle; a call outside the HTTP seams (urllib, http.client, "
        "a raw socket) cannot be replayed. Declare it as a tool (@symtrace.tool), or let a "
        f"local service through with --allow-host HOST[:PORT]. Opened at:\n    {frames}"
    )


def order_stalled_hint(record_id: str, waiting: bool, stall_timeout: float,
                       starved: StarvedPool | None = None) -> str:
    if starved is not None:
        return (
            f"{record_id} was held for results that completed before it in the recording, "
            "on a worker of a ThreadPoolExecutor (max_workers="
            f"{starved.max_workers}) every worker of which is held, with {starved.queued} "
            "queued work item(s) that cannot start meanwhile: the calls it waits for are most "
            "likely queued behind it. A held sync call must return its value on its own "
            "thread, so replay cannot reorder them: the program submitted its pool work in "
            "another order than when recorded (an order that depends on timing). Submit in an "
            "order the results decide (await one before submitting the next), give the pool "
            "a worker per concurrent call, or record again"
        )
    cause = (
        f"{record_id} was held for results that completed before it in the recording; the "
        "program waits for this result before asking for those (a timing-dependent branch or "
        "a changed control flow)"
        if waiting
        else f"{record_id} was held: its result never came in the recording (the caller gave "
        "up on it, or the run ended first), and now the program waits for it"
    )
    return (
        f"no boundary call progressed for {stall_timeout:g}s while {cause}; raise "
        "--order-timeout (order_timeout=) if the program computes that long between calls"
    )


class Reporter:
    """Builds the reports of one replay of *bundle*.

    *served* counts the records served so far (a report's "matched before").
    """

    def __init__(
        self, bundle: Bundle, warnings: Sequence[str], matcher: Matcher, served: Callable[[], int]
    ) -> None:
        self.bundle = bundle
        self.warnings = tuple(warnings)
        self._matcher = matcher
        self._served = served

    def report(
        self,
        kind: DivergenceKind,
        expected: Event | None,
        call: BoundaryCall | None,
        boundary: str,
        *,
        hint: str,
        pending: Sequence[Event] | None = None,
        waiting_for: Sequence[Event] = (),
        actual: JSONValue = None,
    ) -> DivergenceReport:
        """The report; *pending* defaults to every record not consumed (superseded included)."""
        if pending is None:
            pending = self._matcher.unconsumed()
        anchor_pos = expected.position if expected else (pending[0].position if pending else 0)
        nearest = sorted(pending, key=lambda r: (abs(r.position - anchor_pos), r.position))
        actual = call.request if call else actual
        return DivergenceReport(
            kind=kind,
            bundle=str(self.bundle.path),
            bundle_digest=self.bundle.digest,
            position=expected.position if expected else None,
            event_id=expected.id if expected else None,
            lane=(expected.lane if expected else None) or (call.attribution.lane if call else None),
            agent=(expected.agent if expected else None)
            or (call.attribution.agent if call else None),
            boundary=boundary,
            matched_before=self._served(),
            expected=expected.request if expected else None,
            actual=actual,
            expected_hash=expected.request_hash if expected else None,
            actual_hash=call.request_hash if call else None,
            differences=json_differences(expected.request, actual)
            if expected is not None and call is not None
            else (),
            nearest=tuple(candidate(r) for r in nearest[:NEAREST]),
            causal_parents=expected.parent_ids if expected else (),
            rules=tuple(self.bundle.config.get("normalisation", ())),
            warnings=self.warnings,
            hint=hint,
            waiting_for=tuple(candidate(r) for r in waiting_for),
        )


def error_for(report: DivergenceReport) -> ReplayDivergence:
    """The ReplayDivergence subclass that carries *report*."""
    return ERRORS[report.kind](report)


def candidate(record: Event) -> Candidate:
    return Candidate(
        record.id,
        record.position,
        record.type.value,
        record.lane,
        record.agent,
        summarize(record.request, 60),
    )


def outcome_hint(bundle: Bundle, description: str, value: JSONValue) -> str:
    """The hint of SYM-R107 (every call matched, the run ended differently: *description*).

    When the replayed final result is not the recorded one but the reply of another recorded
    turn (concurrent top-level turns that each declare theirs ended in another order), that is
    what it says: symtrace's order, not the program's nondeterminism."""
    final = bundle.final_result()
    recorded = final.response.get("value") if final is not None and isinstance(
        final.response, dict) else None
    if value is not None and value != recorded and isinstance(value, str) and value.strip():
        turns = [e for e in bundle.events if e.is_llm and isinstance(e.response, dict)
                 and value.strip() in orjson.dumps(e.response).decode()]
        if turns:
            return (f"every boundary call matched, but the {description}: the replayed final "
                    f"result is the reply of {turns[-1].id} (lane {turns[-1].lane}), another "
                    "turn's than the recording's. Concurrent turns that each declare the run's "
                    "result ended in another order; declare the result once, after they all "
                    "ended (symtrace.final_result), and report this as a symtrace bug")
    return (f"every boundary call matched, but the {description}. The program depends on "
            "something symtrace does not pin (os.urandom, uuid, the clock, files, other "
            "processes); pin it, or if the line is volatile by design pass "
            "--volatile-stdout REGEX")
