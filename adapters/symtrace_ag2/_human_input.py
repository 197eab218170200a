"""What a human types is an observation: recorded, and served on replay.

With `human_input_mode="ALWAYS"` or `"TERMINATE"` AG2 asks a person through the agent's input
stream (`get_human_input` / `a_get_human_input` → `iostream.input(prompt)`), and GroupChat's
`manual` speaker selection reads the default stream itself. Only that read is the boundary
(tool `ag2.human_input`, arguments: the prompt): AG2 is handed a lens over the stream, so its
safeguard hooks and its record of human replies still run on replay, and nobody is asked
again. The prompt is not echoed on replay (the terminal's `input()` printed it while
recording). The input is attributed to the agent that asked, on its lane; a manual speaker
choice to the manager, reason speaker_selection.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from symtrace.frameworks.contract import acall_tool, call_tool, context
from symtrace_ag2._attribution import agent_name, lane_of

HUMAN_INPUT = "ag2.human_input"


class InputLens:
    """An AG2 input stream whose `input()` is a recorded boundary; the rest passes through."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def input(self, prompt: str = "", **kwargs: Any) -> Any:
        return call_tool(HUMAN_INPUT, {"prompt": prompt, **kwargs},
                         lambda: self._inner.input(prompt, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AsyncInputLens(InputLens):
    async def input(self, prompt: str = "", **kwargs: Any) -> Any:  # type: ignore[override]
        return await acall_tool(HUMAN_INPUT, {"prompt": prompt, **kwargs},
                                lambda: self._inner.input(prompt, **kwargs))


def _lens(iostream: Any) -> InputLens:
    from autogen.fast_depends.utils import is_coroutine_callable
    from autogen.io.base import IOStream

    stream = iostream if iostream is not None else IOStream.get_default()
    return AsyncInputLens(stream) if is_coroutine_callable(stream.input) else InputLens(stream)


def get_human_input(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, prompt: str, *args: Any, iostream: Any = None, **kwargs: Any) -> Any:
        with context.agent(agent_name(self), lane=lane_of(self)):
            return original(self, prompt, *args, iostream=_lens(iostream), **kwargs)

    return wrapper


def a_get_human_input(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def wrapper(self: Any, prompt: str, *args: Any, iostream: Any = None,
                      **kwargs: Any) -> Any:
        with context.agent(agent_name(self), lane=lane_of(self)):
            return await original(self, prompt, *args, iostream=_lens(iostream), **kwargs)

    return wrapper


def manual_select_speaker(original: Callable[..., Any]) -> Callable[..., Any]:
    """`GroupChat.manual_select_speaker` reads `IOStream.get_default()`: lend it the lens."""

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        from autogen.io.base import IOStream

        with IOStream.set_default(_lens(None)):  # type: ignore[arg-type]
            return original(self, *args, **kwargs)

    return wrapper
