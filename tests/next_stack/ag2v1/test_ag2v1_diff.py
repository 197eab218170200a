"""`symtrace diff` on a selective replay's child of one AG2 1.x Agent serving two concurrent
asks (issue 33): the first difference is the anchor, whichever customer asked first in the
child; the reordered concurrent calls are listed, and the CLI exits 1 naming the anchor."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import symtrace
from tests.diff_checks import assert_diff_names_the_anchor
from tests.next_stack.ag2v1.test_ag2v1_concurrent_turns import support_desk


@pytest.mark.timeout(240)
def test_diff_names_the_anchor_of_a_child_of_two_concurrent_asks(endpoint: Any,
                                                                  tmp_path: Path) -> None:
    endpoint(stochastic=True)
    with symtrace.record(tmp_path / "b", adapters=["ag2v1"]):
        asyncio.run(support_desk(first_waits=False))
    events = symtrace.load_bundle(tmp_path / "b").events
    anchor = next(e.id for e in events if e.is_llm and e.meta["turn"]["key"] == ">triage#1")
    child = tmp_path / "child"
    with symtrace.replay(tmp_path / "b", adapters=["ag2v1"], anchor=anchor,
                         guidance="Answer in one sentence.", out=child):
        asyncio.run(support_desk(first_waits=True))  # the other customer asks first
    assert_diff_names_the_anchor(tmp_path / "b", child, anchor)
    cli = subprocess.run([sys.executable, "-m", "symtrace", "diff", str(tmp_path / "b"),
                          str(child)], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 1, cli.stderr
    assert f"A: {anchor}" in cli.stdout
