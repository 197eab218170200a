"""The final_result node and the completion of a bundle (a recording's, a selective replay's
child bundle, an in-process session's).

The final result is the run's outcome as the world saw it: the program's exit code, the
value it declared with `symtrace.final_result(...)` (or an adapter declared for it), and the
tail of its standard output. Its parents are the trajectory's sink events (no successors),
plus a data edge to the event whose output the declared value repeats.
"""

from __future__ import annotations

from typing import Any

from symtrace.bundle.writer import BundleWriter
from symtrace.model.canonical import JSONValue, to_json_value
from symtrace.model.events import MAIN_LANE, Event, EventType, event_id
from symtrace.model.graph import final_parents

STDOUT_TAIL = 2000


def final_event(
    events: list[Event], *, exit_code: int | None, value: JSONValue, stdout: bytes | None,
) -> Event:
    """The final_result after *events*."""
    ordinal = sum(1 for e in events if e.type is EventType.FINAL_RESULT)
    tail = stdout[-STDOUT_TAIL:].decode("utf-8", "replace") if stdout else None
    return Event(
        id=event_id(EventType.FINAL_RESULT, ordinal),
        position=max((e.position for e in events), default=-1) + 1,
        type=EventType.FINAL_RESULT,
        lane=MAIN_LANE,
        parents=final_parents(events, value),
        response={"exit_code": exit_code, "value": to_json_value(value), "stdout_tail": tail},
    ).with_hashes()


def complete_bundle(
    writer: BundleWriter,
    *,
    exit_code: int | None,
    value: JSONValue = None,
    stdout: bytes | None = None,
    status: str,
    error: str | None = None,
    **manifest: Any,
) -> Event:
    """Append the final_result node and mark the bundle complete."""
    if stdout is not None:
        writer.write_stdout(stdout)
    event = final_event(writer.events, exit_code=exit_code, value=value, stdout=stdout)
    writer.write_event(event)
    writer.finalize(
        complete=True,
        outcome={"status": status, "exit_code": exit_code, "error": error},
        **manifest,
    )
    return event
