"""The study suite's evaluator as an `attribute --outcome` plug-in: the bundle's task is
scored by its native check; a task whose verdict needs the services' state is refused."""

from __future__ import annotations

import pytest
from symtrace_suite.attribution_outcome import UnsupportedTask, passed
from symtrace_suite.tasks import load_tasks

import symtrace


def _bundle(tmp_path, task, answer):
    path = tmp_path / "run"
    with symtrace.record(path, task=task) as rec:
        rec.final_result(answer)
    return path


def test_the_native_check_decides(tmp_path):
    task = next(t for t in load_tasks() if not t.mutates)
    assert passed(_bundle(tmp_path, task.to_json(), "I could not find it.")) is False


def test_mutating_and_unknown_tasks_are_refused(tmp_path):
    mutating = next(t for t in load_tasks() if t.mutates)
    with pytest.raises(UnsupportedTask, match="services' state"):
        passed(_bundle(tmp_path / "a", mutating.to_json(), "done"))
    with pytest.raises(UnsupportedTask, match="not a task of the suite"):
        passed(_bundle(tmp_path / "b", {"id": "nope"}, "done"))
