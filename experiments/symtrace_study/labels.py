"""Human labels for RQ1 (App. D.1/D.3): per case, the failure target, its category and the
mechanism evidence, used in place of the automatic diagnosis.

    {"labels": {"ag2/wiki-005/s0": {"target": "tool_call_0001", "category": "C3",
                                    "agent": "assistant",
                                    "evidence": ["wiki_search({\"query\": \"\"})"],
                                    "note": "searches with an empty query"}}}

`rq1.labels` in the study config names the file. For a labelled case RQ1's replay goes live at
the LLM boundary of the labelled target, and the source mechanism is the label's: its
category, the role of the target node (type, and `agent` if given, else the node's agent) and
its evidence in canonical form — an evidence string `name({json})` is a tool call compared by
its fingerprint; any other string must occur (case and whitespace folded) in the attempt's
own live evidence events. Without `evidence` the target node's own facets are used. The
method arms never see labels (the suspicious arm is the method under test). Every label is
checked against its source bundle before any attempt runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from symtrace_study.errors import StudyConfigError

CATEGORIES = ("C1", "C2", "C3", "C4")
_CALL = re.compile(r"^\s*(?P<name>[\w.\-]+)\((?P<args>.*)\)\s*$", re.S)


@dataclass(frozen=True)
class Label:
    case: str
    target: str
    category: str
    agent: str | None
    evidence: tuple[str, ...]
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "category": self.category, "agent": self.agent,
                "evidence": list(self.evidence), "note": self.note}


def load_labels(path: Path) -> dict[str, Label]:
    """Read and validate a labels file; StudyConfigError names the offending case."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StudyConfigError(f"rq1.labels {path}: cannot read it as JSON: {exc}") from exc
    table = raw.get("labels") if isinstance(raw, dict) else None
    if not isinstance(table, dict):
        raise StudyConfigError(f'rq1.labels {path}: expected {{"labels": {{case: label}}}}')
    out = {}
    for case, item in table.items():
        where = f"rq1.labels {path}: case {case!r}"
        if not isinstance(item, dict) or set(item) - {"target", "category", "agent", "evidence",
                                                       "note"}:
            raise StudyConfigError(f"{where}: a label has target, category and optionally "
                                   "agent, evidence (list of strings) and note")
        if not isinstance(item.get("target"), str) or not item["target"]:
            raise StudyConfigError(f"{where}: target must be an event id")
        if item.get("category") not in CATEGORIES:
            raise StudyConfigError(f"{where}: category must be one of {', '.join(CATEGORIES)}")
        evidence = item.get("evidence", [])
        if not isinstance(evidence, list) or not all(isinstance(e, str) and e.strip()
                                                     for e in evidence):
            raise StudyConfigError(f"{where}: evidence must be a list of non-empty strings")
        out[case] = Label(case, item["target"], item["category"], item.get("agent"),
                          tuple(evidence), item.get("note"))
    return out


def evidence_facet(text: str) -> str:
    """A label's evidence string in canonical form (reproduction.view_facets' vocabulary)."""
    from symtrace.diagnosis.message_text import parse_json
    from symtrace.diagnosis.view import ToolInvocation

    call = _CALL.match(text)
    if call:
        args = parse_json(call.group("args").strip() or "{}")
        if isinstance(args, dict):
            return "call:" + ToolInvocation(call.group("name"), args).fingerprint
    return "text:" + " ".join(text.split()).casefold()


def check_against(label: Label, bundle: Any) -> None:
    """The labelled target exists in the source bundle."""
    if label.target not in bundle.by_id:
        raise StudyConfigError(f"rq1.labels: case {label.case!r}: target {label.target!r} is "
                               f"not an event of its source bundle {bundle.path}")
