"""Prompt templates as data: templates/default.json, overridable from a user JSON file.

A template is a `str.format` string. Each template may use only the placeholders listed in
`FIELDS`; an override naming an unknown template or placeholder is a TemplateError when it is
loaded, not a KeyError in the middle of a repair.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from symtrace.diagnosis.errors import TemplateError

TASK_FIELDS = frozenset({"task_id", "benchmark", "split", "task", "start_urls", "output_suffix"})
FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "suspicious_node": frozenset({"target", "anchor", "categories", "evidence"}),
        "evidence_item": frozenset({"event_id", "category", "rule", "quote", "note", "scope"}),
        "category_item": frozenset({"category", "meaning"}),
        "generic_node": frozenset({"target", "anchor"}),
        "unguided_rerun": TASK_FIELDS,
        "self_reflection": TASK_FIELDS | {"previous_final_answer"},
        "critic_agent": TASK_FIELDS | {"previous_final_answer"},
        "output_suffix": frozenset(),
        "judge_system": frozenset(),
    }
)


@dataclass(frozen=True)
class Templates:
    """A validated set of templates, one per name in FIELDS."""

    texts: Mapping[str, str]

    def render(self, name: str, **values: object) -> str:
        if name not in self.texts:
            raise TemplateError(f"no template named {name!r} (known: {', '.join(FIELDS)})")
        return self.texts[name].format(**values)


def _check(texts: Mapping[str, object], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, text in texts.items():
        if name.startswith("_"):
            continue  # comments
        if name not in FIELDS:
            raise TemplateError(f"{where}: unknown template {name!r} (known: {', '.join(FIELDS)})")
        if not isinstance(text, str):
            raise TemplateError(f"{where}: template {name!r} must be a string")
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
        except ValueError as exc:
            raise TemplateError(
                f"{where}: template {name!r} is not a valid format string: {exc}"
            ) from exc
        bad = sorted(used - FIELDS[name])
        if bad:
            allowed = ", ".join(sorted(FIELDS[name])) or "none"
            raise TemplateError(
                f"{where}: template {name!r} uses unknown placeholder(s) {', '.join(bad)} "
                f"(allowed: {allowed})"
            )
        out[name] = text
    return out


def default_templates() -> Templates:
    raw = (
        resources.files("symtrace.diagnosis")
        .joinpath("templates/default.json")
        .read_text(encoding="utf-8")
    )
    texts = _check(json.loads(raw), "templates/default.json")
    missing = sorted(set(FIELDS) - set(texts))
    if missing:  # a packaging error, not a user error
        raise TemplateError(f"templates/default.json lacks {', '.join(missing)}")
    return Templates(MappingProxyType(texts))


def load_templates(path: str | os.PathLike[str] | None = None) -> Templates:
    """The default templates, with the templates in the JSON file at *path* replacing them."""
    base = default_templates()
    if path is None:
        return base
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read template file ({exc.strerror})") from exc
    except ValueError as exc:
        raise TemplateError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: expected a JSON object of template name → text")
    return Templates(MappingProxyType({**base.texts, **_check(data, str(path))}))
