"""CrewAI state that is not a boundary but shows in the console: pinned while a session runs.

* Crew, Task and Agent ids. Each is a fresh `uuid4()` (a pydantic default factory), and
  `Crew(verbose=True)` prints the crew's and each task's id in its panels. While a session is
  active, a crew's kickoff gives the crew, its tasks and its agents ids derived from what is
  kicked off and where: the strict lane of the kickoff (a Flow step, `main`), the crew's
  `key` (its agents' and tasks' definitions), its inputs, and the ordinal of that kickoff
  among equal ones on that lane; a task's and an agent's id from the crew's and its place in
  the crew. The same program kicks off the same crews with the same inputs, so a replay
  prints the recorded ids, however the threads of concurrent crews interleave. (Not drawn
  from `random`: that would shift the program's own draws, in thread-timing order.)
* CrewAI's per-user state (`.crewai_user.json` under `$HOME/.local/share/<project>/`, or
  `$CREWAI_STORAGE_DIR`): whether this is the user's first run and their tracing consent.
  On a first run CrewAI hides its "Tracing Status" panel and the run itself writes the file,
  so the recording and its replays would print different panels. While a session is active,
  CrewAI reads a pinned state (first run done, tracing declined: the panel is printed, no
  trace is collected) and writes nothing there.
* The order of the console panels: CrewAI prints them from event handlers on a thread pool;
  while a session is active an event's handlers finish before `emit` returns.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import threading
import uuid
from collections import Counter
from concurrent import futures
from typing import Any

from symtrace.frameworks.contract import active, context

Original = Any

PINNED_USER_DATA: dict[str, Any] = {"first_execution_done": True, "trace_consent": False}

_lock = threading.Lock()
_kickoffs: Counter[str] = Counter()  # (lane, crew key, inputs) -> kickoffs so far
_session: list[Any] = [None]  # the session the counts belong to (a new session restarts them)


def _uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=hashlib.sha256(text.encode()).digest()[:16], version=4)


def pin_ids(crew: Any, inputs: Any) -> None:
    """Give *crew*, its tasks and its agents the ids derived as above."""
    lane = context.current().lane
    where = lane if context.is_strict_lane(lane) else "pooled"
    try:
        what = f"{crew.key}/{json.dumps(inputs, sort_keys=True, default=str)}"
    except (TypeError, ValueError):  # inputs json cannot order (mixed key types)
        what = f"{crew.key}/{inputs!r}"
    with _lock:
        session = active()
        if _session[0] is not session:
            _session[0] = session
            _kickoffs.clear()
        _kickoffs[f"{where}/{what}"] += 1
        ordinal = _kickoffs[f"{where}/{what}"]
    crew_id = _uuid(f"crewai/crew/{where}/{what}/{ordinal}")
    object.__setattr__(crew, "id", crew_id)  # a frozen field, set as pydantic stores it
    for kind, members in (("task", crew.tasks), ("agent", crew.agents)):
        for index, member in enumerate(members or ()):
            object.__setattr__(member, "id", _uuid(f"{crew_id}/{kind}/{index}"))


def seeded_ids(original: Original) -> Original:
    """Crew.kickoff / akickoff: pin the ids before anything is printed."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def async_kickoff(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active() is not None:
                pin_ids(self, kwargs.get("inputs", args[0] if args else None))
            return await original(self, *args, **kwargs)

        return async_kickoff

    @functools.wraps(original)
    def kickoff(self: Any, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            pin_ids(self, kwargs.get("inputs", args[0] if args else None))
        return original(self, *args, **kwargs)

    return kickoff


def pinned_user_data(original: Original) -> Original:
    """`_load_user_data`: the pinned state while a session is active."""

    @functools.wraps(original)
    def load() -> dict[str, Any]:
        return dict(PINNED_USER_DATA) if active() is not None else original()

    return load


def unsaved_user_data(original: Original) -> Original:
    """`_save_user_data`: nothing written while a session is active (the next run, recorded
    or not, finds the state the user had)."""

    @functools.wraps(original)
    def save(data: dict[str, Any]) -> None:
        if active() is None:
            original(data)

    return save


def delivered_events(original: Original) -> Original:
    """`CrewAIEventsBus.emit`: while a session is active, the event's handlers have finished
    when `emit` returns.

    CrewAI runs sync event handlers, the verbose console panels among them, on a pool of ten
    threads and returns at once (only stream chunks are delivered inline). So the panels of
    two events close together, and a kickoff's "Crew Completion" panel (emitted after the
    kickoff's last flush) against the program's next `print`, come out in thread-timing
    order: a replay, which serves LLM calls without waiting, printed the panel in the middle
    of the program's line (SYM-R107 under load). Waiting here gives one console order, the
    emitting thread's, in the recording and in every replay. Not waited for on the bus's own
    event-loop thread (an async handler emitting): its handlers run on that loop.
    """

    @functools.wraps(original)
    def emit(self: Any, source: Any, event: Any) -> Any:
        future = original(self, source, event)
        if (future is not None and active() is not None
                and threading.current_thread() is not getattr(self, "_loop_thread", None)):
            futures.wait([future])  # a handler's exception stays in the future, as unpinned
        return future

    return emit
