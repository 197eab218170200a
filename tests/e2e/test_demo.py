"""The README's main job: `symtrace demo` records, replays and repairs the example MAS."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from symtrace.bundle import load_bundle
from symtrace.cli.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo_runs_end_to_end(tmp_path):
    out = io.StringIO()
    code = run_demo(tmp_path, console=Console(file=out, width=160))
    text = out.getvalue()
    assert code == 0, text
    assert "0 requests served" in text  # the strict replay made no call
    assert "identical output" in text
    child = load_bundle(tmp_path / "trip-run-repaired")
    assert child.lineage["live_events"]
    assert (tmp_path / "trip-run.svg").read_text().startswith("<svg")
