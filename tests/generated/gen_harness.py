"""Drives the check with Hypothesis: draws programs per topology, shrinks a failing one.

Sizes come from the environment so CI and the long run share one code path:

* ``SYMTRACE_GEN_PROGRAMS``: programs per framework (CI default: CI_PROGRAMS_PER_TOPOLOGY per
  topology); the long run
  (``make generated``) sets 200 and they are spread evenly over the framework's topologies.
* ``SYMTRACE_GEN_REPLAYS``: strict replays per program (default 1; the long run: 3).
* ``SYMTRACE_GEN_RANDOM=1``: fresh Hypothesis draws each run (the long run); otherwise the
  draws are derandomized so a CI failure names the same program every time. The stub is never
  seeded either way: the answers a program gets differ on every run.
* ``SYMTRACE_GEN_REPORT=FILE``: append one JSON line per checked program (the figures).
* ``SYMTRACE_GEN_KEEP=DIR``: keep the bundle of a failing program there.
* ``SYMTRACE_GEN_SHRINK=0``: report the first failing program as drawn, unshrunk.
* ``SYMTRACE_GEN_BUDGET=SECONDS``: a time budget per framework (the long run on a small
  machine). Each topology gets an even share of what is left when it starts; once its share
  is spent it stops drawing (the remaining draws return at once, unchecked) and the report
  says how many programs it checked and that the budget stopped it. A program already
  running finishes; shrinking a failure is bounded by Hypothesis (5 minutes).

A failure is shrunk to a minimal program (fewer agents, tools, turns; no streaming) and
reported by Hypothesis as ``Falsifying example: program=Program(...)``, with the kept bundle
as the exact reproducer of what the server answered.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest
from gen_check import Check, Finding
from gen_spec import TOPOLOGIES, Program, programs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

# CI: the simplest program of each topology (Hypothesis tries it first) plus, for AgentChat and
# classic AG2, one drawn one; a CrewAI kickoff costs seconds. Sized to a few minutes of CI.
CI_PROGRAMS_PER_TOPOLOGY = {"autogen_agentchat": 2, "ag2": 2, "crewai": 1, "plain": 2}
# read at import: the suite's root conftest clears SYMTRACE_* before every test runs
ENV = {name: os.environ.get(name, "") for name in (
    "SYMTRACE_GEN_PROGRAMS", "SYMTRACE_GEN_REPLAYS", "SYMTRACE_GEN_RANDOM",
    "SYMTRACE_GEN_REPORT", "SYMTRACE_GEN_KEEP", "SYMTRACE_GEN_SHRINK", "SYMTRACE_GEN_BUDGET")}
for _name in ("SYMTRACE_GEN_REPORT", "SYMTRACE_GEN_KEEP"):  # tests chdir into their tmp dirs
    if ENV[_name]:
        ENV[_name] = os.path.abspath(ENV[_name])
KEPT = re.compile(r"^bundle kept at: (.+)$", re.MULTILINE)


# Topologies whose check fails today, with the finding (docs/generated-programs.md "Open
# findings"): run and reported as xfail until fixed, so a fix shows up as XPASS.
KNOWN_FAILING: dict[tuple[str, str], str] = {}


def topology_params(framework: str) -> list[Any]:
    """The framework's topologies as test parameters, the known-failing ones marked xfail."""
    return [pytest.param(t, marks=pytest.mark.xfail(reason=KNOWN_FAILING[(framework, t)],
                                                    strict=False))
            if (framework, t) in KNOWN_FAILING else t
            for t in sorted(TOPOLOGIES[framework])]


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:  # pragma: no cover - CI installs every framework
        pytest.skip(f"{module} is not installed", allow_module_level=True)


def examples_per_topology(framework: str) -> int:
    raw = ENV["SYMTRACE_GEN_PROGRAMS"]
    if not raw:
        return CI_PROGRAMS_PER_TOPOLOGY.get(framework, 1)
    return max(1, math.ceil(int(raw) / len(TOPOLOGIES[framework])))


def _settings(framework: str) -> settings:
    return settings(
        max_examples=examples_per_topology(framework),
        derandomize=ENV["SYMTRACE_GEN_RANDOM"] != "1",
        database=None,  # nothing written into the work tree; the kept bundle is the record
        deadline=None,  # real frameworks, real HTTP: durations vary with the machine's load
        suppress_health_check=list(HealthCheck),
        print_blob=True,
        report_multiple_bugs=False,
        # SYMTRACE_GEN_SHRINK=0: report the first failing program as drawn (while debugging)
        phases=[p for p in Phase if ENV["SYMTRACE_GEN_SHRINK"] != "0" or p is not Phase.shrink],
    )


def _write(line: dict[str, Any]) -> None:
    path = ENV["SYMTRACE_GEN_REPORT"]
    if not path:
        return
    with open(path, "ab") as out:
        out.write(orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n")


def report(finding: Finding, program: Program) -> None:
    """One checked program's figures (kind "program")."""
    _write({"kind": "program", **asdict(finding), "anchors": dict(finding.anchors),
            "program": asdict(program)})


def report_failure(error: AssertionError, program: Program, shrinking: bool) -> None:
    """A program that broke a property (kind "failure"): the first one drawn, then each
    smaller one Hypothesis tries; the last row of a topology is the reproducer it reports."""
    message = str(error)
    kept = KEPT.search(message)
    _write({"kind": "failure", "label": program.label, "program": asdict(program),
            "what": message.splitlines()[0] if message else type(error).__name__,
            "kept": kept.group(1) if kept else None, "shrinking": shrinking})


class Budget:
    """SYMTRACE_GEN_BUDGET seconds per framework, shared out over its topologies as they
    start: a topology gets an even share of what is left (one that finishes early leaves
    more to the next)."""

    started: ClassVar[dict[str, float]] = {}  # framework -> when its first topology started
    begun: ClassVar[dict[str, set[str]]] = {}  # framework -> topologies started

    def __init__(self, framework: str, topology: str) -> None:
        raw = ENV["SYMTRACE_GEN_BUDGET"]
        self.deadline: float | None = None
        if not raw:
            return
        now = time.monotonic()
        start = self.started.setdefault(framework, now)
        begun = self.begun.setdefault(framework, set())
        begun.add(topology)
        remaining = len(TOPOLOGIES[framework]) - len(begun) + 1
        self.deadline = now + max(0.0, start + float(raw) - now) / remaining

    def spent(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def check_topology(framework: str, topology: str, run: Callable[[Program], list[str]],
                   adapter: str, stub: Any) -> None:
    keep = ENV["SYMTRACE_GEN_KEEP"]
    replays = int(ENV["SYMTRACE_GEN_REPLAYS"] or 1)
    budget = Budget(framework, topology)
    tally = {"checked": 0, "unchecked": 0, "failed": False}
    began = time.monotonic()

    @_settings(framework)
    @given(program=programs(framework, (topology,)), pick=st.integers(0, 5))
    def prop(program: Program, pick: int) -> None:
        if not tally["failed"] and budget.spent():
            tally["unchecked"] += 1  # past the budget: drawn, not run
            return
        with tempfile.TemporaryDirectory(prefix="symtrace-gen-") as work:
            check = Check(run, adapter, stub, Path(work), keep=Path(keep) if keep else None,
                          strict_replays=replays)
            try:
                finding = check(program, pick)
            except AssertionError as error:
                report_failure(error, program, shrinking=bool(tally["failed"]))
                tally["failed"] = True
                raise
        if not tally["failed"]:  # after a failure, passing runs are shrink attempts
            tally["checked"] += 1
            report(finding, program)

    try:
        prop()
    finally:
        _write({"kind": "topology", "framework": framework, "topology": topology,
                "checked": tally["checked"], "unchecked": tally["unchecked"],
                "failed": tally["failed"], "seconds": round(time.monotonic() - began, 1),
                "budget_stopped": tally["unchecked"] > 0})
