"""The suite's evaluator as a `symtrace attribute --outcome` plug-in.

    symtrace attribute out/study/suite-stub/bundles/CASE --outcome \
        symtrace_suite.attribution_outcome:passed -- python -m symtrace_suite.mas.ag2_groupchat ...

A rollout passes when the task's native check accepts its final answer. The task is the one
the bundle's T names (`id`). A mutating task is also checked against the services' state
after the run, which only a study worker holds (it restores the prefix's writes and reads the
state back): this plug-in refuses those tasks rather than score them on the answer alone.
"""

from __future__ import annotations

from pathlib import Path

from symtrace.bundle.reader import load_bundle
from symtrace_suite.tasks import load_tasks


class UnsupportedTask(ValueError):
    """The bundle's task cannot be scored from the bundle alone."""


def passed(child: Path) -> bool:
    bundle = load_bundle(child)
    task_id = bundle.task.get("id") if isinstance(bundle.task, dict) else None
    task = next((t for t in load_tasks() if t.id == task_id), None)
    if task is None:
        raise UnsupportedTask(f"{child}: its task {task_id!r} is not a task of the suite")
    if task.mutates:
        raise UnsupportedTask(f"{child}: task {task_id} changes the services' state; its "
                              "verdict needs that state (run it in the study instead)")
    final = bundle.final_result()
    answer = (final.response or {}).get("value") if final is not None else None
    return task.evaluate(answer).passed
