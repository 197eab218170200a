"""A tool failure's `detail`: what else a framework showed the model of it (AG2 1.x: the
formatted traceback) is recorded beside the exception and handed back on replay."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace.frameworks.contract import Codec, call_tool, failure_detail


class Closed(RuntimeError):
    pass


def _shut() -> str:
    raise Closed("the Porto station is closed")


SHOWN = Codec(describe_error=lambda exc: f"Traceback ...\n{type(exc).__name__}: {exc}")


def _failed_result(path: Path) -> dict:
    events = [e for e in symtrace.load_bundle(path).events if e.type.value == "tool_result"]
    assert len(events) == 1 and events[0].response["ok"] is False
    return events[0].response["error"]


def test_the_detail_is_recorded_and_handed_back_on_the_rebuilt_exception(tmp_path) -> None:
    with pytest.raises(Closed), symtrace.record(tmp_path / "b", adapters=[]):
        call_tool("weather", {"city": "Porto"}, _shut, codec=SHOWN)
    error = _failed_result(tmp_path / "b")
    assert error["detail"] == "Traceback ...\nClosed: the Porto station is closed"
    assert (error["type"], error["message"]) == ("Closed", "the Porto station is closed")

    ran = []
    with symtrace.replay(tmp_path / "b", adapters=[]), pytest.raises(Closed) as caught:
        call_tool("weather", {"city": "Porto"}, lambda: ran.append(1) or "", codec=SHOWN)
    assert ran == [], "the tool body does not run on replay"
    assert failure_detail(caught.value) == error["detail"]


def test_without_describe_error_there_is_no_detail(tmp_path) -> None:
    with pytest.raises(Closed), symtrace.record(tmp_path / "b", adapters=[]):
        call_tool("weather", {"city": "Porto"}, _shut)
    assert "detail" not in _failed_result(tmp_path / "b")
    with symtrace.replay(tmp_path / "b", adapters=[]), pytest.raises(Closed) as caught:
        call_tool("weather", {"city": "Porto"}, _shut)
    assert failure_detail(caught.value) is None
