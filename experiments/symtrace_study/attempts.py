"""One attempt of a study, run inside a worker: a live recorded run, an RQ1 replay to the
failure target, or a node-level intervention (one selective replay with Δ at the anchor).

Every attempt starts from a reset environment (for a selective replay: reset, then the writes
of the replayed prefix re-applied) and runs against the worker's endpoint with the attempt's
own seed. What an attempt returns is one result row. How the ways an attempt can go wrong are
counted (the report states it):

* an **infrastructure fault** (a service unreachable: the MAS exits `EXIT_INFRASTRUCTURE`, or
  crashes on a connection error, a timeout, a 429 or a 5xx of its LLM endpoint after its SDK's
  own retries (`UNREACHABLE`, `PROVIDER_FAULTS`), or the environment itself cannot be
  reset/read) is retried up to `infra_retries` times with exponential backoff
  (`infra_backoff` seconds, doubling), then reported as a system error (`status: error`,
  `error_kind: infrastructure`) — never as an observation handed to the agent, never as a
  failed repair; provider errors the SDK retried successfully are counted in the row
  (`llm.provider_errors`), not as calls;
* SIGINT/SIGTERM end the attempt without a row (`StudyInterrupted`, interrupt.py);
* a **program crash** (any other non-zero exit) or a run that declares no final result is a
  non-repair (`status: failed` / `not_reproduced`, `error_kind: program_crash` /
  `no_final_result`), as in the paper's App. F.4; `crashes: system_error` in the config
  reports them apart instead;
* a node arm whose **prefix replay diverges** or any exception of the harness is a system error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import symtrace
from symtrace.diagnosis import build_task_prompt, parse_task
from symtrace.diagnosis.errors import NoEligibleAnchor
from symtrace.diagnosis.repair import plan_repair
from symtrace.model.divergence import DivergenceKind
from symtrace.process.runner import record_command, replay_bundle
from symtrace_study.benchmark import Benchmark, Environment, task_index, task_split
from symtrace_study.config import TASK_PROMPTS, StudyConfig
from symtrace_study.endpoints import Endpoint
from symtrace_study.errors import StudyInterrupted
from symtrace_study.interrupt import note, raise_if_interrupted, signal_of
from symtrace_study.jobs import Job
from symtrace_study.judging import diagnose_kwargs, make_judge, verdicts
from symtrace_study.labels import load_labels
from symtrace_study.launch import Launcher, cold_launcher
from symtrace_study.llm_usage import usage_summary
from symtrace_study.reproduction import (
    Signature,
    find_match,
    label_signature,
    live_events,
    source_signatures,
)

QUIET_ENV = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false",
             "OTEL_SDK_DISABLED": "true"}
# Every attempt runs with this hash seed (recorded in its bundle and used again on replay), so
# a forked warm worker (whose hash seed is fixed at its start) runs exactly what a cold one does.
HASH_SEED = "0"
EXIT_INFRASTRUCTURE = 75  # the MAS's way to say "the harness failed, not the agent" (EX_TEMPFAIL)
# A crash whose traceback ends in one of these could not reach the LLM endpoint (or another
# service) at all: an infrastructure fault of the harness, not a crash of the MAS.
UNREACHABLE = ("APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout",
               "ConnectionRefusedError", "Connection refused")
# A selective replay whose guided anchor request the provider failed every time, retries
# included (issue 39's GuidedAnchorFailed, divergence code SYM-R109): the intervention never
# reached the model, so the attempt is no evidence about the method.
# ... or the provider refused or failed the request (rate limit, overload, server error, read
# timeout) more often than the SDK's own retries could absorb: the provider's fault, not the
# method's. (OpenAI/Anthropic SDK class names, LiteLLM's, and the status line they print.)
PROVIDER_FAULTS = ("RateLimitError", "InternalServerError", "ServiceUnavailableError",
                   "OverloadedError", "APIStatusError: Error code: 5", "ReadTimeout",
                   "Timeout: Request timed out", "Error code: 429", "Error code: 500",
                   "Error code: 502", "Error code: 503", "Error code: 504", "Error code: 529",
                   # issue 39: no guided attempt of the anchor request succeeded
                   "GuidedAnchorFailed")


@dataclass(frozen=True)
class Observed:
    """What an attempt produced: the final answer, the evaluator's verdict, LLM calls made."""

    answer: Any
    passed: bool
    reason: str
    api_calls: int
    llm: dict[str, Any] = field(default_factory=dict)  # llm_usage.usage_summary (live only)


class InfrastructureFault(RuntimeError):
    """The environment or a service could not be reached: retried, then a system error."""


class ProgramFailure(RuntimeError):
    """The MAS crashed (non-zero exit) or declared no final result: a non-repair by default."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # program_crash | no_final_result


class SystemError_(RuntimeError):
    """The harness could not produce a verdict (e.g. a node arm's prefix replay diverged)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@contextlib.contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    """os.environ with *values* for the attempt (record_command reads os.environ)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[Path]:
    """Send this process's stderr, and so the attempt's programs' stderr (framework logging,
    tracebacks), to *path* while the attempt runs: it is kept per attempt, not interleaved
    with the progress display."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as fh:
        os.dup2(fh.fileno(), 2)
        try:
            yield path
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


class AttemptRunner:
    """Runs jobs against one endpoint and one environment (a worker's own)."""

    def __init__(self, config: StudyConfig, endpoint: Endpoint, environment: Environment,
                 benchmark: Benchmark, launcher: Launcher | None = None) -> None:
        self.config = config
        self.endpoint = endpoint
        self.environment = environment
        self.benchmark = benchmark
        self.launcher = launcher or cold_launcher()
        self._tasks = task_index(benchmark)
        self._templates = config.templates()
        self._judge = make_judge(config)
        self._diagnosis = diagnose_kwargs(config, self._judge)  # the same in every phase
        self._signatures: dict[str, list[Signature]] = {}
        self._labels = load_labels(config.labels_path) if config.labels_path else {}
        self._stderr = Path(os.devnull)  # the running attempt's stderr log

    # -- entry point -----------------------------------------------------------------------

    def run(self, job: Job) -> dict[str, Any]:
        started = time.time()
        log = f"logs/{job.case_id}/{job.phase}-{job.arm}-{job.attempt}.stderr.log"
        (self.config.out / log).unlink(missing_ok=True)
        tries = 0
        while True:
            tries += 1
            row = job.row_base()
            row.update(stderr_log=log, error=None, error_kind=None)
            try:
                with stderr_to(self.config.out / log) as self._stderr:
                    row.update(getattr(self, f"_{job.kind}")(job))
            except StudyInterrupted:
                raise  # the attempt was cut short: no row (resume runs it)
            except InfrastructureFault as exc:
                row.update(status="error", error_kind="infrastructure", error=str(exc))
                if tries <= self.config.infra_retries:
                    time.sleep(self.config.infra_backoff * 2 ** (tries - 1))
                    self._recover()
                    continue
            except ProgramFailure as exc:
                if job.phase == "collect" or self.config.crashes == "system_error":
                    row.update(status="error", error_kind=exc.kind, error=str(exc))
                else:  # App. F.4: a crash of the MAS is a non-repair / a non-reproduction
                    row.update(status="failed" if job.phase == "repair" else "not_reproduced",
                               error_kind=exc.kind, error=str(exc), passed=False)
            except SystemError_ as exc:
                row.update(status="error", error_kind=exc.kind, error=str(exc))
            except Exception as exc:  # noqa: BLE001 -- any failure is a system error
                row.update(status="error", error_kind="system",
                           error=f"{type(exc).__name__}: {exc}",
                           traceback=traceback.format_exc(limit=6))
            break
        raise_if_interrupted()  # a signal swallowed anywhere inside: still no row
        row["tries"] = tries
        row["timing"] = {"seconds": round(time.time() - started, 3), "started": started}
        return row

    def _recover(self) -> None:
        """Before retrying after an infrastructure fault: a fresh environment if the current
        one no longer answers."""
        try:
            self.environment.reset()
        except Exception:  # noqa: BLE001 -- it is gone: start another
            with contextlib.suppress(Exception):
                self.environment.close()
            self.environment = self.benchmark.open_environment()

    # -- kinds -----------------------------------------------------------------------------

    def _collect(self, job: Job) -> dict[str, Any]:
        path = self.config.out / job.bundle
        observed = self._live(job, path, prompt=None)
        task = self._tasks[job.task]
        row = _observed_row(observed, path)
        row["state"] = self._state() if task.mutates else None
        row["case_seed"] = job.case["case_seed"]
        if observed.passed:
            return row
        try:  # the reference arm's view of the source (same judge, θ, trace-back)
            plan = plan_repair(symtrace.load_bundle(path), policy="suspicious",
                               templates=self._templates, **self._diagnosis)
            row.update(categories=[c.value for c in plan.choice.categories],
                       target=plan.choice.target, anchor=plan.choice.anchor)
            if self._judge is not None:
                row["judge_verdicts"] = verdicts(plan.diagnosis)
        except NoEligibleAnchor:
            row.update(categories=[], target=None, anchor=None)
        return row

    def _rerun(self, job: Job) -> dict[str, Any]:
        """A task-level attempt (rerun/self_reflection/critic), or an RQ1 live rerun."""
        prompt = None
        if job.phase == "repair" or self.config.rq1_prompt == "unguided":
            task = self._tasks[job.task]
            spec = parse_task({**task.to_json(), "benchmark": self.benchmark.name,
                               "split": task_split(self.benchmark, task)})
            prompt = build_task_prompt(TASK_PROMPTS[job.arm], spec,
                                       previous_final_answer=job.case["answer"],
                                       templates=self._templates)
        path = self.config.out / job.bundle
        observed = self._live(job, path, prompt=prompt)
        row = _observed_row(observed, path)
        if job.phase == "rq1":
            bundle = symtrace.load_bundle(path)
            row.update(self._reproduced(job, observed, bundle, live_events(bundle)))
        return row

    def _replay(self, job: Job) -> dict[str, Any]:
        """RQ1 (App. D.3): replay the source's prefix up to its failure target, then regenerate
        live from there with no guidance, and ask whether the failure happens again."""
        source = self._source(job)
        bundle = symtrace.load_bundle(source)
        anchor, target, chosen_by = rq1_anchor(job.case, bundle, self._labels.get(job.case_id))
        cut = bundle.event(anchor).position
        info = {"anchor": anchor, "target": target, "target_from": chosen_by,
                "prefix_events": sum(1 for e in bundle.events if e.position < cut)}
        path = self.config.out / job.bundle
        outcome = self._selective(job, source, bundle, anchor, guidance=None, out=path)
        if outcome.diverged or outcome.child_bundle is None:  # replay failed to reproduce
            return {**info, "status": "not_reproduced", "diverged": True, "api_calls": 0,
                    "divergence": _divergence_text(outcome)}
        observed = self._observe(path, job)
        child = symtrace.load_bundle(path)
        return {**info, **_observed_row(observed, path), "diverged": False,
                **self._reproduced(job, observed, child, live_events(child))}

    def _node(self, job: Job) -> dict[str, Any]:
        """One selective replay with Δ at the arm's anchor, live suffix on OUR endpoint."""
        source = self._source(job)
        bundle = symtrace.load_bundle(source)
        try:
            plan = plan_repair(bundle, policy=job.arm, seed=job.seed,
                               templates=self._templates, **self._diagnosis)
        except NoEligibleAnchor as exc:  # the method abstains: the case is not repaired
            return {"status": "failed", "intervened": False, "note": str(exc), "api_calls": 0,
                    "anchor": None, "target": None, "delta": None, "categories": []}
        choice = plan.choice
        info = {"intervened": True, "anchor": choice.anchor, "target": choice.target,
                "delta": plan.guidance, "categories": [c.value for c in choice.categories]}
        if self._judge is not None and job.arm == "suspicious":
            info["judge_verdicts"] = verdicts(plan.diagnosis)
        path = self.config.out / job.bundle
        outcome = self._selective(job, source, bundle, choice.anchor, guidance=plan.guidance,
                                  out=path)
        if outcome.diverged or outcome.child_bundle is None:
            raise SystemError_("divergence",
                               f"prefix replay diverged: {_divergence_text(outcome)}")
        observed = self._observe(path, job)
        return {**info, **_observed_row(observed, path)}

    # -- helpers ---------------------------------------------------------------------------

    def _source(self, job: Job) -> Path:
        bundle = Path(job.case["bundle"])
        return bundle if bundle.is_absolute() else self.config.out / bundle

    def _attempt_env(self, seed: int) -> dict[str, str]:
        return {**QUIET_ENV, **self.endpoint.env(seed), **self.environment.env(),
                **self.launcher.env(), "PYTHONHASHSEED": HASH_SEED}

    def _reset(self) -> None:
        try:
            self.environment.reset()
        except Exception as exc:
            raise InfrastructureFault(f"environment reset failed: {type(exc).__name__}: {exc}"
                                      ) from exc

    def _state(self) -> Any:
        try:
            return self.environment.state()
        except Exception as exc:
            raise InfrastructureFault(f"environment state failed: {type(exc).__name__}: {exc}"
                                      ) from exc

    def _selective(self, job: Job, source: Path, bundle: Any, anchor: str,
                   guidance: str | None, out: Path) -> Any:
        """Reset the environment and re-apply the prefix's writes (its tool bodies will not
        run: the bundle serves them), then one selective replay from *anchor*."""
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.environment.restore_prefix(bundle, anchor)
        except Exception as exc:
            raise InfrastructureFault(
                f"restoring the prefix state failed: {type(exc).__name__}: {exc}") from exc
        argv = self.launcher.wrap(self.launcher.unwrap(
            (bundle.config.get("command") or {}).get("argv") or []))
        outcome = replay_bundle(source, anchor=anchor, guidance=guidance,
                                placement=self.config.placement, out=out, quiet=True,
                                force=True, command=argv or None,
                                set_env=self._attempt_env(job.seed),
                                trust=True)  # a bundle this study recorded itself
        _check_signal((outcome.report_json or {}).get("signal")
                      if (outcome.report_json or {}).get("status") == "interrupted" else None)
        check_anchor_reached(outcome)
        self._check_exit(outcome.program_exit_code)
        return outcome

    def _live(self, job: Job, path: Path, *, prompt: str | None) -> Observed:
        mas = next(m for m in self.config.mas if m.name == job.mas)
        self._reset()
        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        with patched_environ(self._attempt_env(job.seed)):
            outcome = record_command(path, self.launcher.wrap(mas.argv(job.task, prompt)),
                                     task=self._tasks[job.task].to_json(), seed=job.seed,
                                     force=True, quiet=True)
        _check_signal(outcome.signal if outcome.status in ("interrupted", "terminated")
                      else None)
        self._check_exit(outcome.exit_code)
        return self._observe(path, job)

    def _check_exit(self, code: int | None) -> None:
        if not code:
            return
        sys.stderr.flush()
        tail = self._stderr.read_bytes()[-600:].decode("utf-8", "replace").strip()
        if code == EXIT_INFRASTRUCTURE:
            raise InfrastructureFault(f"the MAS reported an infrastructure fault: ...{tail}")
        if any(marker in tail for marker in UNREACHABLE):
            raise InfrastructureFault(f"the MAS exited {code}: an endpoint was unreachable: "
                                      f"...{tail}")
        if any(marker in tail for marker in PROVIDER_FAULTS):
            raise InfrastructureFault(f"the MAS exited {code}: the LLM provider failed the "
                                      f"request after the SDK's retries: ...{tail}")
        raise ProgramFailure("program_crash", f"the MAS exited {code}: ...{tail}")

    def _observe(self, path: Path, job: Job) -> Observed:
        bundle = symtrace.load_bundle(path)
        final = bundle.final_result()
        if final is None:
            raise ProgramFailure("no_final_result", "the attempt recorded no final result")
        answer = (final.response or {}).get("value")
        task = self._tasks[job.task]
        verdict = self.benchmark.evaluate(task, answer, self._state())
        live = set((bundle.lineage or {}).get("live_events", [e.id for e in bundle.events]))
        llm = usage_summary(e for e in bundle.events if e.id in live)
        return Observed(answer, verdict.passed, verdict.reason, llm["calls"], llm)

    def _reproduced(self, job: Job, observed: Observed, bundle: Any, live: set[str]
                    ) -> dict[str, Any]:
        mode = self.config.equivalence
        if mode != "mechanism":
            same = equivalent(mode, job.case, observed)
            return {"status": "reproduced" if same else "not_reproduced"}
        signatures = self._signature(job)
        if not signatures:  # no mechanism on the source: the same evaluator reason
            same = equivalent("reason", job.case, observed)
            return {"status": "reproduced" if same else "not_reproduced",
                    "equivalence": "reason (no source mechanism)", "match": None}
        match = None if observed.passed else find_match(
            signatures, bundle, live, **self._diagnosis)
        return {"status": "reproduced" if match else "not_reproduced",
                "equivalence": "mechanism (label)" if job.case_id in self._labels
                else "mechanism", "match": match.to_json() if match else None,
                "signature": [s.to_json() for s in signatures]}

    def _signature(self, job: Job) -> list[Signature]:
        key = job.case_id
        if key not in self._signatures:
            bundle = symtrace.load_bundle(self._source(job))
            label = self._labels.get(key)
            self._signatures[key] = ([label_signature(label, bundle)] if label else
                                     source_signatures(bundle, **self._diagnosis))
        return self._signatures[key]


def check_anchor_reached(outcome: Any) -> None:
    """Issue 39: a selective replay whose anchor request never reached the model (SYM-R109)
    is an infrastructure fault, never a failed repair or a non-reproduction."""
    report = outcome.report
    if outcome.diverged and report is not None and report.kind is DivergenceKind.ANCHOR_FAILED:
        raise InfrastructureFault("no attempt of the anchor request reached the model: "
                                  f"{_divergence_text(outcome)[:600]}")


def _check_signal(name: str | None) -> None:
    """symtrace's supervisor received SIGINT/SIGTERM while the attempt's program ran (it held
    the handlers and forwarded the signal): the study stops, without a row for the attempt."""
    signum = signal_of(name)
    if signum is not None:
        note(signum)
        raise StudyInterrupted(signum)


def rq1_anchor(case: dict[str, Any], bundle: Any, label: Any = None) -> tuple[str, str, str]:
    """Where RQ1's replay goes live: a human label's target (labels.py), else the case's stored
    failure target (its anchor is the LLM boundary of that target), or — when the diagnosis
    found none — the last agent decision, the one that produced the failed final answer."""
    if label is not None:
        from symtrace.diagnosis.anchors import resolve_boundary
        from symtrace.diagnosis.view import build_context

        ctx = build_context(bundle)
        boundary = resolve_boundary(ctx.by_id[label.target], ctx)
        if boundary is None:
            raise SystemError_("label", f"the labelled target {label.target} has no LLM "
                               "boundary to go live at")
        return boundary.event_id, label.target, "label"
    if case.get("anchor"):
        return case["anchor"], case.get("target") or case["anchor"], "diagnosis"
    plan = plan_repair(bundle, policy="last")
    return plan.choice.anchor, plan.choice.target, "last_decision"


def _divergence_text(outcome: Any) -> str:
    if outcome.report is not None:
        return str(outcome.report.render())
    return str((outcome.report_json or {}).get("rendered", "no child bundle"))


def equivalent(mode: str, case: dict[str, Any], observed: Observed) -> bool:
    """Coarse equivalences (opt-in): the evaluator rejects it again (`verdict`), with the same
    final answer (`answer`) or the same evaluator reason (`reason`)."""
    if observed.passed:
        return False
    if mode == "answer":
        from symtrace.model.canonical import canonical_bytes

        return canonical_bytes(observed.answer) == canonical_bytes(case["answer"])
    if mode == "reason":
        return observed.reason == case["reason"]
    return True  # "verdict"


def _observed_row(observed: Observed, path: Path) -> dict[str, Any]:
    bundle = symtrace.load_bundle(path)
    row = {"answer": observed.answer, "passed": observed.passed, "reason": observed.reason,
           "api_calls": observed.api_calls, "llm": observed.llm, "bundle_digest": bundle.digest,
           "versions": bundle.config.get("versions", {})}
    row.setdefault("status", "passed" if observed.passed else "failed")
    return row


_judge = make_judge  # the name older callers import
