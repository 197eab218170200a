"""Where two texts first differ, as a short word-level excerpt of each side.

A divergence report has one line per side to show a change in a prompt that may be thousands
of characters long. Like `git diff --word-diff` and pytest's assertion rewriting (difflib), the
texts are compared word by word; the excerpt starts a little before the first change, so the
words around it are visible, and runs until the line's budget is spent. Newlines are shown as
⏎ so each side stays on one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
ELLIPSIS = "…"
MARK_COST = 4  # "[-" "-]" or "{+" "+}" around a change when shown without colour


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    changed: bool


@dataclass(frozen=True, slots=True)
class Excerpt:
    """One side of a word-level difference, cut to fit a line."""

    pieces: tuple[Piece, ...]

    def marked(self, opening: str, closing: str) -> str:
        return "".join(
            f"{opening}{p.text}{closing}" if p.changed else p.text for p in self.pieces
        )


def first_difference(a: str, b: str) -> int:
    """Index of the first character where *a* and *b* differ (the shorter length if one is a
    prefix of the other)."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def word_excerpts(a: str, b: str, budget: int) -> tuple[Excerpt, Excerpt]:
    """Excerpts of *a* and *b* of about *budget* characters each (marks counted), starting
    shortly before their first differing word; identical context is identical on both sides."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    ops = SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()
    first = next((i for i, op in enumerate(ops) if op[0] != "equal"), len(ops))
    before = "".join(ta[: ops[first][1]]) if first < len(ops) else a
    after = max(len(a), len(b)) - len(before)
    # show more of what comes before when little comes after, but always some of it
    lead = max(budget // 3, min(budget - after - 2 * MARK_COST, (budget * 2) // 3))
    context = before if len(before) <= lead else ELLIPSIS + _word_start(before[-lead:])
    left, right = [Piece(_flat(context), False)], [Piece(_flat(context), False)]
    for tag, i1, i2, j1, j2 in ops[first:]:
        sa, sb = _flat("".join(ta[i1:i2])), _flat("".join(tb[j1:j2]))
        changed = tag != "equal"
        left.append(Piece(sa, changed))
        right.append(Piece(sb, changed))
    return Excerpt(_cut(_merge(left), budget)), Excerpt(_cut(_merge(right), budget))


def _flat(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "⏎").replace("\t", " ")


def _word_start(text: str) -> str:
    """*text* from its first word boundary (a cut context does not start mid-word)."""
    space = text.find(" ")
    return text[space + 1 :] if 0 <= space < len(text) // 2 else text


def _merge(pieces: list[Piece]) -> list[Piece]:
    """Drop empty pieces; changed runs separated only by whitespace read as one change."""
    out: list[Piece] = []
    for piece in pieces:
        if not piece.text:
            continue
        if (
            piece.changed
            and len(out) >= 2
            and out[-2].changed
            and not out[-1].changed
            and out[-1].text.isspace()
        ):
            gap = out.pop()
            out[-1] = Piece(out[-1].text + gap.text + piece.text, True)
        elif out and out[-1].changed == piece.changed:
            out[-1] = Piece(out[-1].text + piece.text, piece.changed)
        else:
            out.append(piece)
    return out


def _cut(pieces: list[Piece], budget: int) -> tuple[Piece, ...]:
    out: list[Piece] = []
    used = 0
    for piece in pieces:
        marks = MARK_COST if piece.changed else 0
        if used + len(piece.text) + marks > budget:
            room = budget - used - marks - 1
            if room > 0:
                out.append(Piece(piece.text[:room] + ELLIPSIS, piece.changed))
            elif out:
                last = out[-1]
                out[-1] = Piece(last.text[: max(0, len(last.text) - 1)] + ELLIPSIS, last.changed)
            break
        out.append(piece)
        used += len(piece.text) + marks
    return tuple(out)
