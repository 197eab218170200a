"""`context.current()`: the attribution of a boundary call, built once per distinct value."""

from __future__ import annotations

import asyncio
import threading

from symtrace.session import context
from symtrace.session.context import agent, current, dispatched_by, lane, reason


def test_the_attribution_follows_every_setting_and_is_shared_while_unchanged():
    base = current()
    assert (base.agent, base.lane, base.reason, base.dispatched_by) == (None, "main", None, ())
    assert current() is base  # built once, not per call
    with agent("writer", reason="draft"):
        inside = current()
        assert (inside.agent, inside.lane, inside.reason) == ("writer", "writer", "draft")
        with lane("desk"), reason("edit"), dispatched_by(["b", "a"]):
            nested = current()
            assert (nested.agent, nested.lane, nested.reason, nested.dispatched_by) == (
                "writer", "desk", "edit", ("a", "b"))
        assert current() is inside
    assert current() is base


def test_implicit_lanes_name_the_current_thread_and_task():
    seen: list[str] = []

    def work() -> None:
        seen.append(current().lane)
        threading.current_thread().name = "renamed"
        seen.append(current().lane)  # the lane is the thread's name now, never a stale one

    worker = threading.Thread(target=work, name="w1")
    worker.start()
    worker.join()

    async def task() -> str:
        return current().lane

    async def main() -> str:
        return await asyncio.create_task(task(), name="t7")

    assert seen == ["thread:w1", "thread:renamed"]
    assert asyncio.run(main()) == "task:t7"
    assert current().lane == "main"


def test_the_memo_of_attributions_is_bounded():
    for n in range(context._ATTRIBUTIONS_KEPT + 50):
        with lane(f"lane-{n}"):
            assert current().lane == f"lane-{n}"
    assert len(context._attributions) <= context._ATTRIBUTIONS_KEPT
