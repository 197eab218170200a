"""What a study runs: one job per result row, with a stable key and a seed derived from names.

Seeds come from the case's own seed and its identity (never from a shared RNG or the order of
execution), so every case gets its own Random-Node draw and every attempt its own sample, and a
parallel run reproduces a sequential one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from symtrace_study.config import NODE_ARMS, TASK_ARMS, StudyConfig
from symtrace_study.seeds import derive_seed

Key = tuple[str, str, str, int]  # (phase, case, arm, attempt)


@dataclass(frozen=True)
class Job:
    phase: str  # collect | rq1 | repair
    kind: str  # collect | replay | rerun | node  (AttemptRunner._<kind>)
    case_id: str
    mas: str
    task: str
    arm: str
    attempt: int
    seed: int
    case: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> Key:
        return (self.phase, self.case_id, self.arm, self.attempt)

    @property
    def bundle(self) -> str:
        """Where the attempt's bundle goes, relative to the study's output directory."""
        if self.phase == "collect":
            return f"sources/{self.case_id}"
        return f"attempts/{self.case_id}/{self.phase}-{self.arm}-{self.attempt}"

    def row_base(self) -> dict[str, Any]:
        return {"phase": self.phase, "case": self.case_id, "mas": self.mas, "task": self.task,
                "arm": self.arm, "attempt": self.attempt, "seed": self.seed,
                "bundle": self.bundle}


def case_id(mas: str, task: str, seed: int) -> str:
    return f"{mas}/{task}/s{seed}"


def collect_jobs(config: StudyConfig) -> list[Job]:
    jobs = []
    for mas in config.mas:
        for task in config.tasks:
            for seed in config.seeds:
                cid = case_id(mas.name, task, seed)
                jobs.append(Job("collect", "collect", cid, mas.name, task, "source", 1,
                                derive_seed(seed, cid, "source"), {"case_seed": seed}))
    return jobs


def _job(case: dict[str, Any], phase: str, kind: str, arm: str, attempt: int) -> Job:
    seed = derive_seed(case["case_seed"], case["case"], phase, arm, attempt)
    return Job(phase, kind, case["case"], case["mas"], case["task"], arm, attempt, seed, case)


def first_round(config: StudyConfig, cases: list[dict[str, Any]]) -> list[Job]:
    """RQ1 replays and reruns, the node arms, and the first attempt of each task arm."""
    jobs = []
    for case in cases:
        for k in range(1, config.rq1_k + 1):
            jobs.append(_job(case, "rq1", "replay", "replay", k))
            jobs.append(_job(case, "rq1", "rerun", "rerun", k))
        for arm in config.methods:
            kind = "node" if arm in NODE_ARMS else "rerun"
            jobs.append(_job(case, "repair", kind, arm, 1))
    return jobs


def next_round(config: StudyConfig, cases: list[dict[str, Any]], attempt: int,
               rows: dict[Key, dict[str, Any]]) -> list[Job]:
    """Attempt *attempt* of every task arm whose previous attempt failed (a pass or a system
    error ends the arm for that case)."""
    jobs = []
    for case in cases:
        for arm in config.methods:
            if arm not in TASK_ARMS:
                continue
            previous = rows.get(("repair", case["case"], arm, attempt - 1))
            if previous is not None and previous["status"] == "failed":
                jobs.append(_job(case, "repair", "rerun", arm, attempt))
    return jobs
