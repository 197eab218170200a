"""The differential replay check: the properties every generated program must have.

For one `Program` and a running, unseeded stochastic stub:

1. **Record, then N strict replays identical, 0 server requests.** The recorded run's outcome
   (its transcript, or the error it ended with) is what every strict replay must reproduce,
   with no request reaching the stub and no tool body running.
2. **A changed prompt diverges where that prompt is first sent.** The program with one
   agent's prompt changed must fail strict replay with `request_mismatch` at a recorded request
   that carries that prompt, the first such request on its lane.
3. **Selective replay at every agent request.** Anchored at each top-level LLM request, with
   guidance: either it goes live there (the first request the stub sees carries the guidance)
   and writes a child bundle that replays strictly (same outcome, 0 requests), or it is
   refused with a typed `SymtraceError` before any live call (no request, no child).

A program that symtrace refuses at record time (`UnsupportedConstruct`) passes: the refusal
is the documented behaviour for constructs no bundle could replay. Each check returns a
`Finding` summary used for the long run's figures; a broken property raises AssertionError
with the program, the bundle and what differed (the bundle is kept for a reproducer).
"""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from gen_spec import TOOL_RUNS, Program

import symtrace
from symtrace.bundle import load_bundle
from symtrace.errors import ReplayDivergence, SymtraceError, UnsupportedConstruct
from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import TURN, Event, turns_independent

Runner = Callable[[Program], list[str]]
THREAD_JOIN_TIMEOUT = 60.0
# idle pool workers never end: ThreadPoolExecutor defaults, asyncio's, CrewAI's event-bus pool
# (spawned lazily, one more whenever events burst while the others are busy: joining each for
# THREAD_JOIN_TIMEOUT pushed a CrewAI async_tasks check past the 300 s test timeout under load)
POOL_WORKERS = ("ThreadPoolExecutor", "asyncio_", "CrewAISyncHandler")
SERVER_THREAD = "process_request_thread"  # the stub's per-connection handlers (keep-alive)
Outcome = tuple[str, Any]


@dataclass
class Finding:
    """What one program's check saw (aggregated into the long run's figures)."""

    label: str
    refused_at_record: str | None = None
    llm_requests: int = 0
    strict_replays: int = 0
    perturbed_agent: str | None = None
    anchors: Counter[str] = field(default_factory=Counter)  # live / refused:<type>


def outcome(run: Runner, program: Program) -> Outcome:
    """The run's transcript, or the error it ended with (a failing run is a result too).

    Threads the run started (CrewAI's async tasks, AG2's chats) are waited for: one still
    running after a failed run would make its calls into the next session.
    """
    before = set(threading.enumerate())
    try:
        return ("ok", run(program))
    except Exception as exc:  # the program's own failure; a divergence is re-raised at exit
        return ("error", f"{type(exc).__name__}: {exc}")
    finally:
        for thread in set(threading.enumerate()) - before:
            if thread.name.startswith(POOL_WORKERS) or SERVER_THREAD in thread.name:
                continue  # idle pool workers and open keep-alive connections never end
            thread.join(THREAD_JOIN_TIMEOUT)


def _text(value: Any) -> str:
    return orjson.dumps(value).decode()


def agent_requests(events: list[Event]) -> list[Event]:
    """Top-level LLM requests (not made inside a recorded tool body), in recorded order."""
    return sorted((e for e in events if e.is_llm and not e.meta.get("within")),
                  key=lambda e: e.position)


def first_carriers(carriers: list[Event]) -> dict[str, str]:
    """Where a changed prompt may first diverge: per lane, the first recorded request that
    carries it, and the first one of each turn independent of that one's turn (the matcher's
    rule, events.turns_independent: concurrent turns of one agent replay whichever asks
    first, decided where their ancestries part; turns that ran one after the other keep their
    order)."""
    first: dict[str, str] = {}  # turn key (the lane, without turns) -> first carrier
    lane_first: dict[str, dict[str, Any]] = {}  # lane -> the turn of its first carrier
    for record in carriers:
        turn = record.meta.get(TURN) or {}
        opened = lane_first.setdefault(record.lane, turn)
        key = turn.get("key", record.lane)
        if key in first:
            continue
        if turn is opened or (turn and opened and turns_independent(opened, turn)):
            first[key] = record.id
    return first


class Check:
    """Runs the three properties for programs of one framework against one stub."""

    def __init__(self, run: Runner, adapter: str, stub: Any, workdir: Path,
                 keep: Path | None = None, strict_replays: int = 2,
                 max_anchors: int | None = None) -> None:
        self.run = run
        self.adapter = adapter
        self.stub = stub
        self.workdir = workdir
        self.keep = keep
        self.strict_replays = strict_replays
        self.max_anchors = max_anchors

    def __call__(self, program: Program, pick: int = 0) -> Finding:
        finding = Finding(program.label)
        bundle = self.workdir / "recorded"
        try:
            recorded = self._record(program, bundle)
        except UnsupportedConstruct as exc:
            finding.refused_at_record = str(exc)
            return finding
        events = load_bundle(bundle).events
        finding.llm_requests = len(agent_requests(events))
        # a program that never reached its model is a broken builder, not a passing check
        self._expect(finding.llm_requests > 0, program, bundle,
                     "the generated program made no LLM request", recorded=recorded)
        self._strict(program, bundle, recorded, finding)
        self._perturbed(program, bundle, events, pick, finding)
        self._every_anchor(program, bundle, events, finding)
        return finding

    # -- property 1 -------------------------------------------------------------------------
    def _record(self, program: Program, bundle: Path) -> Outcome:
        adapters = [self.adapter] if self.adapter else []  # "": no framework (plain programs)
        with symtrace.record(bundle, task=program.label, adapters=adapters):
            return outcome(self.run, program)

    def _strict(self, program: Program, bundle: Path, recorded: Outcome,
                finding: Finding) -> None:
        served = self.stub.served
        for attempt in range(self.strict_replays):
            TOOL_RUNS.clear()
            got = self._replay(program, bundle, f"strict replay {attempt + 1}")
            self._expect(got == recorded, program, bundle,
                         f"strict replay {attempt + 1} differs from the recording",
                         recorded=recorded, replayed=got)
            self._expect(self.stub.served == served, program, bundle,
                         f"strict replay {attempt + 1} sent {self.stub.served - served} "
                         "request(s) to the server")
            self._expect(not TOOL_RUNS, program, bundle,
                         f"strict replay ran tool bodies: {TOOL_RUNS}")
            finding.strict_replays += 1

    def _replay(self, program: Program, bundle: Path, what: str, **kwargs: Any) -> Outcome:
        try:
            with symtrace.replay(bundle, **kwargs):
                return outcome(self.run, program)
        except ReplayDivergence as exc:
            self._fail(program, bundle, f"{what} diverged: {exc.report.code} "
                       f"{exc.report.kind} at {exc.report.event_id} (lane {exc.report.lane}): "
                       f"{exc.report.hint}; differences {exc.report.differences[:3]}")
        raise AssertionError("unreachable")  # _fail raised

    # -- property 2 -------------------------------------------------------------------------
    def _perturbed(self, program: Program, bundle: Path, events: list[Event], pick: int,
                   finding: Finding) -> None:
        requests = agent_requests(events)
        carriers = {
            agent.name: [r for r in requests if program.prompt(agent) in _text(r.request)]
            for agent in program.agents
        }
        candidates = [name for name, found in carriers.items() if found]
        if not candidates:
            return
        name = candidates[pick % len(candidates)]
        finding.perturbed_agent = name
        first_on_lane = first_carriers(carriers[name])
        served = self.stub.served
        try:
            with symtrace.replay(bundle):
                outcome(self.run, program.with_perturbed(name))
        except ReplayDivergence as exc:
            report = exc.report
            self._expect(report.kind is DivergenceKind.REQUEST_MISMATCH, program, bundle,
                         f"changed prompt of {name}: {report.kind}, not request_mismatch "
                         f"(at {report.event_id}, lane {report.lane})")
            self._expect(report.event_id in first_on_lane.values(), program, bundle,
                         f"changed prompt of {name} diverged at {report.event_id} (lane "
                         f"{report.lane}), not at the first request carrying it "
                         f"{sorted(first_on_lane.values())}")
        else:
            self._fail(program, bundle, f"changed prompt of {name} replayed without divergence")
        self._expect(self.stub.served == served, program, bundle,
                     "a diverging strict replay reached the server")

    # -- property 3 -------------------------------------------------------------------------
    def _every_anchor(self, program: Program, bundle: Path, events: list[Event],
                      finding: Finding) -> None:
        anchors = agent_requests(events)
        if self.max_anchors is not None:
            anchors = anchors[: self.max_anchors]
        for index, anchor in enumerate(anchors):
            finding.anchors[self._selective(program, bundle, anchor, index)] += 1

    def _selective(self, program: Program, bundle: Path, anchor: Event, index: int) -> str:
        child = self.workdir / f"child-{index}"
        guidance = f"GUIDANCE-{index}: confirm each figure for {program.task_topic} first."
        before = self.stub.served
        where = f"selective replay anchored at {anchor.id} (lane {anchor.lane})"
        try:
            with symtrace.replay(bundle, anchor=anchor.id, guidance=guidance, out=child):
                got = outcome(self.run, program)
        except ReplayDivergence as exc:
            report = exc.report
            self._fail(program, bundle, f"{where} diverged: {report.code} {report.kind} at "
                       f"{report.event_id} (lane {report.lane}): {report.hint}; "
                       f"differences {report.differences[:3]}")
        except SymtraceError as exc:  # a typed refusal: before any live call, nothing written
            self._expect(self.stub.served == before, program, bundle,
                         f"{where} was refused ({type(exc).__name__}) after a live call")
            self._expect(not child.exists(), program, bundle,
                         f"{where} was refused but wrote {child}")
            return f"refused:{type(exc).__name__}"
        live = self.stub.requests[before:]
        self._expect(bool(live), program, bundle, f"{where} made no live request")
        self._expect(guidance in _text(live[0].get("messages")), program, bundle,
                     f"{where}: the first live request does not carry the guidance")
        try:
            lineage = load_bundle(child).lineage or {}
        except SymtraceError as exc:
            self._fail(program, child, f"{where} wrote a child that does not load: {exc}")
        reasons = lineage.get("live_reasons", {})
        unexplained = [e for e in lineage.get("live_events", [])  # results come with their call
                       if e not in reasons and not e.startswith("tool_result")]
        self._expect(not unexplained, program, child,
                     f"{where}: live events without a reason in the lineage: {unexplained}")
        self._expect(reasons.get(lineage["intervention"]["event_id"], "").startswith("the anchor"),
                     program, child, f"{where}: the lineage does not name the anchor as live")
        served = self.stub.served
        TOOL_RUNS.clear()
        again = self._replay(program, child, f"strict replay of the child of {where}")
        self._expect(again == got, program, child,
                     f"the child of {where} replays differently", recorded=got, replayed=again)
        self._expect(self.stub.served == served, program, child,
                     f"the child of {where} sent requests when replayed")
        self._expect(not TOOL_RUNS, program, child, f"child replay ran tools: {TOOL_RUNS}")
        shutil.rmtree(child)
        return "live"

    # -- failing loudly, with a reproducer -----------------------------------------------------
    def _expect(self, ok: bool, program: Program, bundle: Path, what: str, **details: Any
                ) -> None:
        if not ok:
            self._fail(program, bundle, what, **details)

    def _fail(self, program: Program, bundle: Path, what: str, **details: Any) -> None:
        kept = bundle
        if self.keep is not None:
            self.keep.mkdir(parents=True, exist_ok=True)
            kept = self.keep / f"{program.label}-{bundle.name}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(bundle, kept)
        lines = [what, f"program: {program!r}", f"bundle kept at: {kept}"]
        lines += [f"{k}: {v!r}"[:2000] for k, v in details.items()]
        raise AssertionError("\n".join(lines))
