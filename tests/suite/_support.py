"""Helpers for the suite tests (a unique module name: test dirs share sys.path).

`record_run` runs one MAS in-process inside `symtrace.record`, against the task-aware policy
served by a real StubLLM and the real services, and returns what the run left behind.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from symtrace_suite.mas import FRAMEWORKS
from symtrace_suite.mas.common import Run, final_value, model_name
from symtrace_suite.policy import SuitePolicy
from symtrace_suite.services import Services
from symtrace_suite.tasks import get_task

import symtrace
from symtrace.stub.server import StubLLM

ADAPTERS = {"ag2": ["ag2"], "crewai": ["crewai"], "magentic_one": ["autogen_agentchat"]}
CREWAI_QUIET = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TRACKING": "1",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "CREWAI_TRACING_ENABLED": "false",
}


@dataclass
class Recorded:
    bundle: Path
    answer: Any
    passed: bool
    reason: str
    llm_requests: int
    service_requests: dict[str, list[dict[str, Any]]]


@contextmanager
def environment(llm: StubLLM, services: Services) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**llm.env(), "SYMTRACE_SUITE_URLS": json.dumps(services.urls)}.items():
            patch.setenv(name, value)
        yield


def wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout: float = 30) -> Any:
    """The JSON a `python -m …` server writes once it listens (fails if it dies first)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
    return json.loads(path.read_text())


def solver(framework: str) -> Any:
    return importlib.import_module(FRAMEWORKS[framework]).solve


def record_run(
    framework: str,
    task_id: str,
    services: Services,
    out: Path,
    *,
    seed: int = 0,
    skill: float = 1.0,
) -> Recorded:
    task = get_task(task_id)
    services.reset()
    with StubLLM(responder=SuitePolicy(seed, skill)) as llm, environment(llm, services):
        with symtrace.record(out, task=task.to_json(), adapters=ADAPTERS[framework]):
            answer = final_value(solver(framework)(Run(task.id, task.prompt, model_name())))
            symtrace.final_result(answer)
        served = llm.served
    verdict = task.evaluate(answer, services.state())
    return Recorded(out, answer, verdict.passed, verdict.reason, served, services.requests())


def replay_run(framework: str, task_id: str, services: Services, bundle: Path) -> tuple[Any, int]:
    """Strict replay of *bundle*; returns (answer, endpoint requests served during it)."""
    task = get_task(task_id)
    services.reset()
    with StubLLM(responder=SuitePolicy(0, 1.0)) as llm, environment(llm, services):
        with symtrace.replay(bundle, adapters=ADAPTERS[framework]):
            answer = final_value(solver(framework)(Run(task.id, task.prompt, model_name())))
            symtrace.final_result(answer)
        return answer, llm.served
