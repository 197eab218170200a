"""The Network plugin's `delegate` wait: its outcome is recorded, its wall clock is not replayed.

`delegate` (AG2's plumbing, run on replay) opens a consulting channel, sends the prompt and
waits for the consulted agent's reply with `AgentClient.wait_for_channel_event(...,
timeout=...)`: the model's `timeout` argument, 300 s by default. Whether the reply came in
time is wall-clock timing: on replay the consulted agent's turn takes as long as the replay
makes it (served calls are fast; a live suffix, a slow machine or a held result are not). So a
reply that came in time while recording could time out on replay (or the other way round), and
`delegate` then answers the model with a tool result the recording does not have (found by
the long run: a model-chosen 3.07 s timeout, SYM-R102 in a selective replay under load).

The wait is a tool boundary (`ag2.network:wait_for_reply`, on the lane of the `delegate`
call, `<agent lane>/tool#<i>`) whose recorded outcome is only *whether it timed out*, not the
reply: the reply comes from the consulted agent's turn, which runs on replay and may have gone
live.

* live (recording, or a replay where the asking agent's lane went live): the real wait, with
  the model's timeout; the outcome recorded.
* served, timed out: `TimeoutError` at once, as recorded; the consulted turn goes on.
* served, answered: the wait for the reply without the model's wall-clock limit: the reply
  comes when the replayed turn sends it. Bounded: it stops with the replay's divergence as
  soon as the replay has one (a consulted turn that diverged raises in the hub's task, not
  here), and after `max(timeout, MIN_REPLAY_WAIT)` seconds without a reply it times out, which
  the next request then shows as a divergence (fail closed).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from symtrace.frameworks.contract import acall_tool, active, context
from symtrace_ag2v1._attribution import spawn_call

TOOL_NAME = "ag2.network:wait_for_reply"
MIN_REPLAY_WAIT = 300.0  # s: AG2's own default timeout
POLL = 0.1  # s: how often a served wait looks for the replay's divergence


def wait_for_channel_event(original: Callable[..., Any]) -> Callable[..., Any]:
    """`AgentClient.wait_for_channel_event(*, channel_id, predicate, timeout=300.0)`."""

    @functools.wraps(original)
    async def wait(self: Any, *, channel_id: str, predicate: Any, timeout: float = 300.0
                   ) -> Any:
        if active() is None:
            return await original(self, channel_id=channel_id, predicate=predicate,
                                  timeout=timeout)
        replies: list[Any] = []

        async def real_wait() -> dict[str, bool]:
            try:
                replies.append(await original(self, channel_id=channel_id,
                                              predicate=predicate, timeout=timeout))
            except TimeoutError:
                return {"timed_out": True}
            return {"timed_out": False}

        # on the lane of the `delegate` call (`<agent lane>/tool#<i>`, as any tool call of the
        # message): two consults in one message wait concurrently
        call, lane = spawn_call(), context.current().lane
        with context.lane(f"{lane}/tool#{call}" if call is not None else f"{lane}/tool"):
            outcome = await acall_tool(TOOL_NAME, {"timeout": timeout}, real_wait)
        if replies:  # ran live: the reply itself
            return replies[0]
        if isinstance(outcome, dict) and outcome.get("timed_out"):
            raise TimeoutError()
        return await _replayed_wait(original, self, channel_id, predicate,
                                    max(float(timeout), MIN_REPLAY_WAIT))

    return wait


async def _replayed_wait(original: Callable[..., Any], client: Any, channel_id: str,
                         predicate: Any, limit: float) -> Any:
    """The reply the recording says came, waited for in slices: between them, the replay's
    divergence (if any) is raised instead of waiting on for a turn that ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        session = active()
        divergence = getattr(session, "divergence", None)  # a replay's first divergence
        if divergence is not None:
            raise divergence.with_traceback(None)
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError()
        try:
            return await original(client, channel_id=channel_id, predicate=predicate,
                                  timeout=min(POLL, remaining))
        except TimeoutError:
            continue
