"""A fake executor for the study runner: deterministic rows without running any program."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from symtrace_study import study as study_module
from symtrace_study.config import parse_config
from symtrace_study.jobs import Job
from symtrace_study.study import Study

TASKS = ["shop-001", "shop-002", "wiki-001"]


def config_for(tmp_path: Path, **extra):
    """A small plain-MAS config writing to tmp_path/out."""
    raw = {"out": str(tmp_path / "out"), "mas": ["plain"], "tasks": TASKS, "seeds": [0, 1],
           "attempts": 3, "rq1": {"k": 3}, **extra}
    return parse_config(raw)


def run(config, executor, monkeypatch, **kwargs):
    """Study.run with *executor* in place of the real pool."""
    monkeypatch.setattr(study_module, "open_executor", lambda *a: executor)
    return Study(config, Console(file=io.StringIO())).run(**kwargs)


def fake_row(job: Job) -> dict[str, Any]:
    """Outcome is a pure function of the job's seed (like the stub policy's replies)."""
    row = job.row_base()
    draw = job.seed % 3
    if job.phase == "collect":
        row.update(status="passed" if job.task.endswith("2") else "failed", answer=draw,
                   reason="fake", state=None, case_seed=job.case["case_seed"],
                   categories=["C1"] if draw else [], target="agent_action_0001",
                   anchor="agent_action_0001", bundle_digest="sha256:x")
    elif job.phase == "rq1":
        row.update(status="reproduced" if draw else "not_reproduced")
    else:
        row.update(status="passed" if draw == 0 else "failed", api_calls=2)
    row.update(error=None, timing={"seconds": 0.0})
    return row


class Crash(RuntimeError):
    """Simulates the runner process dying in the middle of a run."""


class FakeExecutor:
    """Runs jobs with fake_row; raises Crash after *crash_after* rows (if given)."""

    def __init__(self, crash_after: int | None = None) -> None:
        self.crash_after = crash_after
        self.jobs: list[Job] = []

    def map(self, jobs):
        for job in jobs:
            if self.crash_after is not None and len(self.jobs) >= self.crash_after:
                raise Crash("simulated crash")
            self.jobs.append(job)
            yield fake_row(job)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass
