"""The task suite: tasks as data (data/tasks.json) evaluated by a few native check kinds.

Each task carries its prompt, the answer schema the prompt states, a reference plan (the tool
calls a competent agent makes; the stub policy follows it, evaluators never read it) and the
expected answer / state change. `Task.to_json()` leaves everything evaluator-side out, so it
is safe to store as a bundle's task T.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from symtrace_suite import DATA_DIR
from symtrace_suite.evaluators import (
    Verdict,
    check,
    expected_state,
    parse_answer,
    state_diff,
)

__all__ = ["Task", "UnknownTaskError", "Verdict", "get_task", "initial_shop_state", "load_tasks"]


class UnknownTaskError(KeyError):
    """No task has this id."""

    def __str__(self) -> str:
        return f"unknown task id {self.args[0]!r}"


@dataclass(frozen=True)
class Task:
    id: str
    site: str
    category: str
    prompt: str
    mutates: bool
    answer_schema: Mapping[str, Any]
    plan: tuple[Mapping[str, Any], ...] = field(repr=False)
    answer_spec: Mapping[str, Any] = field(repr=False)
    expected: Mapping[str, Any] = field(repr=False)
    expected_changes: Mapping[str, Any] | None = field(default=None, repr=False)

    def evaluate(self, answer: Any, state: Mapping[str, Any] | None = None) -> Verdict:
        """Check the structured answer and, for a mutating task, the services' state."""
        reason = check(self.expected, parse_answer(answer))
        if reason:
            return Verdict(False, reason)
        if self.expected_changes is not None:
            shop = (state or {}).get("shop")
            if not isinstance(shop, Mapping):
                return Verdict(False, "state: no shop state given for a mutating task")
            reason = state_diff(expected_state(initial_shop_state(), self.expected_changes), shop)
            if reason:
                return Verdict(False, reason)
        return Verdict(
            True, "answer matches" + (" and state changed as required" if self.mutates else "")
        )

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools of the services this task needs (App. E.1's "start URLs or tools"): every
        tool of each service its reference plan touches, in TOOLS order. Names only: the
        services' URLs are per-worker ports, and a prompt that carried them would differ
        between workers."""
        from symtrace_suite.mas.tools import TOOLS

        services = {step["tool"].split("_", 1)[0] for step in self.plan}
        return tuple(fn.__name__ for fn in TOOLS if fn.__name__.split("_", 1)[0] in services)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "site": self.site,
            "category": self.category,
            "prompt": self.prompt,
            "mutates": self.mutates,
            "answer_schema": dict(self.answer_schema),
            "tools": list(self.tools),
        }


@functools.cache
def _tasks() -> tuple[Task, ...]:
    raw = orjson.loads((DATA_DIR / "tasks.json").read_bytes())["tasks"]
    tasks = tuple(
        Task(
            id=t["id"],
            site=t["site"],
            category=t["category"],
            prompt=t["prompt"],
            mutates=t["mutates"],
            answer_schema=t["answer_schema"],
            plan=tuple(t["plan"]),
            answer_spec=t["answer"],
            expected=t["expected"],
            expected_changes=t.get("expected_state"),
        )
        for t in raw
    )
    return tuple(sorted(tasks, key=lambda t: t.id))


def load_tasks() -> list[Task]:
    return list(_tasks())


def get_task(task_id: str) -> Task:
    for task in _tasks():
        if task.id == task_id:
            return task
    raise UnknownTaskError(task_id)


@functools.cache
def _initial_shop() -> bytes:
    from symtrace_suite.services.shop import Shop

    return orjson.dumps(Shop().state())


def initial_shop_state() -> dict[str, Any]:
    """The shop's mutable state as seeded (what `Services.state()["shop"]` is after reset)."""
    return orjson.loads(_initial_shop())
