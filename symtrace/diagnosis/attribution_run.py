"""Running an attribution plan: one selective replay per rollout, kept, resumable, scored.

Every rollout is `symtrace.process.runner.replay_bundle` (the program restarted, the prefix
served strictly, the anchor sent live with Δ or unchanged, the suffix live) writing its
child bundle to `OUT/rollouts/<node>-<arm>-<i>/`; with `hold_tools` the suffix's tool calls
identical to recorded ones get the recorded outcome. Each finished rollout is appended as
one JSON line to `OUT/rollouts.jsonl` before the next result is taken, so an interrupted
attribution resumes where it stopped (a rollout whose line is missing runs again; a torn
last line is dropped). `OUT/plan.json` pins the plan: resuming with another plan is refused.

The outcome of a rollout is decided by an `Outcome`: the program's exit code, a regular
expression over the final result, or a plug-in `module:callable` given the child bundle's
path — the task's evaluator, for a benchmark (docs/diagnosis.md shows the study suite's).

Rollouts run on a backend (attribution_backends.py): `jobs` threads each waiting on its own
replayed child process, the same with the study's warm fork servers, or Ray actors.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.diagnosis.attribution import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET,
    DEFAULT_K,
    Attribution,
    AttributionPlan,
    Rollout,
    RolloutResult,
    Signature,
    estimate,
    plan_attribution,
)
from symtrace.diagnosis.attribution_backends import check_backend, run_rollouts
from symtrace.diagnosis.errors import DiagnosisConfigError
from symtrace.diagnosis.pipeline import diagnose
from symtrace.diagnosis.templates import Templates
from symtrace.model.events import EventType

PLAN_FILE = "plan.json"
RESULTS_FILE = "rollouts.jsonl"
ROLLOUTS_DIR = "rollouts"


class Outcome(Protocol):
    """Did the rollout succeed? Given its child bundle and the program's exit code."""

    def __call__(self, child: Bundle, exit_code: int | None) -> bool: ...


@dataclass(frozen=True)
class ExitCodeOutcome:
    """Success is the program exiting with *code* (0 by default)."""

    code: int = 0

    def __call__(self, child: Bundle, exit_code: int | None) -> bool:
        return exit_code == self.code


@dataclass(frozen=True)
class FinalMatchOutcome:
    """Success is the final result (its value, else the program's stdout tail) matching."""

    pattern: re.Pattern[str]

    def __call__(self, child: Bundle, exit_code: int | None) -> bool:
        final = child.final_result()
        response = (final.response or {}) if final is not None else {}
        value = response.get("value")
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        if value is None:
            text = str(response.get("stdout_tail") or "")
        return self.pattern.search(text) is not None


@dataclass(frozen=True)
class PluginOutcome:
    """`module:callable`, called with the child bundle's path; truthy is success."""

    spec: str
    function: Callable[[Path], Any]

    def __call__(self, child: Bundle, exit_code: int | None) -> bool:
        return bool(self.function(Path(child.path)))


def outcome_from(success_exit: int | None, success_match: str | None,
                 outcome_plugin: str | None) -> Outcome:
    """The one outcome the user chose (exit code 0 when none was)."""
    given = [x is not None for x in (success_exit, success_match, outcome_plugin)]
    if sum(given) > 1:
        raise DiagnosisConfigError(
            "give one outcome: --success-exit, --success-match or --outcome")
    if success_match is not None:
        try:
            return FinalMatchOutcome(re.compile(success_match))
        except re.error as exc:
            raise DiagnosisConfigError(f"--success-match {success_match!r}: {exc}") from None
    if outcome_plugin is not None:
        module, _, name = outcome_plugin.partition(":")
        try:
            function = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise DiagnosisConfigError(
                f"--outcome {outcome_plugin!r}: cannot load module:callable ({exc})") from None
        if not callable(function):
            raise DiagnosisConfigError(f"--outcome {outcome_plugin!r} is not callable")
        return PluginOutcome(outcome_plugin, function)
    return ExitCodeOutcome(0 if success_exit is None else success_exit)


@dataclass(frozen=True)
class RunOptions:
    """How rollouts run: where, the program, its environment, parallelism."""

    out: Path
    outcome: Outcome
    command: Sequence[str] | None = None
    set_env: Mapping[str, str] | None = None
    placement: str = "user"
    jobs: int = 1
    alpha: float = DEFAULT_ALPHA
    cwd: str | None = None
    trust: bool = False  # run the bundle's command without asking (docs/security.md)
    backend: str = "threads"  # where rollouts run: attribution_backends.BACKENDS

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise DiagnosisConfigError(f"--jobs must be at least 1, got {self.jobs}")
        check_backend(self.backend)


Progress = Callable[[RolloutResult, int, int], None]  # (result, done, total)


def run_attribution(bundle_path: str | os.PathLike[str], plan: AttributionPlan,
                    options: RunOptions, *, progress: Progress | None = None) -> Attribution:
    """Run every rollout of *plan* not already in `OUT/rollouts.jsonl`; estimate from all."""
    out = options.out
    done = _resume(out, plan)
    todo = [r for r in plan.rollouts if r.key not in done]
    total, lock = len(plan.rollouts), threading.Lock()
    results_file = out / RESULTS_FILE

    def record(result: RolloutResult) -> None:
        with lock:
            done[result.key] = result
            with results_file.open("ab") as fh:
                fh.write(orjson.dumps(result.to_json(), option=orjson.OPT_SORT_KEYS) + b"\n")
            if progress is not None:
                progress(result, len(done), total)

    if todo and not options.trust:
        # the first rollout alone, here, as recorded: consent to the bundle's command is
        # asked (or refused, exit 97) once, before any other rollout starts; a "y" approves
        # the rest, on any backend
        record(run_rollout(bundle_path, todo.pop(0), plan.hold_tools, options))
    for result in run_rollouts(options.backend, str(bundle_path), todo, plan.hold_tools,
                               options, run_rollout):
        record(result)
    attribution = estimate(plan, done.values(), alpha=options.alpha)
    (out / "attribution.json").write_bytes(orjson.dumps(
        attribution.to_json(), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    return attribution


def run_rollout(bundle_path: str | os.PathLike[str], rollout: Rollout, hold_tools: bool,
                options: RunOptions) -> RolloutResult:
    """One selective replay at the rollout's node; its verdict and what its suffix did."""
    from symtrace.process.runner import replay_bundle  # the harness, as diagnosis/repair.py

    child = options.out / ROLLOUTS_DIR / rollout.key
    shutil.rmtree(child, ignore_errors=True)
    outcome = replay_bundle(
        bundle_path, anchor=rollout.node, guidance=rollout.guidance or None,
        placement=options.placement, out=child, command=options.command, quiet=True,
        force=True, set_env=dict(options.set_env or {}), cwd=options.cwd,
        hold_tools=hold_tools, trust=options.trust,
    )
    if outcome.diverged or outcome.child_bundle is None:
        report = outcome.report.render() if outcome.report is not None else "no child bundle"
        return RolloutResult(rollout.node, rollout.arm, rollout.index, None, None,
                             error=f"the prefix replay diverged: {report}"[:2000])
    bundle = load_bundle(child)
    lineage = bundle.lineage or {}
    live = set(lineage.get("live_events") or [])
    held = list(lineage.get("held_tool_events") or [])
    live_tools = sum(1 for e in bundle.events if e.type is EventType.TOOL_CALL and e.id in live)
    try:
        passed = options.outcome(bundle, outcome.program_exit_code)
    except Exception as exc:  # noqa: BLE001 -- a plug-in's failure is no verdict, not a crash
        return RolloutResult(rollout.node, rollout.arm, rollout.index, None, str(child),
                             error=f"the outcome failed: {type(exc).__name__}: {exc}"[:2000])
    return RolloutResult(rollout.node, rollout.arm, rollout.index, bool(passed), str(child),
                         held_tools=len(held), live_tools=live_tools - len(held),
                         live_symptoms=live_symptoms(bundle, live))


def live_symptoms(bundle: Bundle, live: set[str]) -> tuple[Signature, ...]:
    """(category, agent) of every confirmed symptom among the rollout's live events."""
    found: set[Signature] = set()
    for node in diagnose(bundle).nodes:
        if node.view.id in live:
            for category in node.confirmed:
                found.add((category.value, node.view.agent or node.view.lane))
    return tuple(sorted(found))


def _resume(out: Path, plan: AttributionPlan) -> dict[str, RolloutResult]:
    """Rollouts already done in *out* (creating it), after checking it holds this plan."""
    plan_file = out / PLAN_FILE
    body = orjson.dumps(plan.to_json(), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    if plan_file.exists():
        if orjson.loads(plan_file.read_bytes()) != orjson.loads(body):
            raise DiagnosisConfigError(
                f"{out} holds another attribution plan; choose another --out or remove it")
    else:
        out.mkdir(parents=True, exist_ok=True)
        plan_file.write_bytes(body)
    done: dict[str, RolloutResult] = {}
    results = out / RESULTS_FILE
    if results.exists():
        for line in results.read_bytes().splitlines():
            try:
                result = RolloutResult.from_json(orjson.loads(line))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a torn last line: that rollout runs again
            if result.child is None or Path(result.child).is_dir():
                done[result.key] = result
        # rewritten without the torn line, so the next append starts on a line of its own
        results.write_bytes(b"".join(
            orjson.dumps(r.to_json(), option=orjson.OPT_SORT_KEYS) + b"\n" for r in done.values()))
    return done


def attribute(
    bundle_path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    k: int = DEFAULT_K,
    every_decision: bool = False,
    budget: int | None = DEFAULT_BUDGET,
    guidance: str | None = None,
    templates: Templates | None = None,
    hold_tools: bool = True,
    control_text: str | None = None,
    outcome: Outcome | None = None,
    command: Sequence[str] | None = None,
    set_env: Mapping[str, str] | None = None,
    placement: str = "user",
    jobs: int = 1,
    alpha: float = DEFAULT_ALPHA,
    cwd: str | None = None,
    trust: bool = False,
    backend: str = "threads",
    progress: Progress | None = None,
    on_plan: Callable[[AttributionPlan], None] | None = None,
) -> Attribution:
    """Plan and run the counterfactual attribution of the failed run at *bundle_path*.

    *on_plan* sees the plan before any live call (the CLI prints it there). The rollouts and
    their results go to *out* (default `BUNDLE-attribution`); running again resumes."""
    target = Path(out) if out is not None else default_out(bundle_path)
    options = RunOptions(target, outcome or ExitCodeOutcome(), command, set_env, placement,
                         jobs, alpha, cwd, trust, backend)
    bundle = load_bundle(bundle_path)
    check_attributable(bundle, command, options.outcome)
    plan = plan_attribution(bundle, diagnose(bundle), k=k, every_decision=every_decision,
                            budget=budget, guidance=guidance, templates=templates,
                            hold_tools=hold_tools, control_text=control_text)
    if not plan.candidates:
        raise DiagnosisConfigError(
            f"{bundle_path}: the diagnosis found no symptom to attribute; give --all to "
            "intervene at every agent decision")
    if on_plan is not None:
        on_plan(plan)
    return run_attribution(bundle_path, plan, options, progress=progress)


def default_out(bundle_path: str | os.PathLike[str]) -> Path:
    return Path(f"{Path(bundle_path).as_posix().rstrip('/')}-attribution")


def check_attributable(bundle: Bundle, command: Sequence[str] | None, outcome: Outcome) -> None:
    """Refuse, before anything runs, a bundle that cannot be re-executed or did not fail."""
    if not bundle.manifest.get("replayable", True):
        raise DiagnosisConfigError(
            f"{bundle.path} is an imported trace: it can be diagnosed, not re-executed")
    argv = (bundle.config.get("command") or {}).get("argv")
    if not command and not argv:
        raise DiagnosisConfigError(
            f"{bundle.path} was recorded in-process (no command): give the program after --")
    final = bundle.final_result()
    code = (final.response or {}).get("exit_code") if final is not None else None
    if final is not None and outcome(bundle, code):
        raise DiagnosisConfigError(
            f"{bundle.path}: the recorded run already succeeds under this outcome; "
            "attribution explains a failure")
