"""The symptom vocabulary: the four categories C1–C4 and the evidence a rule records.

Categories are non-exclusive operational symptoms (paper, App. F.1): a category raises a node's
intervention priority without claiming the node is the unique root cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

QUOTE_LIMIT = 240


class Category(StrEnum):
    C1 = "C1"
    C2 = "C2"
    C3 = "C3"
    C4 = "C4"

    @property
    def meaning(self) -> str:
        return CATEGORY_MEANINGS[self]


CATEGORY_MEANINGS: dict[Category, str] = {
    Category.C1: "task-constraint violation",
    Category.C2: "repeated or stalled progress",
    Category.C3: "unresolved runtime condition",
    Category.C4: "plan–action–outcome inconsistency",
}


class Scope(StrEnum):
    """Where a rule found its evidence.

    LOCAL: in the node itself. PROPAGATED: in the trace before the node, which the node only
    continues from (an upstream error it proceeds past). A node whose evidence is all
    propagated is "propagation-only" (I_p = 1 in equations 25 and 29).
    """

    LOCAL = "local"
    PROPAGATED = "propagated"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One rule match: a verbatim quote from the trace and the events it came from.

    A detector fills `quote`, `note`, `event_ids` and `scope`; the rule engine fills `rule`
    and `category` from the rule that produced it, so a detector cannot mislabel itself.
    `event_ids[0]` is the node the evidence is attached to; later ids are earlier nodes the
    rule compared it with.
    """

    quote: str
    note: str
    event_ids: tuple[str, ...]
    scope: Scope = Scope.LOCAL
    rule: str = ""
    category: Category | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "category": self.category.value if self.category else None,
            "scope": self.scope.value,
            "event_ids": list(self.event_ids),
            "quote": self.quote,
            "note": self.note,
        }


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """A one-line verbatim excerpt: whitespace runs collapsed, cut at *limit* with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def excerpt(text: str, start: int, end: int, width: int = 80) -> str:
    """The match text[start:end] with up to *width* characters of context on each side."""
    lo = max(0, start - width)
    hi = min(len(text), end + width)
    prefix = "…" if lo > 0 else ""
    suffix = "…" if hi < len(text) else ""
    return prefix + quote(text[lo:hi], limit=QUOTE_LIMIT - 2) + suffix


def categories_of(evidence: tuple[Evidence, ...] | list[Evidence]) -> tuple[Category, ...]:
    """The distinct categories in *evidence*, in C1..C4 order."""
    present = {e.category for e in evidence}
    return tuple(c for c in Category if c in present)
