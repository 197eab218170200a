"""The Network plugin's `delegate` wait on replay (adapters/symtrace_ag2v1/_delegate.py).

`delegate` runs on replay (it is AG2's plumbing: it opens a channel to the consulted agent
and waits for its reply) and its wait is wall-clock: the model's `timeout` argument. Found by
the long run (`hub_delegate`, a model-chosen 3.07 s timeout, SYM-R102 in a selective replay
under load), confirmed here: before, a reply that came in time while recording but not on
replay (a slower consulted turn) made `delegate` answer "Error: delegate to 'reviewer' timed
out after 1.0s", a tool result the recording does not have, and the replay diverged at the
planner's next request; a recorded timeout the replay did not hit diverged the other way.
Now whether the reply came in time is recorded, and replayed.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from symtrace_ag2v1._delegate import TOOL_NAME

from symtrace import load_bundle
from tests.next_stack.ag2v1._support import Runner

DELEGATE_TIMEOUT = 1.0  # s: the model's `timeout` argument to `delegate`


def _with_timeout(scripts: dict[str, Any]) -> dict[str, Any]:
    script = copy.deepcopy(scripts["hub_delegate"])
    for rule in script["rules"]:
        for call in rule["reply"].get("tool_calls", ()):
            if call["name"] == "delegate":
                call["arguments"]["timeout"] = DELEGATE_TIMEOUT
    return script


def _reviewer_slowed_by(seconds: float) -> Callable[..., Any]:
    """`Agent` as the example builds it, the reviewer's turns taking *seconds* longer (a slow
    machine, a live suffix: what the replay's timing may be)."""
    from ag2 import Agent
    from ag2.middleware import BaseMiddleware

    class Slow(BaseMiddleware):
        async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
            await asyncio.sleep(seconds)
            return await call_next(event, context)

    def build(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "reviewer" and seconds:
            kwargs["middleware"] = [Slow]
        return Agent(name, *args, **kwargs)

    return build


def _record(runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
            monkeypatch: pytest.MonkeyPatch, bundle: Path, slowed: float) -> Any:
    stub = stub_llm_factory(script=_with_timeout(scripts))
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    recorded = runner.record(bundle, "hub_delegate", Agent=_reviewer_slowed_by(slowed))
    waits = [e for e in load_bundle(bundle).events
             if e.type.value == "tool_result" and e.meta.get("tool") == TOOL_NAME]
    assert len(waits) == 1
    return stub, recorded, waits[0].response["value"]


@pytest.mark.timeout(120)
def test_a_reply_that_came_in_time_is_waited_for_on_a_slower_replay(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stub, recorded, wait = _record(runner, scripts, stub_llm_factory, monkeypatch,
                                   tmp_path / "b", 0)
    assert wait == {"timed_out": False} and "timed out" not in recorded.stdout
    served = stub.served
    replayed = runner.replay(tmp_path / "b", "hub_delegate",
                             Agent=_reviewer_slowed_by(DELEGATE_TIMEOUT + 0.5))
    assert replayed.stdout == recorded.stdout and stub.served == served


@pytest.mark.timeout(120)
def test_a_recorded_timeout_is_a_timeout_on_a_faster_replay(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The reviewer takes 1.5 s while recording (the planner's `delegate` gives up after
    1 s) and 0.5 s on replay; the program ends (and closes the hub) before the reviewer's
    model call in both runs."""
    stub, recorded, wait = _record(runner, scripts, stub_llm_factory, monkeypatch,
                                   tmp_path / "b", DELEGATE_TIMEOUT + 0.5)
    assert wait == {"timed_out": True} and "timed out after 1.0s" in recorded.stdout
    served = stub.served
    replayed = runner.replay(tmp_path / "b", "hub_delegate",
                             Agent=_reviewer_slowed_by(DELEGATE_TIMEOUT / 2))
    assert replayed.stdout == recorded.stdout and stub.served == served
