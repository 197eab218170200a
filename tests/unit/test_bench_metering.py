"""benchmarks/recording_overhead.py meters each recorder's hook on every httpx family: httpx,
and httpx2 (which openai 3 sends with). Until then only httpx was metered, so on an openai 3
install both recorders' hook figures held nothing but their session exits."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from ._support import FakeClock

httpx = pytest.importorskip("httpx")
httpx2 = pytest.importorskip("httpx2")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    """recording_overhead, with every attribute the meter replaces put back afterwards."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_recording_overhead",
                                                  REPO / "benchmarks" / "recording_overhead.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_recording_overhead", module)
    spec.loader.exec_module(module)
    for owner, attribute, _ in module.transport_methods():
        monkeypatch.setattr(owner, attribute, vars(owner)[attribute])  # undone at teardown
    tap = importlib.import_module("symtrace.boundaries.http.exchange").StreamTap
    monkeypatch.setattr(tap, "finish", vars(tap)["finish"])
    return module


def test_both_families_transports_are_metered(bench: Any) -> None:
    meter = bench.HookMeter(FakeClock())
    bench.meter_transport(meter)
    for family in (httpx, httpx2):
        assert bench.is_metered(vars(family.HTTPTransport)["handle_request"])
        assert bench.is_metered(vars(family.AsyncHTTPTransport)["handle_async_request"])


def test_a_recorders_hook_on_httpx2_is_charged_to_hook_and_its_transport_call_is_not(
        bench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()

    def real_transport(self: Any, request: Any) -> str:
        clock.now += 50
        return "response"

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", real_transport)
    meter = bench.HookMeter(clock)
    bench.meter_transport(meter)
    found = vars(httpx2.HTTPTransport)["handle_request"]  # the TRANSPORT wrapper

    @functools.wraps(found)  # as vcrpy wraps what it found (copying its __dict__)
    def recorders_hook(self: Any, request: Any) -> str:
        clock.now += 7
        response = found(self, request)
        clock.now += 3
        return response

    httpx2.HTTPTransport.handle_request = recorders_hook  # the recorder's session starts
    plain_httpx = vars(httpx.HTTPTransport)["handle_request"]
    bench.meter_hooks(meter)
    assert vars(httpx.HTTPTransport)["handle_request"] is plain_httpx  # nothing installed there
    meter.reset()
    assert httpx2.HTTPTransport.handle_request(None, "request") == "response"
    totals = meter.take()
    assert totals["hook"] == 10
    assert totals["transport"] == 50
