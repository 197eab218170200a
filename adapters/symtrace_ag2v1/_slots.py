"""Sub-task slots granted in call order (`TaskConfig(max_concurrency=N)`).

A bounded `TaskConfig` makes `Agent._spawn_subtask` take a slot of an `asyncio.Semaphore`
before it builds the sub-task agent. The tool calls of one model message run concurrently
(`ToolExecutor.execute_tools`: one task per call), and the path from a call to the semaphore
passes through AG2's stream and dependency resolution, which may hop to a worker thread: so
which call's sub-task gets the slot first is a race. Recording keeps whichever won; a replay
in which the other one wins holds the winner's first model result for the loser's (recorded
earlier), and the loser waits for the slot: the replay stalls and stops with SYM-R105.

So the adapter takes the race out, recording and replay alike: within one message, the
sub-tasks of a bounded agent ask for the slot in the order of the calls that spawn them (call
#0's tasks, in task order, then call #1's, ...), each only once the one before it holds the
slot or waits for it (the semaphore is first-come first-served). That is a schedule AG2
allows anyway; it is the same on every run. A call that ends without spawning everything its
arguments named (refused by a middleware, arguments AG2 rejects, a task that failed early)
gives up its remaining turns when it ends, so the calls after it never wait for it.

Limit: the order is kept within one message's calls. Two turns of the same agent running at
once (two concurrent `ask`s sharing its slots) still race for them; a replay that loses that
race stops with SYM-R105 (docs/adapters/ag2v1.md).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import orjson

SPAWNING_TOOLS = {"run_subtask": None, "run_subtasks": "tasks"}  # tool -> list argument


class SlotTurns:
    """The order in which one message's spawns may ask for a sub-task slot."""

    def __init__(self, order: Sequence[int]) -> None:
        self._order = list(order)  # call position of each expected spawn, in turn order
        self._changed = asyncio.Event()

    def expects(self, call: int | None) -> bool:
        return call is not None and call in self._order

    async def wait_turn(self, call: int) -> None:
        """Until every spawn of an earlier call has asked for its slot (or given up)."""
        while self._order and self._order[0] != call and call in self._order:
            self._changed.clear()
            await self._changed.wait()

    def took_turn(self, call: int) -> None:
        if call in self._order:
            self._order.remove(call)  # its first remaining entry: the head (wait_turn)
        self._wake()

    def call_ended(self, call: int) -> None:
        """The call's tool run ended: the spawns it did not make are not waited for."""
        self._order = [c for c in self._order if c != call]
        self._wake()

    def _wake(self) -> None:
        self._changed.set()


_turns: ContextVar[SlotTurns | None] = ContextVar("symtrace_ag2v1_slot_turns", default=None)


def spawn_order(calls: Sequence[Any]) -> list[int]:
    """Call position of every sub-task one message's calls will spawn, in call order."""
    order: list[int] = []
    for position, call in enumerate(calls):
        name = getattr(call, "name", None)
        if name not in SPAWNING_TOOLS:
            continue
        argument = SPAWNING_TOOLS[name]
        if argument is None:
            order.append(position)
            continue
        tasks = _arguments(call).get(argument)
        order.extend([position] * (len(tasks) if isinstance(tasks, list) else 0))
    return order


def _arguments(call: Any) -> dict[str, Any]:
    raw = getattr(call, "arguments", None)
    try:
        parsed = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


@contextmanager
def batch(calls: Sequence[Any]) -> Iterator[None]:
    """One message's tool calls run in the block (ToolExecutor.execute_tools)."""
    order = spawn_order(calls)
    token = _turns.set(SlotTurns(order) if len(set(order)) > 1 else None)
    try:
        yield
    finally:
        _turns.reset(token)


def call_ended(call: int | None) -> None:
    turns = _turns.get()
    if turns is not None and call is not None:
        turns.call_ended(call)


def spawn_subtask(original: Callable[..., Any], call_of: Callable[[], int | None]
                  ) -> Callable[..., Any]:
    """`Agent._spawn_subtask(task, ctx)`: a bounded agent's spawn waits for its turn to ask
    for the slot (*call_of()*: the position of the call running it)."""

    @functools.wraps(original)
    async def _spawn_subtask(self: Any, task: str, ctx: Any) -> Any:
        turns, call = _turns.get(), call_of()
        config = getattr(self, "_task_config", None)
        if (turns is None or call is None or getattr(config, "max_concurrency", None) is None
                or not turns.expects(call)):
            return await original(self, task, ctx)
        try:
            await turns.wait_turn(call)
        finally:  # taken, or cancelled while waiting: either way not waited for again
            turns.took_turn(call)
        # no suspension from here to the semaphore: the next spawn asks after this one
        return await original(self, task, ctx)

    return _spawn_subtask
