"""The local suite as a study benchmark (the first user of `symtrace_study.benchmark`).

Task source: data/tasks.json. Environment: the three services in their own process
(`python -m symtrace_suite.services --ready-file F`, ephemeral loopback ports), reset and read
over HTTP, prefix writes re-applied by `prefix_state`. Evaluator: the tasks' native checks.
MAS commands: the paper's three shapes and the framework-free `plain` one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from symtrace_suite.tasks import Task, Verdict, load_tasks

READY_TIMEOUT = 60.0
MAS_MODULES = {
    "ag2": "symtrace_suite.mas.ag2_groupchat",
    "crewai": "symtrace_suite.mas.crewai_crew",
    "magentic": "symtrace_suite.mas.magentic_one",
    "plain": "symtrace_study.plain_mas",
}


class ServicesUnavailable(RuntimeError):
    """The services process did not start (its log says why)."""


class SuiteEnvironment:
    """One services process on ephemeral loopback ports, owned by one worker."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="symtrace-suite-"))
        ready = self._dir / "ready.json"
        self._log = (self._dir / "services.log").open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "symtrace_suite.services", "--ready-file", str(ready)],
            stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                log = self._dir / "services.log"
                text = log.read_text(errors="replace")[-400:] if log.exists() else ""
                self.close()
                raise ServicesUnavailable(f"the suite services did not start: {text}")
            time.sleep(0.05)
        self.urls: dict[str, str] = orjson.loads(ready.read_bytes())["urls"]

    def env(self) -> dict[str, str]:
        return {"SYMTRACE_SUITE_URLS": orjson.dumps(self.urls, option=orjson.OPT_SORT_KEYS
                                                    ).decode()}

    def reset(self) -> None:
        from symtrace_suite.services import remote_reset

        remote_reset(self.urls)

    def state(self) -> dict[str, Any]:
        from symtrace_suite.services import remote_state

        return remote_state(self.urls)

    def restore_prefix(self, bundle: Any, anchor: str) -> Sequence[Any]:
        from symtrace_suite.prefix_state import restore_prefix_state

        return restore_prefix_state(bundle, anchor, self.urls)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class SuiteBenchmark:
    name = "symtrace_suite"

    def tasks(self) -> list[Task]:
        return load_tasks()

    def open_environment(self) -> SuiteEnvironment:
        return SuiteEnvironment()

    def evaluate(self, task: Task, answer: Any, state: Any) -> Verdict:
        return task.evaluate(answer, state)

    def mas_commands(self) -> Mapping[str, Sequence[str]]:
        return {name: ("python", "-m", module, "--task", "{task}")
                for name, module in MAS_MODULES.items()}

    def task_split(self, task: Task) -> str:
        return task.site  # the suite's sites (shop, wiki, route, multi) are its splits

    def stub_responder(self, seed: int, skill: float) -> Any:
        from symtrace_suite.policy import SuitePolicy

        return SuitePolicy(seed=seed, skill=skill, tasks=load_tasks())

    def stub_disclosure(self) -> list[str]:
        """Which comparisons the stub policy decides by construction (the report prints it)."""
        from symtrace_suite.policy import SUPPRESSION

        def pct(kind: str, relevant: bool = True) -> str:
            return f"{100 * SUPPRESSION[kind][0 if relevant else 1]:.0f}%"

        return [
            f"A drawn mistake is avoided with a fixed probability per guidance kind: diagnosis "
            f"Δ naming a relevant category {pct('suspicious')} (an unrelated one "
            f"{pct('suspicious', False)}), generic node Δ {pct('generic')}, critic prompt "
            f"{pct('critic')} on unsupported claims ({pct('critic', False)} otherwise), "
            f"self-reflection {pct('self_reflection')}, unguided rerun {pct('rerun')}. "
            "These are parameters of the simulation (symtrace_suite.policy.SUPPRESSION).",
            "So by construction: suspicious beats random/last whenever its Δ names the "
            "category of the mistake at the anchor; self-reflection and critic beat the "
            "unguided rerun (which only draws a new sample); any Δ at an anchor at or "
            "before the mistake lowers its rate there, where a rerun only redraws it.",
            "RQ1: the stub draws each decision's mistake from the attempt's seed and the "
            "request, with no memory of the source run. A replay keeps the prefix but "
            "regenerates the target decision itself, so the source's mistake there recurs "
            "with probability about 1 − skill, as in a rerun; replay can reproduce more "
            "often only through what the kept prefix already holds. A real model's "
            "consistency under the same context (the paper's 80.78% rep_1) is not modelled.",
            "What the stub does test: that the pipeline records, replays to the right "
            "anchor, restores the prefix state, scores and aggregates without bias, and that "
            "sequential, parallel and warm runs give identical rows.",
        ]


BENCHMARK = SuiteBenchmark()
