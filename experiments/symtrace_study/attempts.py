"""One attempt of a study, run inside a worker: a live recorded run, a strict replay, or a
node-level intervention (one selective replay with Δ at the anchor).

Every attempt starts from reset services and runs against the worker's endpoint with the
attempt's own seed. What an attempt returns is one result row; anything that stops it from
producing a verdict (an exception, a prefix divergence, a crash of the program) is a *system
error* (status "error"), never a failed repair.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import symtrace
from symtrace.diagnosis import build_task_prompt, parse_task
from symtrace.diagnosis.errors import NoEligibleAnchor
from symtrace.diagnosis.repair import plan_repair
from symtrace.process.runner import record_command, replay_bundle
from symtrace_study.config import TASK_PROMPTS, StudyConfig
from symtrace_study.endpoints import Endpoint
from symtrace_study.jobs import Job

QUIET_ENV = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false",
             "OTEL_SDK_DISABLED": "true"}


@dataclass(frozen=True)
class Observed:
    """What an attempt produced: the final answer, the evaluator's verdict, LLM calls made."""

    answer: Any
    passed: bool
    reason: str
    api_calls: int


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
    with path.open("wb") as fh:
        os.dup2(fh.fileno(), 2)
        try:
            yield path
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


class AttemptRunner:
    """Runs jobs against one endpoint and one set of services (a worker's own)."""

    def __init__(self, config: StudyConfig, endpoint: Endpoint, urls: dict[str, str],
                 reset: Any, state: Any) -> None:
        from symtrace_suite.tasks import get_task

        self.config = config
        self.endpoint = endpoint
        self.urls = urls
        self._reset, self._state = reset, state
        self._get_task = get_task
        self._templates = config.templates()
        self._judge = _judge(config)
        self._stderr = Path(os.devnull)  # the running attempt's stderr log

    # -- entry point -----------------------------------------------------------------------

    def run(self, job: Job) -> dict[str, Any]:
        row = job.row_base()
        started = time.time()
        log = f"logs/{job.case_id}/{job.phase}-{job.arm}-{job.attempt}.stderr.log"
        row["stderr_log"] = log
        try:
            with stderr_to(self.config.out / log) as self._stderr:
                row.update(getattr(self, f"_{job.kind}")(job))
        except Exception as exc:  # noqa: BLE001 -- any failure is a system error, not a failed repair
            row.update(status="error", error=f"{type(exc).__name__}: {exc}",
                       traceback=traceback.format_exc(limit=6))
        row["timing"] = {"seconds": round(time.time() - started, 3), "started": started}
        row.setdefault("error", None)
        return row

    # -- kinds -----------------------------------------------------------------------------

    def _collect(self, job: Job) -> dict[str, Any]:
        path = self.config.out / job.bundle
        observed = self._live(job, path, prompt=None)
        task = self._get_task(job.task)
        row = _observed_row(observed, path)
        row["state"] = self._state(self.urls) if task.mutates else None
        row["case_seed"] = job.case["case_seed"]
        if observed.passed:
            return row
        try:  # the reference arm's view of the source: its symptoms and anchor
            plan = plan_repair(symtrace.load_bundle(path), policy="suspicious",
                               templates=self._templates)
            row.update(categories=[c.value for c in plan.choice.categories],
                       target=plan.choice.target, anchor=plan.choice.anchor)
        except NoEligibleAnchor:
            row.update(categories=[], target=None, anchor=None)
        return row

    def _rerun(self, job: Job) -> dict[str, Any]:
        """A task-level attempt (rerun/self_reflection/critic), or an RQ1 live rerun."""
        prompt = None
        if job.phase == "repair" or self.config.rq1_prompt == "unguided":
            task = self._get_task(job.task)
            spec = parse_task({**task.to_json(), "benchmark": "symtrace_suite",
                               "split": task.site})
            prompt = build_task_prompt(TASK_PROMPTS[job.arm], spec,
                                       previous_final_answer=job.case["answer"],
                                       templates=self._templates)
        path = self.config.out / job.bundle
        observed = self._live(job, path, prompt=prompt)
        row = _observed_row(observed, path)
        if job.phase == "rq1":
            row.update(self._reproduced(job, observed))
        return row

    def _replay(self, job: Job) -> dict[str, Any]:
        """RQ1: a strict replay of the source (zero live calls)."""
        source = self.config.out / job.case["bundle"]
        self._reset(self.urls)
        outcome = replay_bundle(source, quiet=True, set_env=self._attempt_env(job.seed))
        if outcome.diverged:  # the replay failed to reproduce: what RQ1 measures
            text = (outcome.report.render() if outcome.report is not None
                    else (outcome.report_json or {}).get("rendered", "diverged"))
            return {"status": "not_reproduced", "diverged": True, "divergence": text,
                    "api_calls": 0}
        answer = (outcome.report_json or {}).get("final_value")
        # tool bodies do not run on replay, so the world is the one the source left behind
        verdict = self._get_task(job.task).evaluate(answer, job.case.get("state"))
        observed = Observed(answer, verdict.passed, verdict.reason, 0)
        return {**self._reproduced(job, observed), "answer": answer, "passed": verdict.passed,
                "reason": verdict.reason, "api_calls": 0, "diverged": False}

    def _node(self, job: Job) -> dict[str, Any]:
        """One selective replay with Δ at the arm's anchor, live suffix on OUR endpoint."""
        source = self.config.out / job.case["bundle"]
        bundle = symtrace.load_bundle(source)
        try:
            plan = plan_repair(bundle, policy=job.arm, seed=job.seed,
                               judge=self._judge if job.arm == "suspicious" else None,
                               templates=self._templates)
        except NoEligibleAnchor as exc:  # the method abstains: the case is not repaired
            return {"status": "failed", "intervened": False, "note": str(exc), "api_calls": 0,
                    "anchor": None, "target": None, "delta": None, "categories": []}
        choice = plan.choice
        info = {"intervened": True, "anchor": choice.anchor, "target": choice.target,
                "delta": plan.guidance, "categories": [c.value for c in choice.categories]}
        path = self.config.out / job.bundle
        shutil.rmtree(path, ignore_errors=True)
        self._reset(self.urls)
        outcome = replay_bundle(source, anchor=choice.anchor, guidance=plan.guidance,
                                placement=self.config.placement, out=path, quiet=True,
                                force=True, set_env=self._attempt_env(job.seed))
        if outcome.diverged or outcome.child_bundle is None:
            text = (outcome.report.render() if outcome.report is not None
                    else (outcome.report_json or {}).get("rendered", "no child bundle"))
            return {**info, "status": "error", "error": f"prefix replay diverged: {text}"}
        if outcome.program_exit_code:
            return {**info, "status": "error",
                    "error": f"the program exited {outcome.program_exit_code}"}
        observed = self._observe(path, job)
        return {**info, **_observed_row(observed, path)}

    # -- helpers ---------------------------------------------------------------------------

    def _attempt_env(self, seed: int) -> dict[str, str]:
        return {**QUIET_ENV, **self.endpoint.env(seed),
                "SYMTRACE_SUITE_URLS": orjson.dumps(self.urls).decode()}

    def _live(self, job: Job, path: Path, *, prompt: str | None) -> Observed:
        mas = next(m for m in self.config.mas if m.name == job.mas)
        self._reset(self.urls)
        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        with patched_environ(self._attempt_env(job.seed)):
            outcome = record_command(path, mas.argv(job.task, prompt),
                                     task=self._get_task(job.task).to_json(), seed=job.seed,
                                     force=True, quiet=True)
        if outcome.exit_code:
            sys.stderr.flush()
            tail = self._stderr.read_bytes()[-600:].decode("utf-8", "replace").strip()
            raise AttemptError(f"the MAS exited {outcome.exit_code}: ...{tail}")
        return self._observe(path, job)

    def _observe(self, path: Path, job: Job) -> Observed:
        bundle = symtrace.load_bundle(path)
        final = bundle.final_result()
        if final is None:
            raise AttemptError("the attempt recorded no final result")
        answer = (final.response or {}).get("value")
        verdict = self._get_task(job.task).evaluate(answer, self._state(self.urls))
        live = set((bundle.lineage or {}).get("live_events", [e.id for e in bundle.events]))
        calls = sum(1 for e in bundle.events if e.is_llm and e.id in live)
        return Observed(answer, verdict.passed, verdict.reason, calls)

    def _reproduced(self, job: Job, observed: Observed) -> dict[str, Any]:
        same = equivalent(self.config.equivalence, job.case, observed)
        return {"status": "reproduced" if same else "not_reproduced"}


class AttemptError(RuntimeError):
    """An attempt ended without a verdict (a crashed program, no final result)."""


def equivalent(mode: str, case: dict[str, Any], observed: Observed) -> bool:
    """Does *observed* reproduce the source failure under the configured equivalence?"""
    if observed.passed:
        return False
    if mode == "answer":
        dump = orjson.OPT_SORT_KEYS
        return orjson.dumps(observed.answer, option=dump) == orjson.dumps(case["answer"],
                                                                          option=dump)
    if mode == "reason":
        return observed.reason == case["reason"]
    return True  # "verdict": the evaluator rejects it again


def _observed_row(observed: Observed, path: Path) -> dict[str, Any]:
    bundle = symtrace.load_bundle(path)
    row = {"answer": observed.answer, "passed": observed.passed, "reason": observed.reason,
           "api_calls": observed.api_calls, "bundle_digest": bundle.digest,
           "versions": bundle.config.get("versions", {})}
    row.setdefault("status", "passed" if observed.passed else "failed")
    return row


def _judge(config: StudyConfig) -> Any:
    if config.judge is None:
        return None
    from symtrace.diagnosis.judge import OpenAIJudge

    key = os.environ.get(config.judge.api_key_env) if config.judge.api_key_env else None
    return OpenAIJudge(config.judge.base_url, config.judge.model, api_key=key)
