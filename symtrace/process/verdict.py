"""What a `symtrace replay -- CMD` run amounts to, decided by the parent from how the program
ended and what it handed back: the replay report (`--report-json`, `ReplayOutcome.report_json`)
and its status.

A strict replay that matched every call must also end as the recording did (exit code, final
result, stdout), or it diverged (SYM-R107); a replay that handed nothing back is not verified
(SYM-R104); a replay of an unfinished recording is never a verified success (SYM-R108).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.errors import OutcomeMismatch
from symtrace.model.events import EventType
from symtrace.process.protocol import Diverged, HandBack, Replayed, hand_back_json
from symtrace.replay.outcome_check import compare, normalised_lines
from symtrace.replay.outcome_check import to_json as outcome_json


class ReplayStatus(StrEnum):
    """`status` of the replay report."""

    REPLAYED = "replayed"  # verified: every call matched, and it ended as recorded
    DIVERGED = "diverged"  # with the first divergence's report
    INTERRUPTED = "interrupted"  # symtrace got SIGINT/SIGTERM: nothing verified
    RECORDING_INCOMPLETE = "recording_incomplete"  # SYM-R108: the recording never finished
    INCOMPLETE = "incomplete"  # SYM-R104: the program handed nothing back


UNVERIFIED = (
    "[SYM-R104] the replayed program ended without handing back a replay report (exit code "
    "{code}): it was killed, called os._exit, or was not instrumented; the replay is not "
    "verified"
)


def replay_report(bundle: Bundle, hand_back: HandBack | None, code: int,
                  received: str | None) -> dict[str, Any]:
    """The replay report: the child's hand-back as it stands, or the parent's verdict where
    the run cannot be verified."""
    if received is not None:
        return {
            "status": ReplayStatus.INTERRUPTED.value,
            "signal": received,
            "rendered": f"interrupted ({received}): the replay was stopped before it "
            "finished; nothing is verified",
        }
    if not bundle.complete:
        return recording_incomplete(bundle, hand_back)
    if isinstance(hand_back, Replayed | Diverged):
        return hand_back_json(hand_back)
    return {"status": ReplayStatus.INCOMPLETE.value, "rendered": UNVERIFIED.format(code=code)}


def verify_outcome(bundle: Bundle, replayed: Replayed, final_value: Any, code: int,
                   stdout: bytes, volatile: Sequence[re.Pattern[str]]) -> Diverged | None:
    """A strict replay that ended differently from the recording diverged (SYM-R107): the
    divergence, or None when exit code, *final_value* and *stdout* match (the last two as
    recorded: with the same redaction)."""
    final = bundle.final_result()
    recorded = final.response if final is not None and isinstance(final.response, dict) else {}
    difference = compare(
        recorded_exit=recorded.get("exit_code"),
        recorded_value=recorded.get("value"),
        recorded_stdout=bundle.stdout() if recorded.get("exit_code") is not None else None,
        exit_code=code,
        value=final_value,
        stdout=stdout,
        volatile=volatile,
    )
    if difference is None:
        return None
    from symtrace.model.divergence import DivergenceKind, DivergenceReport  # only if it differs

    report = DivergenceReport(
        kind=DivergenceKind.OUTCOME_MISMATCH,
        bundle=str(bundle.path),
        bundle_digest=bundle.digest,
        position=final.position if final else None,
        event_id=final.id if final else None,
        lane=final.lane if final else None,
        agent=None,
        boundary="end",
        matched_before=replayed.served,
        actual=outcome_json(difference),
        rules=tuple(bundle.config.get("normalisation", ())),
        hint=outcome_hint(bundle, difference.describe(), stdout, volatile, final_value),
    )
    return Diverged(
        has_final_value=replayed.has_final_value,
        final_value=replayed.final_value,
        served=replayed.served,
        live=replayed.live,
        allowed_connections=replayed.allowed_connections,
        kind=OutcomeMismatch.__name__,
        report=report,
    )


TOOL_BODY_HINT = (
    "every boundary call matched, but the {difference}: the replay printed fewer lines, and "
    "{tools} tool call(s) were served without re-running their bodies. Replay writes back "
    "what a tool body wrote to sys.stdout/sys.stderr while recording, but not what it wrote "
    "around them (a logging handler's stream, a thread of its own, os.write, a C "
    "extension): print from the tool body, or if the line is volatile by design pass "
    "--volatile-stdout REGEX"
)


def outcome_hint(bundle: Bundle, difference: str, stdout: bytes,
                 volatile: Sequence[re.Pattern[str]], final_value: Any) -> str:
    """Why a replay that matched every call still ended differently. Lines only missing from
    the replay, in a run whose tool bodies were not re-run, came from a tool body (not from
    entropy, which changes a line rather than dropping it); else another turn's reply as the
    final result, else something the program does not pin (replay/reports.py)."""
    tools = sum(1 for e in bundle.boundary_events() if e.type is EventType.TOOL_CALL)
    recorded = bundle.stdout()
    if tools and recorded is not None:
        expected = Counter(normalised_lines(recorded, volatile))
        actual = Counter(normalised_lines(stdout, volatile))
        if expected - actual and not actual - expected:
            return TOOL_BODY_HINT.format(difference=difference, tools=tools)
    # here, not at the top: the replay reports (and the session core they import) are read
    # only for an outcome that differs
    from symtrace.replay.reports import outcome_hint

    return outcome_hint(bundle, difference, final_value)


def recording_incomplete(bundle: Bundle, hand_back: HandBack | None) -> dict[str, Any]:
    """The result of replaying an unfinished recording: never a success, and how far the
    replay matched what was recorded."""
    recorded = len(bundle.boundary_events())
    outcome = bundle.manifest.get("outcome") or {}
    why = outcome.get("status") or "unsealed"
    if outcome.get("signal"):
        why = f"{why} by {outcome['signal']}"
    if isinstance(hand_back, Replayed):
        matched: int | None = recorded
        then = "then the program ended; the recorded run had not"
    elif isinstance(hand_back, Diverged):
        matched = hand_back.report.matched_before
        then = f"then: {hand_back.rendered.splitlines()[0]}"
    else:
        matched = None
        then = "then the program ended without a replay report"
    told = "an unknown number" if matched is None else str(matched)
    return {
        "status": ReplayStatus.RECORDING_INCOMPLETE.value,
        "code": "SYM-R108",
        "recording": why,
        "recorded_events": recorded,
        "matched_events": matched,
        "rendered": f"[SYM-R108] recording incomplete: the recorded run {why} after "
        f"{recorded} boundary events; replay matched {told} of them, {then}. A replay of an "
        "unfinished recording is never a verified success.",
    }
