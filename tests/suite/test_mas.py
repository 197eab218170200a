"""Each MAS end to end through its real framework, against the policy and the services.

In-process under `symtrace.record` (framework imports are paid once per test process): a
clean run reaches the services with real tool calls and passes its evaluator; the recording
strict-replays with zero endpoint requests and without touching the services; seeded
mistakes produce failures on which the diagnosis finds an anchor. One run goes through the
`symtrace record -- python -m symtrace_suite.mas.…` command line as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from symtrace_suite.mas.common import final_value, parse_args
from symtrace_suite.services import Services
from symtrace_suite.tasks import get_task

from symtrace.bundle import load_bundle
from symtrace.diagnosis import diagnose, select_anchor
from symtrace.stub.server import StubLLM
from tests.suite._support import CREWAI_QUIET, record_run, replay_run

pytestmark = pytest.mark.slow

CLEAN = {"ag2": "shop-010", "crewai": "multi-001", "magentic_one": "shop-007"}
FRAMEWORKS = sorted(CLEAN)


@pytest.fixture(scope="module", autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """CrewAI writes under HOME/XDG at import and kickoff: keep it in a temp dir."""
    home = tmp_path_factory.mktemp("suite-home")
    (home / "tmp").mkdir()
    env = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "share"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "TMPDIR": str(home / "tmp"),
        "CREWAI_STORAGE_DIR": str(home / "storage"),
        **CREWAI_QUIET,
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(tempfile, "tempdir", env["TMPDIR"])
        yield


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_clean_run_uses_the_services_passes_and_strict_replays(
    framework: str, svc: Services, tmp_path: Path
) -> None:
    task = get_task(CLEAN[framework])
    run = record_run(framework, task.id, svc, tmp_path / "run", seed=0, skill=1.0)
    assert run.passed, run.reason
    called = [(r["method"], r["path"]) for log in run.service_requests.values() for r in log]
    assert len(called) == len([s for s in task.plan if "foreach" not in s]) + (
        2 if task.id == "shop-010" else 0  # two pending orders cancelled
    )
    assert run.llm_requests >= 2
    bundle = load_bundle(run.bundle)
    assert bundle.final_result().response["value"] == run.answer
    tools = [e for e in bundle.events if e.type == "tool_call" and e.request.get("tool") != "http"]
    assert {e.request["tool"] for e in tools} == {s["tool"] for s in task.plan}
    answer, served = replay_run(framework, task.id, svc, run.bundle)
    assert answer == run.answer
    assert served == 0  # every LLM call came from the bundle
    assert all(not log for log in svc.requests().values())  # no tool body ran
    assert select_anchor(diagnose(bundle)) is None  # a clean run shows no symptom


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_seeded_mistakes_fail_the_task_and_the_diagnosis_finds_an_anchor(
    framework: str, svc: Services, tmp_path: Path
) -> None:
    anchored = []
    for seed in range(8):
        run = record_run(framework, "shop-001", svc, tmp_path / f"s{seed}", seed=seed, skill=0.6)
        if run.passed:
            continue
        choice = select_anchor(diagnose(load_bundle(run.bundle)))
        if choice is None:
            continue
        anchored.append((seed, choice.anchor, run.reason))
        break
    assert anchored, "no failing run with an eligible anchor in 8 seeds"


def test_prompt_replaces_the_task_prompt_and_bad_arguments_are_usage_errors(
    svc: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYMTRACE_SUITE_URLS", json.dumps(svc.urls))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    run = parse_args("prog", ["--task", "shop-001", "--prompt", "Mode: critic-agent\nTask: x"])
    assert run.prompt.startswith("Mode: critic-agent") and run.model == "gpt-4o-mini"
    assert parse_args("prog", ["--task", "shop-001"]).prompt == get_task("shop-001").prompt
    with pytest.raises(SystemExit) as exc:
        parse_args("prog", ["--task", "shop-999"])
    assert exc.value.code == 2
    monkeypatch.delenv("SYMTRACE_SUITE_URLS")
    with pytest.raises(SystemExit) as exc:
        parse_args("prog", ["--task", "shop-001"])
    assert exc.value.code == 2
    assert final_value('FINAL ANSWER: {"a": 1}\n\nTERMINATE') == {"a": 1}
    assert final_value("FINAL ANSWER: the total is 3.\n\nTERMINATE") == "the total is 3."
    assert final_value('[{"a": 1}]') == [{"a": 1}]


def test_symtrace_record_command_line_then_strict_replay(svc: Services, tmp_path: Path) -> None:
    from symtrace_suite.policy import SuitePolicy

    task = get_task("route-006")
    svc.reset()
    with StubLLM(responder=SuitePolicy(0, 1.0)) as llm:
        env = {**os.environ, **llm.env(), "SYMTRACE_SUITE_URLS": json.dumps(svc.urls)}
        cmd = [sys.executable, "-m", "symtrace_suite.mas.magentic_one", "--task", task.id]
        symtrace_cli = [sys.executable, "-m", "symtrace"]
        rec = subprocess.run(
            [
                *symtrace_cli,
                "record",
                "-o",
                str(tmp_path / "b"),
                "--task",
                json.dumps(task.to_json()),
                "--",
                *cmd,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert rec.returncode == 0, rec.stderr[-2000:]
        recorded = llm.served
        svc.reset()
        rep = subprocess.run(
            [*symtrace_cli, "replay", str(tmp_path / "b")],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert rep.returncode == 0, rep.stderr[-2000:]
        assert llm.served == recorded  # zero requests during the replay
    assert all(not log for log in svc.requests().values())
    value = load_bundle(tmp_path / "b").final_result().response["value"]
    assert task.evaluate(value, None).passed
    assert rec.stdout.strip().splitlines()[-1] == rep.stdout.strip().splitlines()[-1]


def test_state_at_an_anchor_is_rebuilt_from_the_recorded_writes(
    svc: Services, tmp_path: Path
) -> None:
    """A node-level replay of a mutating task resumes live from the state at the anchor."""
    from symtrace_suite.prefix_state import prefix_mutations, restore_prefix_state

    from symtrace.errors import UnknownEvent

    run = record_run("ag2", "shop-010", svc, tmp_path / "run", seed=0, skill=1.0)
    after = svc.state()
    bundle = load_bundle(run.bundle)
    decisions = [e.id for e in bundle.events if e.type == "agent_action"]
    first, last = decisions[0], decisions[-1]
    assert prefix_mutations(bundle, first) == []
    writes = prefix_mutations(bundle, last)
    assert writes == [
        ("shop_cancel_order", {"order_id": "O-1034"}),
        ("shop_cancel_order", {"order_id": "O-1016"}),
    ]
    svc.reset()
    assert restore_prefix_state(run.bundle, last, svc.urls) == writes
    assert svc.state() == after
    restore_prefix_state(bundle, first, svc.urls)
    assert svc.state()["shop"]["orders"]["O-1034"]["status"] == "pending"
    with pytest.raises(UnknownEvent):
        restore_prefix_state(bundle, "agent_action_9999", svc.urls)
