"""The task context T the rules read: task text, explicit constraints, output requirements.

Everything here is derived from the bundle's task after evaluator information is stripped:
reference answers, gold items and evaluator verdicts never reach a rule, the judge or Δ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from symtrace.model.canonical import JSONValue

# Keys whose values are evaluator-side information (reference answers, verdicts). Matched on the
# lower-cased key with "-" and " " folded to "_"; removed at any depth.
EVALUATOR_KEYS = frozenset(
    {
        "answer", "answers", "reference", "reference_answer", "reference_answers",
        "reference_items", "gold", "gold_answer", "gold_answers", "ground_truth", "expected",
        "expected_answer", "expected_output_value", "solution", "target_answer", "label",
        "labels", "evaluator", "evaluation", "eval", "verdict", "score", "passed", "judge",
        "missing_reference_items", "evaluator_verdict",
    }
)  # fmt: skip
EVALUATOR_PREFIXES = ("evaluator", "eval_", "reference_", "gold_")

TEXT_KEYS = ("task", "prompt", "instruction", "instructions", "question", "description", "goal")
FORMAT_KEYS = ("output_format", "output_requirements", "output", "format", "expected_output")

_NUMBER_ONLY = re.compile(
    r"(?i)\b(?:return|give|answer|respond|output|reply)\b[^.\n]*?"
    r"\b(?:number|numeric value|integer|float|amount)\b[^.\n]*?\bonly\b"
)
_LIST_OF_OBJECTS = re.compile(
    r"(?i)\b(?:list|array) of (?:json )?objects with (?:the )?keys? (?P<keys>[^.\n]+)"
)
_JSON = re.compile(r"(?i)\b(?:as|in) (?:a )?json\b|\bjson (?:object|format)\b")
_ONLY = re.compile(r"(?i)\bwithout (?:any )?(?:additional|extra|other) (?:details|text)\b")
_URL = re.compile(r"\bhttps?://[^\s\"'<>)\]]+")
_TOOL_WORDS = re.compile(
    r"(?i)\b(?:browse|browser|look up|lookup|search|visit|website|web page|webpage|"
    r"navigate|fetch|download|api|service|use the tool|wiki)\b"
)


@dataclass(frozen=True)
class OutputSpec:
    """What the final output must look like, as far as the task states it."""

    kind: str | None = None  # "number" | "object_list" | "json" | None (unstated)
    keys: tuple[str, ...] = ()  # required keys of each object, for "object_list"
    only: bool = False  # "…only, without any additional details"
    statement: str = ""  # the task sentence that states the requirement (quoted as evidence)


@dataclass(frozen=True)
class TaskSpec:
    """T as the rules see it. `raw` is the task with evaluator information removed."""

    text: str
    constraints: tuple[str, ...] = ()
    output: OutputSpec = OutputSpec()
    start_urls: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    task_id: str | None = None
    benchmark: str | None = None
    split: str | None = None
    raw: JSONValue = None

    @property
    def mentions_tools(self) -> bool:
        """The task names start URLs or tools, or its text asks to look something up."""
        return bool(self.start_urls or self.tools or _TOOL_WORDS.search(self.text))


def strip_evaluator_info(value: JSONValue) -> JSONValue:
    """A copy of *value* without evaluator keys at any depth (App. F, Algorithm 3 line 13)."""
    if isinstance(value, dict):
        return {
            key: strip_evaluator_info(item)
            for key, item in value.items()
            if not is_evaluator_key(key)
        }
    if isinstance(value, list):
        return [strip_evaluator_info(item) for item in value]
    return value


def is_evaluator_key(key: str) -> bool:
    folded = key.lower().replace("-", "_").replace(" ", "_")
    return folded in EVALUATOR_KEYS or folded.startswith(EVALUATOR_PREFIXES)


def parse_task(task: JSONValue) -> TaskSpec:
    """Read T: a plain string, or an object with task text, constraints and output format."""
    clean = strip_evaluator_info(task)
    if isinstance(clean, dict):
        text = _first_text(clean, TEXT_KEYS)
        if not text:
            text = " ".join(str(v) for v in clean.values() if isinstance(v, str))
        fmt = _first_text(clean, FORMAT_KEYS)
        constraints = _strings(clean.get("constraints"))
        start_urls = _strings(clean.get("start_urls") or clean.get("start_url"))
        tools = _tool_names(clean.get("tools"))
        meta = {k: clean.get(k) for k in ("task_id", "id", "benchmark", "source_benchmark")}
        split = clean.get("split") or clean.get("source_split")
        task_id = meta["task_id"] or meta["id"]
        benchmark = meta["benchmark"] or meta["source_benchmark"]
    else:
        text = "" if clean is None else str(clean)
        fmt, constraints, tools, task_id, benchmark, split = "", (), (), None, None, None
        start_urls = ()
    if not start_urls:
        start_urls = tuple(dict.fromkeys(_URL.findall(text)))
    return TaskSpec(
        text=text,
        constraints=constraints,
        output=parse_output_spec(" ".join(part for part in (text, fmt) if part)),
        start_urls=start_urls,
        tools=tools,
        task_id=None if task_id is None else str(task_id),
        benchmark=None if benchmark is None else str(benchmark),
        split=None if split is None else str(split),
        raw=clean,
    )


def parse_output_spec(text: str) -> OutputSpec:
    """Output requirements stated in *text* (deterministic patterns, see docs/diagnosis.md)."""
    only = bool(_ONLY.search(text))
    match = _LIST_OF_OBJECTS.search(text)
    if match:
        exact = only or bool(re.search(r"(?i)\bonly\b", match.group("keys")))
        return OutputSpec("object_list", _keys(match.group("keys")), exact, _sentence(text, match))
    match = _NUMBER_ONLY.search(text)
    if match:
        return OutputSpec("number", (), True, _sentence(text, match))
    match = _JSON.search(text)
    if match:
        return OutputSpec("json", (), only, _sentence(text, match))
    return OutputSpec(only=only)


def _keys(phrase: str) -> tuple[str, ...]:
    phrase = re.sub(r"\([^)]*\)", " ", phrase)  # "(integer)", "(in H:M:S format)"
    phrase = re.split(r"(?i)\b(?:only|without)\b", phrase)[0]
    keys = []
    for part in re.split(r",|\band\b", phrase):
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", part)
        if words:
            keys.append(words[0])
    return tuple(dict.fromkeys(keys))


def _sentence(text: str, match: re.Match[str]) -> str:
    start = max(text.rfind(".", 0, match.start()) + 1, text.rfind("\n", 0, match.start()) + 1)
    end_dot = text.find(".", match.end())
    end = len(text) if end_dot < 0 else end_dot + 1
    return " ".join(text[start:end].split())


def _first_text(data: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(item) for item in value if isinstance(item, str | int | float))
    if isinstance(value, dict):
        return tuple(f"{k}: {v}" for k, v in value.items())
    return ()


def _tool_names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return _strings(value)
    names = []
    for item in value:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict):
            function = item.get("function") if isinstance(item.get("function"), dict) else item
            if isinstance(function.get("name"), str):
                names.append(function["name"])
    return tuple(names)
