"""Run integrity of a long paid study, without running programs: a resume with a changed
result-affecting setting is refused by name, system errors are retried, a signal stops the run
with 130/143 and no row for the attempts in flight, provider faults are infrastructure, the
judge is checked before any attempt, and the per-attempt LLM accounting."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson
import pytest
from symtrace_study import interrupt
from symtrace_study import study as study_module
from symtrace_study.__main__ import main as cli
from symtrace_study.config import parse_config
from symtrace_study.errors import (
    JudgeUnavailable,
    StudyConfigChanged,
    StudyInterrupted,
    TooManyErrors,
)
from symtrace_study.llm_usage import usage_summary

from tests.experiments._support import TASKS, FakeExecutor, config_for, fake_row, run

ROOT = Path(__file__).resolve().parents[2]


def rows_of(path: Path) -> dict:
    out = {}
    for line in path.read_bytes().splitlines():
        row = orjson.loads(line)
        out[(row["phase"], row["case"], row["arm"], row["attempt"])] = {
            k: v for k, v in row.items() if k != "timing"}
    return out


TEMPLATES = ROOT / "experiments" / "configs" / "templates-paper.json"


@pytest.mark.parametrize(("change", "key"), [
    ({"rq1": {"k": 3, "equivalence": "verdict"}}, "equivalence"),
    ({"attempts": 2}, "attempts"),
    ({"rq1": {"k": 2}}, "rq1.k"),
    ({"judge": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}}, "judge"),
    ({"templates": str(TEMPLATES)}, "templates"),
    ({"diagnosis": {"trace_back": False}}, "diagnosis.trace_back"),
    ({"diagnosis": {"theta": 0.5}}, "diagnosis.theta"),
    ({"crashes": "system_error"}, "crashes"),
    ({"rq1": {"k": 3, "rerun_prompt": "original"}}, "rq1.rerun_prompt"),
])
def test_resume_refuses_a_changed_result_affecting_setting_by_name(
        tmp_path, monkeypatch, change, key):
    monkeypatch.setattr("symtrace_study.study.preflight", lambda config: None)
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    before = (config.out / "results.jsonl").read_bytes()
    study_json = (config.out / "study.json").read_bytes()
    changed = config_for(tmp_path, **change)
    again = FakeExecutor()
    with pytest.raises(StudyConfigChanged, match=key.replace(".", r"\.")) as caught:
        run(changed, again, monkeypatch, resume=True)
    assert key in caught.value.changed and len(caught.value.changed) == 1
    assert again.jobs == []  # nothing ran, nothing was relabelled
    assert (config.out / "results.jsonl").read_bytes() == before
    assert (config.out / "study.json").read_bytes() == study_json
    run(config_for(tmp_path), FakeExecutor(), monkeypatch, resume=True)  # unchanged: fine


def test_resume_refusal_through_the_cli_exits_2(tmp_path, monkeypatch):
    path = tmp_path / "c.json"
    raw = {"out": str(tmp_path / "cli"), "mas": ["plain"], "tasks": TASKS, "seeds": [0]}
    path.write_bytes(orjson.dumps(raw))
    monkeypatch.setattr(study_module, "open_executor", lambda *a: FakeExecutor())
    assert cli(["run", str(path), "--no-report"]) == 0
    path.write_bytes(orjson.dumps({**raw, "attempts": 1}))
    assert cli(["run", str(path), "--resume", "--no-report"]) == 2


def test_legacy_study_json_without_settings_is_compared_on_its_config(tmp_path, monkeypatch):
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    stored = orjson.loads((config.out / "study.json").read_bytes())
    stored.pop("settings")
    (config.out / "study.json").write_bytes(orjson.dumps(stored))
    with pytest.raises(StudyConfigChanged, match="equivalence"):
        run(config_for(tmp_path, rq1={"k": 3, "equivalence": "answer"}), FakeExecutor(),
            monkeypatch, resume=True)


class FlakyExecutor(FakeExecutor):
    """The first run's node arms and one source end in system errors (an outage)."""

    def map(self, jobs):
        for row in super().map(jobs):
            if row["arm"] in ("suspicious", "random") or row["case"] == "plain/wiki-001/s1":
                row.update(status="error", error_kind="infrastructure", error="503 outage")
            yield row


def test_system_errors_are_retried_on_resume(tmp_path, monkeypatch):
    clean = config_for(tmp_path / "clean")
    run(clean, FakeExecutor(), monkeypatch)
    config = config_for(tmp_path / "flaky")
    with pytest.raises(TooManyErrors):
        run(config, FlakyExecutor(), monkeypatch)
    frozen = orjson.loads((config.out / "cases.json").read_bytes())
    assert [e["case"] for e in frozen["errors"]] == ["plain/wiki-001/s1"]
    second = FakeExecutor()
    run(config, second, monkeypatch, resume=True)
    retried = {j.key for j in second.jobs}
    assert ("collect", "plain/wiki-001/s1", "source", 1) in retried
    assert all(j.arm in ("suspicious", "random", "source") or j.case_id == "plain/wiki-001/s1"
               for j in second.jobs)  # nothing that succeeded ran again
    assert rows_of(config.out / "results.jsonl") == rows_of(clean.out / "results.jsonl")
    assert orjson.loads((config.out / "cases.json").read_bytes()) == orjson.loads(
        (clean.out / "cases.json").read_bytes())


class SignalExecutor(FakeExecutor):
    """Delivers *signum* to this process while the (n+1)-th attempt runs."""

    def __init__(self, signum: int, after: int) -> None:
        super().__init__()
        self.signum, self.after = signum, after

    def map(self, jobs):
        for job in jobs:
            if len(self.jobs) == self.after:
                os.kill(os.getpid(), self.signum)  # the handler raises here, mid-attempt
            self.jobs.append(job)
            yield fake_row(job)


@pytest.fixture
def handlers():
    saved = {s: signal.getsignal(s) for s in interrupt.HANDLED}
    interrupt.reset()
    interrupt.install()
    yield
    interrupt.reset()
    for s, h in saved.items():
        signal.signal(s, h)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_run_without_rows_for_attempts_in_flight_and_resume_finishes(
        tmp_path, monkeypatch, handlers, signum, code):
    clean = config_for(tmp_path / "clean")
    run(clean, FakeExecutor(), monkeypatch)
    config = config_for(tmp_path / "cut")
    with pytest.raises(StudyInterrupted) as caught:
        run(config, SignalExecutor(signum, after=9), monkeypatch)
    assert caught.value.exit_code == code
    partial = rows_of(config.out / "results.jsonl")
    assert len(partial) == 9 - 6  # 6 sources collected, 3 attempts; the 10th never a row
    runs = [orjson.loads(x) for x in (config.out / "runs.jsonl").read_bytes().splitlines()]
    assert runs[-1]["interrupted"] == signum
    interrupt.reset()
    run(config, FakeExecutor(), monkeypatch, resume=True)
    assert rows_of(config.out / "results.jsonl") == rows_of(clean.out / "results.jsonl")


def test_a_signal_swallowed_inside_an_attempt_still_gives_no_row(tmp_path, monkeypatch,
                                                                  handlers):
    """symtrace's supervisor holds the handlers while a program runs: the attempt runner
    turns its interrupted outcome into StudyInterrupted (attempts._check_signal)."""
    from symtrace_study.attempts import _check_signal

    with pytest.raises(StudyInterrupted) as caught:
        _check_signal("SIGTERM")
    assert caught.value.exit_code == 143 and interrupt.received() == signal.SIGTERM
    _check_signal(None)  # no signal: nothing happens


def test_an_unreachable_judge_is_a_typed_error_before_any_attempt(tmp_path, monkeypatch):
    config = config_for(tmp_path, judge={"base_url": "http://127.0.0.1:9/v1", "model": "j"})
    executor = FakeExecutor()
    with pytest.raises(JudgeUnavailable, match="pre-flight"):
        run(config, executor, monkeypatch)
    assert executor.jobs == [] and not config.out.exists()


def test_a_reachable_judge_passes_the_preflight(tmp_path):
    from symtrace_study.judging import preflight

    from symtrace.stub.server import StubLLM

    script = {"rules": [], "default": {"content": '{"confirmed": [], "confidence": 0.1, '
                                                  '"rationale": "nothing to confirm"}'}}
    with StubLLM(script=script) as stub:
        preflight(config_for(tmp_path, judge={"base_url": stub.env()["OPENAI_BASE_URL"],
                                              "model": "judge"}))


@pytest.mark.parametrize("tail", [
    "openai.RateLimitError: Error code: 429 - {'error': {'message': 'slow down'}}",
    "openai.InternalServerError: Error code: 503 - {'error': {'message': 'overloaded'}}",
    "litellm.exceptions.ServiceUnavailableError: litellm.ServiceUnavailableError: 503",
    "openai.APITimeoutError: Request timed out.",
])
def test_provider_faults_after_the_sdk_retries_are_infrastructure(tmp_path, tail):
    from symtrace_study.attempts import AttemptRunner, InfrastructureFault

    runner = AttemptRunner.__new__(AttemptRunner)
    log = tmp_path / "stderr.log"
    log.write_text("Traceback (most recent call last):\n  ...\n" + tail + "\n")
    runner._stderr = log
    with pytest.raises(InfrastructureFault):
        runner._check_exit(1)


def test_a_program_bug_stays_a_program_crash(tmp_path):
    from symtrace_study.attempts import AttemptRunner, ProgramFailure

    runner = AttemptRunner.__new__(AttemptRunner)
    log = tmp_path / "stderr.log"
    log.write_text("Traceback (most recent call last):\nKeyError: 'price'\n")
    runner._stderr = log
    with pytest.raises(ProgramFailure):
        runner._check_exit(1)


class _Event:
    def __init__(self, request, response, is_llm=True):
        self.request, self.response, self.is_llm = request, response, is_llm


def test_usage_summary_counts_calls_apart_from_provider_errors():
    events = [
        _Event({"body": {"model": "gpt-x", "temperature": 0}},
               {"status": 429, "body": {"error": {"message": "slow down"}}}),
        _Event({"body": {"model": "gpt-x", "temperature": 0, "seed": 0}},
               {"status": 200, "body": {"model": "gpt-x-2025", "usage": {
                   "prompt_tokens": 10, "completion_tokens": 3}}}),
        _Event({"body": {"model": "claude", "max_tokens": 64}},
               {"status": 200, "body": {"model": "claude-3", "usage": {
                   "input_tokens": 7, "output_tokens": 2}}}),
        _Event({"tool": "x"}, {"ok": True}, is_llm=False),
    ]
    summary = usage_summary(events)
    assert summary == {
        "calls": 2, "provider_errors": 1, "models_requested": ["claude", "gpt-x"],
        "models_served": ["claude-3", "gpt-x-2025"],
        "sampling": [{"temperature": 0, "seed": 0}, {"max_tokens": 64}],
        "tokens": {"prompt": 17, "completion": 5}}


@pytest.mark.parametrize(("raw", "needle"), [
    ({"diagnosis": {"trace_back": "yes"}}, "trace_back"),
    ({"diagnosis": {"theta": 2}}, "theta"),
    ({"diagnosis": {"alpha": 1}}, "diagnosis"),
    ({"infra_backoff": -1}, "infra_backoff"),
    ({"backend": {"kind": "stub", "faults": [200]}}, "faults"),
    ({"backend": {"kind": "openai", "base_url": "http://x", "faults": [429]}}, "stub backend"),
    ({"rq1": {"k": 1, "labels": "no-such-labels.json"}}, "labels"),
    ({"rq1": {"k": 1, "colour": 1}}, "rq1 keys"),
])
def test_new_config_keys_are_validated(tmp_path, raw, needle):
    from symtrace_study.errors import StudyConfigError

    with pytest.raises(StudyConfigError, match=needle):
        parse_config({"out": str(tmp_path / "o"), **raw})


def test_faults_do_not_change_the_fingerprint_of_a_healthy_config(tmp_path):
    healthy = config_for(tmp_path)
    assert healthy.fingerprint() == config_for(tmp_path, backend={"kind": "stub"}).fingerprint()


def test_an_anchor_request_that_never_reached_the_model_is_infrastructure():
    """Issue 39's GuidedAnchorFailed surfaces as divergence SYM-R109 of the replay."""
    from types import SimpleNamespace

    from symtrace_study.attempts import InfrastructureFault, check_anchor_reached

    from symtrace.model.divergence import DivergenceKind

    def report(kind: DivergenceKind, text: str) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, render=lambda: text)

    failed = SimpleNamespace(diverged=True, report_json={"status": "diverged"}, report=report(
        DivergenceKind.ANCHOR_FAILED,
        "[SYM-R109] no guided attempt of the anchor succeeded at agent_action_0002"))
    with pytest.raises(InfrastructureFault, match="SYM-R109"):
        check_anchor_reached(failed)
    other = SimpleNamespace(diverged=True, report_json={"status": "diverged"}, report=report(
        DivergenceKind.REQUEST_MISMATCH, "[SYM-R101] request mismatch (mentions SYM-R109)"))
    check_anchor_reached(other)  # a real divergence stays what it was, whatever its text
    check_anchor_reached(SimpleNamespace(diverged=False, report=None, report_json=None))
