"""CrewAI constructs that cannot be recorded faithfully, refused before anything runs.

Overlapping async tasks on one agent object: CrewAI 1.15 keeps one executor per agent and
refuses a second concurrent `invoke` ("Executor is already running"), which its error
handling then retries. Which attempt fails, and how often the task is retried, depends on
thread timing, not on any boundary value, so no bundle of such a run could replay it. The
crew is refused when it is kicked off, before its first task starts, with the tasks and the
fix named. Two agents with the same role are fine (each has its own executor and lane).
"""

from __future__ import annotations

from typing import Any

from symtrace.errors import UnsupportedConstruct


def check_crew(crew: Any) -> None:
    """Raise UnsupportedConstruct if two async tasks that overlap share an agent object."""
    from crewai.process import Process
    from crewai.tasks.conditional_task import ConditionalTask

    hierarchical = getattr(crew, "process", None) == Process.hierarchical
    in_flight: dict[int, Any] = {}  # id(executing agent) -> the async task running on it
    for task in getattr(crew, "tasks", None) or ():
        if isinstance(task, ConditionalTask) or not task.async_execution:
            in_flight.clear()  # CrewAI waits for every pending async task here
        if not task.async_execution:
            continue
        agent = crew.manager_agent if hierarchical else task.agent
        key = id(agent) if agent is not None else 0  # hierarchical: the manager, made later
        other = in_flight.get(key)
        if other is not None:
            who = "the hierarchical manager" if hierarchical else repr(task.agent.role)
            raise UnsupportedConstruct(
                f"tasks {_name(other)} and {_name(task)} are async_execution=True and run at "
                f"the same time on one agent object ({who}): CrewAI refuses a second "
                "concurrent run of an agent's executor and retries it, so the run depends on "
                "thread timing and cannot be replayed. Give each async task its own Agent "
                "(the same role is fine) or make one of them synchronous"
            )
        in_flight[key] = task


def _name(task: Any) -> str:
    return repr(task.name or task.description[:40])
