"""Issue 22, point 7: a benchmark that is not the suite runs through the plug-in surface.

`tests.experiments.toybench` brings its own tasks, environment (a JSON state file), evaluator,
MAS and stub policy; the study records, replays to anchors (restoring its prefix writes),
scores and reports it like the suite.
"""

from __future__ import annotations

import io
import sys
import types

import orjson
import pytest
from rich.console import Console
from symtrace_study.benchmark import load_benchmark
from symtrace_study.config import parse_config
from symtrace_study.errors import StudyConfigError
from symtrace_study.launch import CLIENT, unwrap
from symtrace_study.report import write_report
from symtrace_study.study import Study

TOY = "tests.experiments.toybench:BENCHMARK"


def toy_config(out, **extra):
    return parse_config({"benchmark": TOY, "out": str(out), "mas": ["toy"], "tasks": "all",
                         "seeds": [0, 1], "attempts": 1, "rq1": {"k": 1},
                         "backend": {"kind": "stub", "skill": 0.3}, "max_error_rate": 0.0,
                         **extra})


def rows(out) -> dict[tuple, dict]:
    found = {}
    for name in ("collect.jsonl", "results.jsonl"):
        for line in (out / name).read_bytes().splitlines():
            row = orjson.loads(line)
            found[(row["phase"], row["case"], row["arm"], row["attempt"])] = {
                k: v for k, v in row.items()
                if k not in ("timing", "bundle_digest", "traceback", "versions")}
    return found


@pytest.fixture(scope="module")
def cold_study(tmp_path_factory):
    """The toy study, sequential and cold (one fresh interpreter per attempt)."""
    config = toy_config(tmp_path_factory.mktemp("toy") / "cold")
    Study(config, Console(file=io.StringIO())).run(workers=1, backend="local")
    return config


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_second_benchmark_runs_end_to_end_through_the_plugin_surface(cold_study):
    config = cold_study
    assert config.tasks == ("add-3", "note")
    frozen = orjson.loads((config.out / "cases.json").read_bytes())
    assert frozen["cases"] and frozen["excluded"] and not frozen["errors"]
    result = rows(config.out)
    assert all(r["status"] != "error" for r in result.values()), result
    arms = {k[2] for k in result if k[0] == "repair"}
    assert arms == {"suspicious", "random", "last", "rerun", "self_reflection", "critic"}
    # the task T a bundle stores, and the prompt of a task arm, come from the plug-in
    rerun = next(r for k, r in result.items() if k[0] == "repair" and k[2] == "rerun")
    import symtrace

    bundle = symtrace.load_bundle(config.out / rerun["bundle"])
    assert bundle.task["tools"] == ["toy_read", "toy_add"]
    prompts = [e.request for e in bundle.events if e.is_llm]
    assert "Start URLs or tools: toy_read, toy_add" in orjson.dumps(prompts).decode()
    # a mutating case replayed at its last decision sees the prefix's toy_add (restored)
    mutating = [k for k in result if k[0] == "repair" and "add-3" in k[1] and k[2] == "last"]
    assert mutating
    write_report(config.out)
    assert "tests.experiments.toybench:BENCHMARK" in (config.out / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_warm_workers_give_the_same_rows_as_cold_sequential(cold_study, tmp_path):
    """Issue 22 (8): two warm workers (fork servers) reproduce the cold sequential rows."""
    cold = cold_study
    warm = toy_config(tmp_path / "warm")
    Study(warm, Console(file=io.StringIO())).run(workers=2, backend="warm")
    a, b = rows(cold.out), rows(warm.out)
    assert a.keys() == b.keys() and len(a) > 15
    for key in a:
        assert a[key] == b[key], key
    # the warm bundles were made through the client, and replay without it as well
    import symtrace

    source = symtrace.load_bundle(warm.out / "sources" / "toy" / "add-3" / "s0")
    argv = source.config["command"]["argv"]
    assert argv[2] == str(CLIENT) and unwrap(argv)[:3] == ["python", "-m",
                                                           "tests.experiments.toybench.mas"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_restored_prefix_reaches_the_plugin_environment(tmp_path):
    """Record a passing add-3 run, then regenerate only its final answer: the counter the
    evaluator reads must hold the recorded toy_add."""
    from symtrace_study import jobs as plan
    from symtrace_study.jobs import Job
    from symtrace_study.worker import Worker

    config = toy_config(tmp_path / "one", backend={"kind": "stub", "skill": 1.0})
    worker = Worker(config)
    try:
        [source] = [j for j in plan.collect_jobs(config) if j.task == "add-3" and j.seed
                    == plan.collect_jobs(config)[0].seed]
        row = worker.run(source)
        assert row["status"] == "passed", row
        case = {k: row.get(k) for k in ("case", "mas", "task", "case_seed", "bundle", "answer",
                                        "reason")}
        job = Job("repair", "node", case["case"], "toy", "add-3", "last", 1, 11, case)
        repaired = worker.run(job)
        assert repaired["status"] == "passed", repaired
    finally:
        worker.close()


@pytest.mark.parametrize(("spec", "needle"), [
    ("no_such_module_xyz:THING", "cannot import"),
    ("tests.experiments.toybench:NOPE", "has no 'NOPE'"),
    ("justamodule", "expected"),
    ({"entry_point": "no-such-benchmark"}, "no entry point"),
    ({"module": "x"}, "benchmark must be"),
    ("test_study_plugin_fake:HALF", "missing"),
])
def test_bad_benchmarks_are_config_errors(tmp_path, spec, needle, monkeypatch):
    half = types.ModuleType("test_study_plugin_fake")
    half.HALF = types.SimpleNamespace(name="half", tasks=list)  # no environment etc.
    monkeypatch.setitem(sys.modules, "test_study_plugin_fake", half)
    with pytest.raises(StudyConfigError, match=needle):
        parse_config({"benchmark": spec, "out": str(tmp_path / "o")})
    assert not (tmp_path / "o").exists()


def test_stub_backend_needs_the_benchmarks_stub_policy(tmp_path, monkeypatch):
    from tests.experiments import toybench

    class NoStub(toybench.ToyBenchmark):
        stub_responder = None  # type: ignore[assignment]

    module = types.ModuleType("test_study_plugin_nostub")
    module.B = NoStub()
    monkeypatch.setitem(sys.modules, "test_study_plugin_nostub", module)
    with pytest.raises(StudyConfigError, match="stub_responder"):
        parse_config({"benchmark": "test_study_plugin_nostub:B", "mas": ["toy"],
                      "tasks": ["note"]})
    # the suite is the default benchmark and its own first user
    assert load_benchmark("symtrace_suite.benchmark:BENCHMARK").name == "symtrace_suite"
    assert parse_config({"out": "x"}).benchmark == "symtrace_suite.benchmark:BENCHMARK"
