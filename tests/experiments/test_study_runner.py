"""The study runner's bookkeeping without running programs: seeds, resume, frozen cases,
exclusions and config errors."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from symtrace_study import jobs as plan
from symtrace_study import study as study_module
from symtrace_study.__main__ import main as cli
from symtrace_study.config import METHODS, load_config, parse_config
from symtrace_study.errors import StudyConfigError, StudyStateError
from symtrace_study.results import ResultLog
from symtrace_study.study import Study, freeze

from tests.experiments._support import TASKS, Crash, FakeExecutor, config_for, fake_row, run

ROOT = Path(__file__).resolve().parents[2]


def rows_of(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def strip(rows):
    return sorted(orjson.dumps({k: v for k, v in r.items() if k != "timing"},
                                option=orjson.OPT_SORT_KEYS) for r in rows)


def test_random_node_is_seeded_per_case_and_rows_carry_the_attempt_seed(tmp_path):
    config = config_for(tmp_path)
    cases = [{"case": f"plain/{t}/s0", "mas": "plain", "task": t, "case_seed": 0}
             for t in ("shop-001", "wiki-001", "route-001")]
    random_jobs = [j for j in plan.first_round(config, cases) if j.arm == "random"]
    assert len({j.seed for j in random_jobs}) == 3  # the old runner used one RNG/seed for all
    rerun = [j for j in plan.first_round(config, cases) if j.arm == "rerun" and j.phase == "repair"]
    assert len({j.seed for j in rerun}) == 3
    row = fake_row(random_jobs[0])
    assert row["seed"] == random_jobs[0].seed != config.seeds[0]
    # the same case gets the same seed whatever else is in the study (order independence)
    alone = [j for j in plan.first_round(config, cases[1:2]) if j.arm == "random"]
    assert alone[0].seed == random_jobs[1].seed


def test_random_node_draws_differ_between_cases(tmp_path):
    """With per-case seeds, Random-Node does not pick the same position in every case."""
    import symtrace
    from symtrace.diagnosis import diagnose
    from symtrace.diagnosis.anchors import AnchorPolicy
    from symtrace.diagnosis.pipeline import select_anchor

    diagnosis = diagnose(symtrace.load_bundle(ROOT / "bundles" / "autogen_agentchat-magentic_one"))
    picks = set()
    for seed in (plan.derive_seed(0, f"case-{i}", "repair", "random", 1) for i in range(8)):
        choice = select_anchor(diagnosis, AnchorPolicy.RANDOM, seed=seed)
        if choice is not None:
            picks.add(choice.anchor)
    assert len(picks) >= 2


def test_resume_after_a_crash_gives_the_same_rows_without_duplicates(tmp_path, monkeypatch):
    whole = config_for(tmp_path / "a")
    run(whole, FakeExecutor(), monkeypatch)
    expected = rows_of(whole.out / "results.jsonl")
    crashed = config_for(tmp_path / "b")
    with pytest.raises(Crash):
        run(crashed, FakeExecutor(crash_after=9), monkeypatch)
    partial = rows_of(crashed.out / "results.jsonl")
    assert 0 < len(partial) < len(expected)
    with (crashed.out / "results.jsonl").open("ab") as fh:
        fh.write(b'{"phase": "repair", "case": "torn')  # a write cut short by the crash
    second = FakeExecutor()
    run(crashed, second, monkeypatch, resume=True)
    final = rows_of(crashed.out / "results.jsonl")
    keys = [(r["phase"], r["case"], r["arm"], r["attempt"]) for r in final]
    assert len(keys) == len(set(keys))  # no duplicate rows
    assert strip(final) == strip(expected)
    assert all(j.phase != "collect" for j in second.jobs)  # the case set was already frozen
    done = {(r["phase"], r["case"], r["arm"], r["attempt"]) for r in partial}
    assert not done & {j.key for j in second.jobs}  # nothing done twice


def test_frozen_case_set_is_reused(tmp_path, monkeypatch):
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    frozen = orjson.loads((config.out / "cases.json").read_bytes())
    again = FakeExecutor()
    run(config, again, monkeypatch)
    assert again.jobs == []  # nothing left to do, no recollection
    assert orjson.loads((config.out / "cases.json").read_bytes()) == frozen
    # another study reuses the frozen set by path
    other = config_for(tmp_path / "other", cases=str(config.out / "cases.json"),
                       methods=["suspicious", "rerun"])
    third = FakeExecutor()
    run(other, third, monkeypatch)
    assert third.jobs and all(j.phase != "collect" for j in third.jobs)
    reused = orjson.loads((other.out / "cases.json").read_bytes())
    assert [c["case"] for c in reused["cases"]] == [c["case"] for c in frozen["cases"]]
    assert all(Path(c["bundle"]).is_absolute() for c in reused["cases"])


def test_passing_sources_are_listed_as_excluded(tmp_path, monkeypatch):
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    frozen = orjson.loads((config.out / "cases.json").read_bytes())
    assert {e["case"] for e in frozen["excluded"]} == {"plain/shop-002/s0", "plain/shop-002/s1"}
    assert "shop-002" not in {c["task"] for c in frozen["cases"]}
    rows = [{"case": "x", "status": "error", "error": "boom"}]
    assert freeze(rows)["errors"] == [{"case": "x", "error": "boom"}]


def test_task_arms_stop_at_the_first_pass_or_error(tmp_path, monkeypatch):
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    rows = rows_of(config.out / "results.jsonl")
    for case in {r["case"] for r in rows}:
        for arm in ("rerun", "self_reflection", "critic"):
            attempts = sorted((r for r in rows if r["case"] == case and r["arm"] == arm
                               and r["phase"] == "repair"), key=lambda r: r["attempt"])
            assert 1 <= len(attempts) <= 3
            assert all(r["status"] == "failed" for r in attempts[:-1])
        for arm in ("suspicious", "random", "last"):
            assert len([r for r in rows if r["case"] == case and r["arm"] == arm]) == 1
        assert len([r for r in rows if r["case"] == case and r["phase"] == "rq1"]) == 6


def test_resume_refuses_another_study(tmp_path, monkeypatch):
    config = config_for(tmp_path)
    run(config, FakeExecutor(), monkeypatch)
    changed = config_for(tmp_path, tasks=["shop-001"])
    with pytest.raises(StudyStateError):
        run(changed, FakeExecutor(), monkeypatch)
    with pytest.raises(StudyStateError):
        run(config_for(tmp_path / "empty"), FakeExecutor(), monkeypatch, resume=True)


def test_torn_last_line_is_dropped(tmp_path):
    log = ResultLog(tmp_path / "r.jsonl")
    log.append({"phase": "rq1", "case": "c", "arm": "replay", "attempt": 1, "status": "x"})
    with log.path.open("ab") as fh:
        fh.write(b'{"phase": "rq1"')
    assert len(log.load()) == 1
    log.append({"phase": "rq1", "case": "c", "arm": "replay", "attempt": 2, "status": "x"})
    assert len(log.load()) == 2


@pytest.mark.parametrize(("raw", "needle"), [
    ({"methods": ["suspicious", "magic"]}, "unknown methods"),
    ({"backend": {"kind": "gpu"}}, "unknown backend"),
    ({"backend": {"kind": "openai"}}, "base_url"),
    ({"tasks": ["no-such-task"]}, "unknown tasks"),
    ({"mas": ["autogpt"]}, "unknown MAS"),
    ({"mas": [{"name": "mine", "command": ["python", "x.py"]}]}, "{task}"),
    ({"reference": "critic", "methods": ["suspicious"]}, "reference"),
    ({"rq1": {"k": 2, "equivalence": "vibes"}}, "equivalence"),
    ({"attempts": 0}, "attempts"),
    ({"templates": "no-such-file.json"}, "templates"),
    ({"cases": "no-such-cases.json"}, "frozen case set"),
    ({"max_error_rate": 2}, "max_error_rate"),
    ({"judge": {"model": "m"}}, "judge needs base_url"),
    ({"rq1": {"k": 1, "rerun_prompt": "fancy"}}, "rerun_prompt"),
    ({"colour": "blue"}, "unknown config keys"),
])
def test_bad_configs_are_typed_errors_and_write_nothing(tmp_path, raw, needle, capsys):
    out = tmp_path / "out"
    path = tmp_path / "study.json"
    path.write_bytes(orjson.dumps({"out": str(out), **raw}))
    with pytest.raises(StudyConfigError, match=needle.replace("{", r"\{").replace("}", r"\}")):
        load_config(path)
    assert cli(["run", str(path)]) == 2
    assert not out.exists()


def test_missing_and_malformed_config_files(tmp_path):
    with pytest.raises(StudyConfigError, match="cannot read"):
        load_config(tmp_path / "absent.json")
    bad = tmp_path / "bad.toml"
    bad.write_text("out = [")
    with pytest.raises(StudyConfigError, match="not valid toml"):
        load_config(bad)
    assert cli(["run", str(tmp_path / "absent.json")]) == 2
    assert cli(["report", str(tmp_path / "nothing")]) == 2


def test_toml_config_and_shipped_configs_load(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('out = "o"\nmas = ["plain"]\ntasks = ["shop-001"]\n'
                    '[backend]\nkind = "stub"\nskill = 0.5\n')
    config = load_config(toml)
    assert config.backend.skill == 0.5 and config.methods == METHODS
    for name in ("suite-stub.json", "suite-local.json"):
        shipped = load_config(ROOT / "experiments" / "configs" / name)
        assert set(shipped.methods) == set(METHODS)
        assert {m.name for m in shipped.mas} == {"ag2", "crewai", "magentic"}


def test_paper_templates_load_with_the_papers_wording():
    from symtrace.diagnosis.templates import load_templates

    path = ROOT / "experiments" / "configs" / "templates-paper.json"
    templates = load_templates(path)
    assert templates.texts["generic_node"] == (
        "Re-check the task requirements and the selected step. Correct any issue at this "
        "step, then regenerate the affected downstream actions or artifacts.")
    assert "Mode: fail-then-rerun" in templates.texts["unguided_rerun"]
    config = parse_config({"templates": str(path)})
    assert config.templates().texts == templates.texts


class ErrorExecutor(FakeExecutor):
    """Every node-arm attempt is a system error (e.g. its replay cannot reach an endpoint)."""

    def map(self, jobs):
        for row in super().map(jobs):
            if row["arm"] in ("suspicious", "random", "last"):
                row.update(status="error", error="ConnectError: connection refused")
            yield row


def test_system_errors_are_counted_apart_and_fail_the_run(tmp_path, monkeypatch, capsys):
    from symtrace_study.analysis import summarise
    from symtrace_study.errors import TooManyErrors
    from symtrace_study.report import load_study

    config = config_for(tmp_path)
    with pytest.raises(TooManyErrors, match="system errors"):
        run(config, ErrorExecutor(), monkeypatch)
    summary = summarise(*load_study(config.out))
    table = summary["families"]["plain"]["methods"]
    cases = summary["families"]["plain"]["cases"]
    for arm in ("suspicious", "random", "last"):
        assert table[arm]["n"] == 0 and table[arm]["errors"] == cases  # never failed repairs
    assert summary["system_errors"] == 3 * cases
    # the CLI exits non-zero and still writes the report, which shows the errors
    path = tmp_path / "c.json"
    path.write_bytes(orjson.dumps({"out": str(tmp_path / "cli"), "mas": ["plain"],
                                   "tasks": TASKS, "seeds": [0]}))
    monkeypatch.setattr(study_module, "open_executor", lambda *a: ErrorExecutor())
    assert cli(["run", str(path)]) == 3
    assert "System errors (reported apart, never failed repairs): **" in (
        tmp_path / "cli" / "report.md").read_text()


def test_missing_extras_are_typed_errors_before_anything_is_written(tmp_path, monkeypatch):
    import sys

    from symtrace_study.errors import BackendUnavailable
    from symtrace_study.pool import open_executor

    from symtrace.localllm import weights

    def no_runtime():
        raise weights.LocalLLMUnavailable("llama-cpp-python[server] is not installed")

    monkeypatch.setattr(weights, "require_runtime", no_runtime)
    local = config_for(tmp_path, backend={"kind": "local"})
    with pytest.raises(BackendUnavailable, match="local-llm"):
        Study(local, Console(file=io.StringIO())).run()
    assert not local.out.exists()
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the `ray` extra were not installed
    with pytest.raises(BackendUnavailable, match="symtrace\\[ray\\]"):
        open_executor(config_for(tmp_path), 2, "ray")
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(StudyConfigError, match="NO_SUCH_KEY_VAR"):
        open_executor(config_for(tmp_path, backend={
            "kind": "openai", "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": "NO_SUCH_KEY_VAR"}), 1, "local")


def test_judge_config_builds_an_openai_compatible_judge(tmp_path, monkeypatch):
    from symtrace_study.attempts import _judge

    from symtrace.diagnosis.judge import OpenAIJudge

    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    config = config_for(tmp_path, judge={"base_url": "http://127.0.0.1:9/v1", "model": "j",
                                         "api_key_env": "JUDGE_KEY"})
    judge = _judge(config)
    assert isinstance(judge, OpenAIJudge) and judge.model == "j"
    assert _judge(config_for(tmp_path)) is None
