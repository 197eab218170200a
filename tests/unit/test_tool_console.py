"""Issue 40: what a tool body writes to the console is part of the record.

Replay does not run tool bodies; the lines they printed while recording are stored with the
call (`console` in its outcome) and written back, in order, when replay serves it. Each
concurrent tool body gets its own writes, also when it runs on an executor thread (as
AgentChat and AG2 run sync tool functions).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from pathlib import Path
from typing import Any

import symtrace
from symtrace.model.events import EventType

RAN: list[str] = []


@symtrace.tool
def check(text: str) -> str:
    RAN.append(text)
    print("Checking for harmful content...")
    print(f"warn: {text}", file=sys.stderr)
    print("done", end="")
    print(" checking")
    return "ok"


def _console(path: Path) -> dict[str, Any]:
    return {e.meta["tool"]: e.response.get("console")
            for e in symtrace.load_bundle(path).events if e.type is EventType.TOOL_RESULT}


def test_a_tool_bodys_output_is_written_back_on_replay_in_order(tmp_path, capsys):
    RAN.clear()
    with symtrace.record(tmp_path / "b"):
        check("x")
        print("program line")
    recorded = capsys.readouterr()
    with symtrace.replay(tmp_path / "b"):
        check("x")
        print("program line")
    replayed = capsys.readouterr()
    assert RAN == ["x"]  # the body ran once, while recording
    assert replayed.out == recorded.out == (
        "Checking for harmful content...\ndone checking\nprogram line\n")
    assert replayed.err == recorded.err == "warn: x\n"
    assert _console(tmp_path / "b")["check"] == [
        ["stdout", "Checking for harmful content...\n"], ["stderr", "warn: x\n"],
        ["stdout", "done checking\n"]]


def test_a_silent_tool_records_no_console(tmp_path):
    @symtrace.tool
    def quiet() -> int:
        return 3

    with symtrace.record(tmp_path / "b"):
        quiet()
    assert _console(tmp_path / "b") == {"quiet": None}
    assert sys.stdout.__class__.__name__ != "_Tap"  # nothing left installed


def test_concurrent_tool_bodies_each_keep_their_own_lines(tmp_path):
    def blocking(city: str) -> str:
        print(f"{city}: thread line")  # on an executor thread, like AgentChat's sync tools
        return city

    async def body(city: str, pause: float) -> str:
        print(f"{city}: first")
        await asyncio.sleep(pause)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(blocking, city))
        print(f"{city}: last")
        return city

    async def main() -> None:
        await asyncio.gather(
            symtrace.acall_tool("lisbon", {}, lambda: body("Lisbon", 0.05)),
            symtrace.acall_tool("porto", {}, lambda: body("Porto", 0.0)),
        )

    with symtrace.record(tmp_path / "b"):
        asyncio.run(main())
    console = _console(tmp_path / "b")
    for city in ("Lisbon", "Porto"):
        assert console[city.lower()] == [
            ["stdout", f"{city}: first\n{city}: thread line\n{city}: last\n"]]


def test_a_nested_tools_output_is_also_the_outer_tools(tmp_path, capsys):
    @symtrace.tool
    def inner() -> str:
        print("inner says")
        return "i"

    @symtrace.tool
    def outer() -> str:
        print("outer says")
        return inner()

    with symtrace.record(tmp_path / "b"):
        outer()
    recorded = capsys.readouterr().out
    with symtrace.replay(tmp_path / "b"):
        outer()  # served: neither body runs, the outer's lines include the inner's
    assert capsys.readouterr().out == recorded == "outer says\ninner says\n"
