"""Run a study: collect source failures once, freeze them, then RQ1 and the repair arms.

Output directory layout (all paths in rows are relative to it):

    study.json      the config the results belong to (a resumed run must match it: the case
                    set's fingerprint, the methods and every result-affecting setting)
    collect.jsonl   one row per source run (MAS × task × seed)
    cases.json      the frozen case set: failures kept, passing sources excluded, errors
    results.jsonl   one row per attempt (RQ1 replays/reruns, node arms, task-arm attempts)
    runs.jsonl      one line per invocation: start, end, workers, backend (the report's run time)
    sources/, attempts/   the bundles
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from symtrace_study import jobs as plan
from symtrace_study.config import StudyConfig
from symtrace_study.errors import (
    StudyConfigChanged,
    StudyConfigError,
    StudyInterrupted,
    StudyStateError,
    TooManyErrors,
)
from symtrace_study.interrupt import received
from symtrace_study.jobs import Job, Key
from symtrace_study.judging import preflight
from symtrace_study.pool import Executor, open_executor
from symtrace_study.results import ResultLog, write_json

CASE_FIELDS = ("case", "mas", "task", "case_seed", "seed", "bundle", "bundle_digest", "answer",
               "reason", "state", "categories", "target", "anchor")


def terminal_console() -> Console:
    """A console on its own handle of the terminal: attempts redirect fd 2 to their logs."""
    return Console(file=os.fdopen(os.dup(2), "w", buffering=1))


class Study:
    def __init__(self, config: StudyConfig, console: Console | None = None) -> None:
        self.config = config
        self.out = config.out
        self.console = console or terminal_console()
        self.collect_log = ResultLog(self.out / "collect.jsonl")
        self.results = ResultLog(self.out / "results.jsonl")

    # -- state -----------------------------------------------------------------------------

    def check_state(self, *, resume: bool) -> None:
        """Refuse an output directory that holds another study; nothing is written."""
        stored = self.out / "study.json"
        if not stored.exists():
            if resume:
                raise StudyStateError(f"--resume: {self.out} holds no study to resume")
            if self.out.exists() and any(self.out.iterdir()):
                raise StudyStateError(f"{self.out} exists and is not a study directory")
            return
        previous = orjson.loads(stored.read_bytes())
        if previous.get("fingerprint") != self.config.fingerprint() or previous.get(
                "methods") != list(self.config.methods):
            raise StudyStateError(
                f"{self.out} holds a study with another config (MAS, tasks, seeds, backend or "
                "methods differ); choose another output directory")
        changed = changed_settings(previous, self.config.settings())
        if changed:
            raise StudyConfigChanged(changed, self.out)

    def write_study(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "study.json", {
            "fingerprint": self.config.fingerprint(), "methods": list(self.config.methods),
            "settings": self.config.settings(), "config": self.config.to_json()})

    # -- phases ----------------------------------------------------------------------------

    def run(self, *, workers: int = 1, backend: str = "local", resume: bool = False
            ) -> dict[str, Any]:
        self.check_state(resume=resume)
        preflight(self.config)  # an unreachable judge: a typed error before any attempt
        executor = open_executor(self.config, workers, backend)  # a missing extra: no output
        started = time.time()
        interrupted: StudyInterrupted | None = None
        try:
            self.write_study()
            cases = self._collect(executor)
            self._check_labels(cases)
            # a system error is no observation: every run retries it (its cause may be fixed)
            rows = {k: r for k, r in self.results.load().items() if r["status"] != "error"}
            self._execute(executor, plan.first_round(self.config, cases["cases"]), rows,
                          "RQ1 + arms")
            for attempt in range(2, self.config.attempts + 1):
                jobs = plan.next_round(self.config, cases["cases"], attempt, rows)
                self._execute(executor, jobs, rows, f"task arms, attempt {attempt}")
            self._judge_reproductions(cases, rows)
        except StudyInterrupted as exc:
            interrupted = exc
            raise
        finally:
            if interrupted is not None or received() is not None:
                executor.abort()  # attempts in flight are dropped, never rows
            else:
                executor.close()
            if (self.out / "study.json").exists():  # one line per invocation (resumes too)
                line = {"started": round(started, 3), "finished": round(time.time(), 3),
                        "workers": workers, "backend": backend}
                if interrupted is not None:
                    line["interrupted"] = interrupted.signum
                ResultLog(self.out / "runs.jsonl").append(line)
        return self._check_errors(cases, rows)

    def _collect(self, executor: Executor) -> dict[str, Any]:
        frozen = self.out / "cases.json"
        if frozen.exists():  # collect once, then reuse
            cases = orjson.loads(frozen.read_bytes())
            if not cases["errors"] or self.config.cases_path is not None:
                return cases
            # sources that ended in a system error are collected again, then frozen anew
            # (the cases already frozen keep their rows: their collect rows are unchanged)
        if self.config.cases_path is not None:  # another study's frozen case set
            cases = orjson.loads(self.config.cases_path.read_bytes())
            home = self.config.cases_path.resolve().parent
            names = {m.name for m in self.config.mas}
            for case in cases["cases"]:
                if case["mas"] not in names:
                    raise StudyStateError(f"{self.config.cases_path}: case {case['case']} uses "
                                          f"MAS {case['mas']!r}, which this config lacks")
                case["bundle"] = str(home / case["bundle"])
            write_json(frozen, cases)
            return cases
        rows = {k: r for k, r in self.collect_log.load().items() if r["status"] != "error"}
        self._execute(executor, plan.collect_jobs(self.config), rows, "collect", self.collect_log)
        cases = freeze(rows.values())
        write_json(frozen, cases)
        return cases

    def _check_labels(self, cases: dict[str, Any]) -> None:
        """Every label names a collected case and an event of its source bundle."""
        if self.config.labels_path is None:
            return
        import symtrace
        from symtrace_study.labels import check_against, load_labels

        known = {c["case"]: c for c in cases["cases"]}
        others = {c["case"] for c in [*cases["excluded"], *cases["errors"]]}
        for case_id, label in load_labels(self.config.labels_path).items():
            if case_id in others:
                continue  # a passing (excluded) source: nothing to reproduce
            if case_id not in known:
                raise StudyConfigError(f"rq1.labels: {case_id!r} is not a case of this study "
                                       f"(cases look like {next(iter(known), 'mas/task/s0')!r})")
            bundle = Path(known[case_id]["bundle"])
            check_against(label, symtrace.load_bundle(
                bundle if bundle.is_absolute() else self.out / bundle))

    def _execute(self, executor: Executor, jobs: Sequence[Job], rows: dict[Key, dict[str, Any]],
                 label: str, log: ResultLog | None = None) -> None:
        log = log or self.results
        todo = [j for j in jobs if j.key not in rows]
        if not todo:
            return
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("[red]{task.fields[errors]} errors"), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            bar = progress.add_task(label, total=len(jobs), completed=len(jobs) - len(todo),
                                    errors=0)
            errors = 0
            for row in executor.map(todo):
                if received() is not None:  # a signal arrived: this row may be its victim
                    raise StudyInterrupted(received() or 0)
                log.append(row)  # row by row: a crash loses at most the running attempts
                rows[(row["phase"], row["case"], row["arm"], row["attempt"])] = row
                errors += row["status"] == "error"
                progress.update(bar, advance=1, errors=errors)

    def _judge_reproductions(self, cases: dict[str, Any], rows: dict[Key, dict[str, Any]]
                             ) -> None:
        """RQ1's method-blinded judge (repro_judge.py), after every attempt ran; resumable."""
        if self.config.rq1_judge is None or not self.config.rq1_k:
            return
        from symtrace_study.judging import diagnose_kwargs, make_judge
        from symtrace_study.repro_judge import judge_reproductions

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=self.console, transient=False) as progress:
            bar = progress.add_task("RQ1 judge", total=None)
            judge_reproductions(
                self.config, list(rows.values()), cases["cases"],
                diagnose_kwargs(self.config, make_judge(self.config)),
                progress=lambda done, total: progress.update(bar, completed=done, total=total))

    def _check_errors(self, cases: dict[str, Any], rows: dict[Key, dict[str, Any]]
                      ) -> dict[str, Any]:
        all_rows = list(rows.values())
        errors = [r for r in all_rows if r["status"] == "error"] + cases["errors"]
        total = len(all_rows) + len(cases["cases"]) + len(cases["excluded"]) + len(
            cases["errors"])
        summary = {"rows": len(all_rows), "errors": len(errors), "cases": len(cases["cases"]),
                   "excluded": len(cases["excluded"])}
        if errors:
            self.console.print(f"[bold red]{len(errors)} attempt(s) ended in a system error "
                               "(reported apart, never as failed repairs):[/bold red]")
            for r in errors[:10]:
                self.console.print(f"  {r['case']} {r.get('arm', 'source')} "
                                   f"#{r.get('attempt', 1)}: {r['error']}", markup=False)
        if total and len(errors) / total > self.config.max_error_rate:
            raise TooManyErrors(
                f"{len(errors)}/{total} attempts ended in system errors, more than "
                f"max_error_rate={self.config.max_error_rate}: the results are not usable "
                f"(rows kept in {self.out / 'results.jsonl'})")
        return summary


def changed_settings(previous: dict[str, Any], now: dict[str, Any]
                     ) -> dict[str, tuple[Any, Any]]:
    """The result-affecting settings that differ from a stored study's. A study written
    before settings were stored is compared on what its config records."""
    stored = previous.get("settings")
    if stored is None:
        config = previous.get("config") or {}
        legacy = {"equivalence": "equivalence", "attempts": "attempts", "rq1.k": "rq1_k",
                  "rq1.rerun_prompt": "rq1_prompt", "judge": "judge", "placement": "placement",
                  "crashes": "crashes"}
        stored = {key: config[name] for key, name in legacy.items() if name in config}
        if config.get("templates_path") is None and "templates" in now:
            stored["templates"] = None
    return {key: (stored[key], now.get(key)) for key in sorted(stored)
            if key in now and stored[key] != now[key]} | {
        key: (None, now[key]) for key in sorted(set(now) - set(stored))
        if previous.get("settings") is not None and now[key] is not None}


def freeze(collect_rows: Any) -> dict[str, Any]:
    """The case set: failing sources (kept), passing ones (excluded, listed), errors."""
    cases, excluded, errors = [], [], []
    for row in sorted(collect_rows, key=lambda r: r["case"]):
        if row["status"] == "failed":
            cases.append({k: row.get(k) for k in CASE_FIELDS} | {"source_seed": row["seed"]})
        elif row["status"] == "passed":
            excluded.append({"case": row["case"], "why": "the source run already passes",
                             "answer": row.get("answer")})
        else:
            errors.append({"case": row["case"], "error": row.get("error")})
    return {"cases": cases, "excluded": excluded, "errors": errors}
