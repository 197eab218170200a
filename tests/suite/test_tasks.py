"""The task suite: ≥30 tasks load; every evaluator accepts its answer and rejects wrong ones."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from symtrace_suite.evaluators import EvaluatorSpecError, check, parse_answer
from symtrace_suite.policy import SuitePolicy
from symtrace_suite.policy.dryrun import run_task
from symtrace_suite.services import Services
from symtrace_suite.tasks import Task, UnknownTaskError, get_task, initial_shop_state, load_tasks

from symtrace.diagnosis import parse_task

TASKS = load_tasks()
MUTATING = [t for t in TASKS if t.mutates]


def example(spec: dict[str, Any]) -> Any:
    """An answer that satisfies *spec* exactly."""
    kind = spec["kind"]
    if kind == "object":
        return {k: example(v) for k, v in spec["fields"].items()}
    if kind == "object_list":
        return [example(item) for item in spec["items"]]
    if kind == "id_set":
        return list(reversed(spec["value"]))  # order does not matter
    return spec["value"]


def wrong(spec: dict[str, Any]) -> Any:
    """An answer that differs from *spec* in one place, just beyond its tolerance."""
    kind = spec["kind"]
    if kind == "object":
        key = sorted(spec["fields"])[0]
        return {**example(spec), key: wrong(spec["fields"][key])}
    if kind == "object_list":
        return [wrong(spec["items"][0]), *(example(i) for i in spec["items"][1:])]
    if kind == "number":
        return spec["value"] + spec.get("tol", 0) + 1
    if kind == "string":
        return spec["value"] + " Annex"
    if kind == "id_set":
        return spec["value"][1:] or ["O-0000"]
    h, m, s = (int(x) for x in spec["value"].split(":"))
    return f"{h + 1}:{m:02d}:{s:02d}"


def state_after(task: Task) -> dict[str, Any]:
    shop = initial_shop_state()
    assert task.expected_changes is not None
    for order_id, fields in task.expected_changes.get("orders", {}).items():
        shop["orders"][order_id].update(fields)
    shop["refunds"] = list(task.expected_changes.get("refunds", []))
    return {"shop": shop, "wiki": {}, "route": {}}


def test_the_suite_has_at_least_30_tasks_over_all_sites_and_categories() -> None:
    assert len(TASKS) >= 30
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert {t.site for t in TASKS} == {"shop", "wiki", "route", "multi"}
    assert {t.category for t in TASKS} == {"lookup", "aggregate", "mutate", "multi-hop"}
    assert len(MUTATING) >= 5 and all(t.category == "mutate" for t in MUTATING)
    assert [t.id for t in TASKS] == sorted(t.id for t in TASKS)


def test_prompts_are_unique_and_none_contains_another() -> None:
    # The policy finds the task by its prompt in the conversation.
    for a in TASKS:
        assert not [b.id for b in TASKS if b is not a and a.prompt in b.prompt]


def test_task_json_carries_no_evaluator_information() -> None:
    for task in TASKS:
        data = task.to_json()
        assert set(data) == {"id", "site", "category", "prompt", "mutates", "answer_schema",
                             "tools"}
        spec = parse_task(data)
        assert spec.text == task.prompt
        assert spec.output.kind in ("json", "object_list"), task.id  # the rules see the format


def test_unknown_task_id() -> None:
    with pytest.raises(UnknownTaskError, match="unknown task id 'shop-999'"):
        get_task("shop-999")


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_evaluator_accepts_the_answer_and_rejects_a_wrong_one(task: Task) -> None:
    state = state_after(task) if task.mutates else {}
    good = example(task.expected)
    assert task.evaluate(good, state).passed
    assert task.evaluate("FINAL ANSWER: " + json.dumps(good), state).passed  # raw text works
    verdict = task.evaluate(wrong(task.expected), state)
    assert not verdict.passed and verdict.reason.startswith("answer")
    assert not task.evaluate("I could not find it.", state).passed
    assert not task.evaluate(None, state).passed
    if isinstance(good, dict):
        assert not task.evaluate({**good, "note": "extra"}, state).passed
        assert not task.evaluate(dict(list(good.items())[1:]), state).passed


@pytest.mark.parametrize("task", MUTATING, ids=lambda t: t.id)
def test_mutating_task_checks_the_state_exactly(task: Task) -> None:
    good = example(task.expected)
    assert task.evaluate(good, state_after(task)).passed
    untouched = {"shop": initial_shop_state()}
    assert "state:" in task.evaluate(good, untouched).reason
    assert "no shop state" in task.evaluate(good, {}).reason
    extra = copy.deepcopy(state_after(task))
    extra["shop"]["orders"]["O-1001"]["status"] = "canceled"  # a change nobody asked for
    assert "O-1001" in task.evaluate(good, extra).reason
    extra_refund = copy.deepcopy(state_after(task))
    extra_refund["shop"]["refunds"].append({"order_id": "O-1002", "amount": 1.0})
    assert "refunds" in task.evaluate(good, extra_refund).reason


def test_reference_plans_solve_every_task_against_the_services(svc: Services) -> None:
    """Data, plans and expected values agree: a mistake-free policy passes all tasks."""
    policy = SuitePolicy(0, skill=1.0)
    for task in TASKS:
        svc.reset()
        answer, _ = run_task(policy, task, svc.urls)
        verdict = task.evaluate(answer, svc.state())
        assert verdict.passed, (task.id, verdict.reason)
        if task.mutates:  # the change really went through the service
            assert svc.requests()["shop"][-1]["method"] == "POST"


def test_check_kinds() -> None:
    assert check({"kind": "number", "value": 1.0, "tol": 0.01}, "1.005") is None
    assert check({"kind": "number", "value": 1.0, "tol": 0.01}, True) is not None
    assert check({"kind": "number", "value": 1.0}, float("nan")) is not None
    assert check({"kind": "string", "value": "Brannock Junction"}, " brannock  junction") is None
    assert check({"kind": "id_set", "value": ["a", "b"]}, ["b", "a"]) is None
    assert check({"kind": "id_set", "value": ["a", "b"]}, ["a", "b", "b"]) is not None
    assert check({"kind": "duration", "value": "1:00:00", "tol_s": 60}, "1:00:59") is None
    assert check({"kind": "duration", "value": "1:00:00", "tol_s": 60}, "1:01:01") is not None
    assert check({"kind": "duration", "value": "1:00:00"}, "60 minutes") is not None
    rows = {
        "kind": "object_list",
        "ordered": False,
        "items": [{"kind": "number", "value": 1}, {"kind": "number", "value": 2}],
    }
    assert check(rows, [2, 1]) is None
    assert check({**rows, "ordered": True}, [2, 1]) is not None
    with pytest.raises(EvaluatorSpecError):
        check({"kind": "regex", "value": "x"}, "x")


def test_parse_answer() -> None:
    assert parse_answer('FINAL ANSWER: {"a": 1}\n\nTERMINATE') == {"a": 1}
    assert parse_answer('{"a": 1}') == {"a": 1}
    assert parse_answer("the total is 3.") == "the total is 3."
    assert parse_answer([1]) == [1]
