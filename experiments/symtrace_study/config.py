"""The study config (JSON or TOML), validated completely before anything runs or is written."""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from symtrace.diagnosis.errors import TemplateError
from symtrace.diagnosis.templates import Templates, load_templates
from symtrace_study.benchmark import (
    DEFAULT_BENCHMARK,
    Benchmark,
    load_benchmark,
    spec_text,
    task_index,
)
from symtrace_study.errors import StudyConfigError

NODE_ARMS = ("suspicious", "random", "last")
TASK_ARMS = ("rerun", "self_reflection", "critic")
METHODS = (*NODE_ARMS, *TASK_ARMS)
# The template (symtrace/diagnosis/templates) each task-level arm renders.
TASK_PROMPTS = {"rerun": "unguided_rerun", "self_reflection": "self_reflection",
                "critic": "critic_agent"}
BACKENDS = ("stub", "local", "openai")
# How an RQ1 attempt is judged to reproduce the source failure (App. D.1): `mechanism` is the
# paper's test (same C-category, equivalent mechanism, corresponding role, grounded evidence);
# the other three are coarser opt-ins kept for comparison.
EQUIVALENCES = ("mechanism", "verdict", "answer", "reason")
# What a program crash (non-zero exit that is not an infrastructure fault) counts as.
CRASH_POLICIES = ("non_repair", "system_error")


@dataclass(frozen=True)
class MasSpec:
    """One MAS program: argv with `{task}`; `prompt_args` (with `{prompt}`) are appended for the
    task-level arms."""

    name: str
    command: tuple[str, ...]
    prompt_args: tuple[str, ...] = ("--prompt", "{prompt}")

    def argv(self, task_id: str, prompt: str | None = None) -> list[str]:
        argv = [part.replace("{task}", task_id) for part in self.command]
        if prompt is not None:
            argv += [part.replace("{prompt}", prompt) for part in self.prompt_args]
        return argv


@dataclass(frozen=True)
class BackendSpec:
    kind: str
    seed: int = 0  # stub: SuitePolicy seed offset; local: sampling seed
    skill: float = 0.6  # stub only
    base_url: str | None = None  # openai only
    api_key_env: str = "OPENAI_API_KEY"
    model: str | None = None
    model_path: str | None = None  # local only (default: the packaged SmolLM2-135M)
    # stub only, for tests of the accounting: the first try of every `every`-th distinct
    # request is answered with these HTTP statuses in turn (the SDK retries it)
    faults: tuple[int, ...] = ()
    faults_every: int = 1

    @property
    def is_stub(self) -> bool:
        return self.kind == "stub"


@dataclass(frozen=True)
class JudgeSpec:
    base_url: str
    model: str
    api_key_env: str | None = None


@dataclass(frozen=True)
class StudyConfig:
    name: str
    out: Path
    backend: BackendSpec
    mas: tuple[MasSpec, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    methods: tuple[str, ...]
    reference: str
    attempts: int
    rq1_k: int  # 0 disables RQ1
    equivalence: str
    benchmark: str = DEFAULT_BENCHMARK
    crashes: str = "non_repair"  # App. F.4: a framework crash is a non-repair
    infra_retries: int = 2  # extra tries of an attempt that hit an infrastructure fault
    rq1_prompt: str = "unguided"  # RQ1 reruns: the unguided-rerun prompt or the original task
    judge: JudgeSpec | None = None
    templates_path: Path | None = None
    placement: str = "user"
    max_error_rate: float = 0.1
    cases_path: Path | None = None  # reuse another study's frozen case set
    infra_backoff: float = 2.0  # seconds before the first infrastructure retry, doubling
    trace_back: bool = True  # anchor at the symptom's origin in G (not in Algorithm 4)
    theta: float | None = None  # the eligibility threshold θ (None: ScoringConfig's)
    labels_path: Path | None = None  # RQ1: human labels per case (labels.py)
    # RQ1's method-blinded reproduction judge (repro_judge.py): audit beside the rule-based
    # check, never a row's status, so not a result-affecting setting (verdicts are keyed by it)
    rq1_judge: JudgeSpec | None = None
    source: Path | None = field(default=None, compare=False)

    def templates(self) -> Templates:
        return load_templates(self.templates_path)

    def load_benchmark(self) -> Benchmark:
        return load_benchmark(self.benchmark)

    def fingerprint(self) -> str:
        """What fixes the case set: the sources collected (benchmark, MAS, tasks, seeds,
        backend)."""
        backend = asdict(self.backend)
        if not self.backend.faults:  # older studies keep their fingerprint
            backend.pop("faults")
            backend.pop("faults_every")
        data = {"mas": [asdict(m) for m in self.mas], "tasks": self.tasks, "seeds": self.seeds,
                "backend": backend}
        if self.benchmark != DEFAULT_BENCHMARK:  # older studies keep their fingerprint
            data["benchmark"] = self.benchmark
        return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]

    def settings(self) -> dict[str, Any]:
        """Every setting a row's outcome depends on beyond the case set (the fingerprint): a
        resumed run must have the same (`Study.check_state`). Files count by their content."""
        return {"equivalence": self.equivalence, "attempts": self.attempts,
                "rq1.k": self.rq1_k, "rq1.rerun_prompt": self.rq1_prompt,
                "judge": asdict(self.judge) if self.judge else None,
                "templates": _digest(self.templates_path), "placement": self.placement,
                "crashes": self.crashes, "diagnosis.trace_back": self.trace_back,
                "diagnosis.theta": self.theta, "rq1.labels": _digest(self.labels_path),
                "cases": _digest(self.cases_path)}

    def scoring(self) -> Any:
        """The diagnosis's ScoringConfig (θ from the config), the same for every phase."""
        from dataclasses import replace

        from symtrace.diagnosis.scoring import ScoringConfig

        return ScoringConfig() if self.theta is None else replace(ScoringConfig(),
                                                                    theta=self.theta)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["out"] = str(self.out)
        for key in ("templates_path", "cases_path", "labels_path"):
            data[key] = str(data[key]) if data[key] else None
        data.pop("source")
        return data


def _digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return f"unreadable:{path}"


def load_config(path: str | os.PathLike[str], *, out: Path | None = None) -> StudyConfig:
    """Read and validate *path* (`.json` or `.toml`); StudyConfigError on any problem."""
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        raise StudyConfigError(f"cannot read study config {path}: {exc.strerror}") from exc
    try:
        raw = (tomllib.loads(raw_bytes.decode()) if path.suffix == ".toml"
               else orjson.loads(raw_bytes))
    except (tomllib.TOMLDecodeError, orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StudyConfigError(f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}"
                               ) from exc
    if not isinstance(raw, dict):
        raise StudyConfigError(f"{path}: expected an object at the top level")
    return parse_config(raw, base=path.parent, out=out, source=path)


def parse_config(raw: dict[str, Any], *, base: Path = Path("."), out: Path | None = None,
                 source: Path | None = None) -> StudyConfig:
    known = {"name", "out", "backend", "mas", "tasks", "seeds", "methods", "reference",
             "attempts", "rq1", "judge", "templates", "placement", "max_error_rate", "cases",
             "benchmark", "crashes", "infra_retries", "infra_backoff", "diagnosis",
             "_comment"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise StudyConfigError(f"unknown config keys {unknown}; known: {sorted(known)}")
    methods = tuple(raw.get("methods", METHODS))
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise StudyConfigError(f"unknown methods {bad}; known: {', '.join(METHODS)}")
    reference = raw.get("reference", "suspicious")
    if reference not in methods:
        raise StudyConfigError(f"reference method {reference!r} is not in methods")
    attempts = _int(raw.get("attempts", 3), "attempts", low=1)
    rq1 = raw.get("rq1", {"k": 3, "equivalence": "mechanism"})
    if rq1 is False:
        rq1 = {"k": 0}
    if not isinstance(rq1, dict):
        raise StudyConfigError("rq1 must be an object {k, equivalence} or false")
    unknown_rq1 = sorted(set(rq1) - {"k", "equivalence", "rerun_prompt", "labels", "judge"})
    if unknown_rq1:
        raise StudyConfigError(f"unknown rq1 keys {unknown_rq1}; known: k, equivalence, "
                               "rerun_prompt, labels, judge")
    labels_path = (base / rq1["labels"]) if rq1.get("labels") else None
    if labels_path is not None and not labels_path.is_file():
        raise StudyConfigError(f"rq1.labels: no labels file at {labels_path}")
    if labels_path is not None:
        from symtrace_study.labels import load_labels

        load_labels(labels_path)  # a malformed label is refused before anything runs
    diagnosis = raw.get("diagnosis", {})
    if not isinstance(diagnosis, dict) or set(diagnosis) - {"trace_back", "theta"}:
        raise StudyConfigError("diagnosis must be an object with trace_back (bool) and/or "
                               f"theta (number in [0, 1]), got {diagnosis!r}")
    trace_back = diagnosis.get("trace_back", True)
    if not isinstance(trace_back, bool):
        raise StudyConfigError(f"diagnosis.trace_back must be true or false, got {trace_back!r}")
    theta = diagnosis.get("theta")
    if theta is not None and (isinstance(theta, bool) or not isinstance(theta, int | float)
                              or not 0 <= theta <= 1):
        raise StudyConfigError(f"diagnosis.theta must be within [0, 1], got {theta!r}")
    equivalence = rq1.get("equivalence", "mechanism")
    if equivalence not in EQUIVALENCES:
        raise StudyConfigError(f"unknown rq1.equivalence {equivalence!r}; known: "
                               f"{', '.join(EQUIVALENCES)}")
    seeds = raw.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds:
        raise StudyConfigError("seeds must be a non-empty list of integers")
    templates = raw.get("templates")
    templates_path = (base / templates) if templates else None
    cases_path = (base / raw["cases"]) if raw.get("cases") else None
    if cases_path is not None and not cases_path.is_file():
        raise StudyConfigError(f"cases: no frozen case set at {cases_path}")
    benchmark_spec = spec_text(raw.get("benchmark", DEFAULT_BENCHMARK))
    benchmark = load_benchmark(benchmark_spec)
    config = StudyConfig(
        name=str(raw.get("name", "study")),
        out=out or Path(raw.get("out", "out/study")),
        backend=_backend(raw.get("backend", {"kind": "stub"})),
        mas=tuple(_mas(m, benchmark) for m in raw.get("mas", ["plain"])),
        tasks=_tasks(raw.get("tasks", "all"), benchmark),
        seeds=tuple(_int(s, "seeds[]", low=0) for s in seeds),
        methods=methods,
        reference=reference,
        attempts=attempts,
        rq1_k=_int(rq1.get("k", 3), "rq1.k", low=0),
        equivalence=equivalence,
        benchmark=benchmark_spec,
        crashes=_choice(raw.get("crashes", "non_repair"), "crashes", CRASH_POLICIES),
        infra_retries=_int(raw.get("infra_retries", 2), "infra_retries", low=0),
        rq1_prompt=_choice(rq1.get("rerun_prompt", "unguided"), "rq1.rerun_prompt",
                           ("unguided", "original")),
        judge=_judge(raw.get("judge")),
        templates_path=templates_path,
        placement=str(raw.get("placement", "user")),
        max_error_rate=_rate(raw.get("max_error_rate", 0.1)),
        cases_path=cases_path,
        infra_backoff=_seconds(raw.get("infra_backoff", 2.0), "infra_backoff"),
        trace_back=trace_back,
        theta=None if theta is None else float(theta),
        labels_path=labels_path,
        rq1_judge=_judge(rq1.get("judge"), "rq1.judge"),
        source=source,
    )
    if config.backend.is_stub and not callable(getattr(benchmark, "stub_responder", None)):
        raise StudyConfigError(f"the stub backend needs the benchmark's stub_responder(seed, "
                               f"skill); {benchmark.name} has none: use a local or openai "
                               "backend")
    if len({m.name for m in config.mas}) != len(config.mas):
        raise StudyConfigError("two MAS entries share a name")
    try:
        config.templates()
    except TemplateError as exc:
        raise StudyConfigError(f"templates: {exc}") from exc
    if config.placement not in ("user", "system", "last"):
        raise StudyConfigError("placement must be user, system or last")
    return config


def _int(value: Any, name: str, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise StudyConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise StudyConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise StudyConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise StudyConfigError(f"max_error_rate must be within [0, 1], got {value!r}")
    return float(value)


def _backend(raw: Any) -> BackendSpec:
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, dict) or raw.get("kind") not in BACKENDS:
        kind = raw.get("kind") if isinstance(raw, dict) else raw
        raise StudyConfigError(f"unknown backend {kind!r}; known: {', '.join(BACKENDS)}")
    allowed = {"kind", "seed", "skill", "base_url", "api_key_env", "model", "model_path",
               "faults", "faults_every"}
    if set(raw) - allowed:
        raise StudyConfigError(f"unknown backend keys {sorted(set(raw) - allowed)}")
    faults = raw.get("faults", [])
    if not isinstance(faults, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 400 <= s <= 599 for s in faults):
        raise StudyConfigError(f"backend.faults must be a list of HTTP error statuses, got "
                               f"{faults!r}")
    if faults and raw.get("kind") != "stub":
        raise StudyConfigError("backend.faults is a test knob of the stub backend only")
    spec = BackendSpec(**{**raw, "faults": tuple(faults),
                          "faults_every": _int(raw.get("faults_every", 1), "backend.faults_every",
                                               low=1)})
    if spec.kind == "openai" and not spec.base_url:
        raise StudyConfigError("the openai backend needs base_url")
    if not 0 <= spec.skill <= 1:
        raise StudyConfigError("backend.skill must be within [0, 1]")
    return spec


def _mas(raw: Any, benchmark: Benchmark) -> MasSpec:
    if isinstance(raw, str):
        known = benchmark.mas_commands()
        if raw not in known:
            raise StudyConfigError(f"unknown MAS {raw!r}; {benchmark.name} knows: "
                                   f"{', '.join(known)} (or an object with name and command)")
        return MasSpec(raw, tuple(known[raw]))
    if not isinstance(raw, dict) or not raw.get("name") or not raw.get("command"):
        raise StudyConfigError(f"a MAS entry needs name and command: {raw!r}")
    command = tuple(str(p) for p in raw["command"])
    if not any("{task}" in p for p in command):
        raise StudyConfigError(f"MAS {raw['name']!r}: command must contain {{task}}")
    prompt_args = tuple(str(p) for p in raw.get("prompt_args", ("--prompt", "{prompt}")))
    return MasSpec(str(raw["name"]), command, prompt_args)


def _tasks(raw: Any, benchmark: Benchmark) -> tuple[str, ...]:
    known = list(task_index(benchmark))
    if raw == "all":
        return tuple(known)
    if not isinstance(raw, list) or not raw:
        raise StudyConfigError('tasks must be "all" or a non-empty list of task ids')
    bad = [t for t in raw if t not in known]
    if bad:
        raise StudyConfigError(f"unknown tasks {bad} ({benchmark.name} has {len(known)} tasks)")
    return tuple(raw)


def _judge(raw: Any, name: str = "judge") -> JudgeSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw.get("base_url") or not raw.get("model"):
        raise StudyConfigError(f"{name} needs base_url and model (or null: rules only)")
    return JudgeSpec(str(raw["base_url"]), str(raw["model"]), raw.get("api_key_env"))
