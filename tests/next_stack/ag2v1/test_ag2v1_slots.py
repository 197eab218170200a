"""The order in which one message's sub-task spawns ask for a bounded agent's slot
(adapters/symtrace_ag2v1/_slots.py): call order, and a call that spawns less than its
arguments named never holds the later calls back."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from symtrace_ag2v1._slots import SlotTurns, spawn_order


def _call(name: str, arguments: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, arguments=arguments)


def test_spawn_order_counts_each_task_of_each_spawning_call() -> None:
    calls = [_call("lookup", '{"city": "Faro"}'),
             _call("run_subtasks", '{"tasks": ["a", "b"], "parallel": true}'),
             _call("run_subtask", '{"task": "c"}'),
             _call("run_subtasks", "not json"),
             _call("run_subtasks", '{"tasks": "a"}')]
    assert spawn_order(calls) == [1, 1, 2]


@pytest.mark.timeout(10)
def test_later_calls_wait_for_the_earlier_calls_turns_or_their_end() -> None:
    async def scenario() -> list[str]:
        turns, asked = SlotTurns([0, 0, 1]), []

        async def spawn(call: int, label: str) -> None:
            await asyncio.wait_for(turns.wait_turn(call), 5)
            turns.took_turn(call)
            asked.append(label)

        late = asyncio.ensure_future(spawn(1, "call 1"))
        await asyncio.sleep(0.01)
        assert asked == []  # call 0 has not asked yet
        await spawn(0, "call 0, task 0")
        await asyncio.sleep(0.01)
        assert asked == ["call 0, task 0"]  # call 0's second task still to ask
        turns.call_ended(0)  # ...but call 0 ended without spawning it
        await late
        return asked

    assert asyncio.run(scenario()) == ["call 0, task 0", "call 1"]
