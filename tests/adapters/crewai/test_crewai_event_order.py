"""Issue 40: CrewAI prints its verbose panels from event handlers it runs on a thread pool and
does not wait for, so a panel could land inside the program's next line (SYM-R107 under
load). While a session runs, an event's handlers have finished when `emit` returns; outside
one CrewAI keeps its own timing."""

from __future__ import annotations

import threading

import symtrace


def test_an_events_handlers_have_finished_when_emit_returns_during_a_session(tmp_path):
    from crewai.events.base_events import BaseEvent
    from crewai.events.event_bus import crewai_event_bus

    class Ping(BaseEvent):
        type: str = "symtrace_test_ping"

    seen: list[str] = []
    released = threading.Event()

    def slow_handler(source, event):
        released.wait(5)  # slower than the emitting thread's next step
        seen.append(f"handler {event.task_name}")

    with crewai_event_bus.scoped_handlers():
        crewai_event_bus.on(Ping)(slow_handler)
        released.set()
        with symtrace.record(tmp_path / "b", adapters=["crewai"]):
            for name in ("a", "b"):
                crewai_event_bus.emit(None, Ping(task_name=name))
                seen.append(f"after {name}")
        assert seen == ["handler a", "after a", "handler b", "after b"]

        released.clear()  # unpinned: emit returns before the handler runs
        crewai_event_bus.emit(None, Ping(task_name="c"))
        seen.append("after c")
        released.set()
        assert crewai_event_bus.flush(timeout=10)
    assert seen[4:] == ["after c", "handler c"]
