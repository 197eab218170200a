"""The report's Markdown rendered as HTML: headings, tables, block quotes, lists, paragraphs,
and inline `**bold**`, `*italic*`, `` `code` `` and `[text](link)`. Exactly the subset
report.py writes; everything is escaped first, so a case name or an error message cannot
inject markup. A line that is one of the given markers is replaced by its (trusted) HTML.
"""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def inline(text: str) -> str:
    """One line of Markdown → HTML (escaped; code spans are not formatted further)."""
    out = []
    for i, part in enumerate(_CODE.split(text)):
        if i % 2:
            out.append(f"<code>{html.escape(part)}</code>")
            continue
        part = html.escape(part, quote=False)
        part = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', part)
        part = _BOLD.sub(r"<strong>\1</strong>", part)
        part = _ITALIC.sub(r"<em>\1</em>", part)
        out.append(part)
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def render_markdown(md: str, blocks: dict[str, str] | None = None) -> str:
    blocks = blocks or {}
    out: list[str] = []
    table: list[list[str]] = []
    items: list[str] = []
    quote: list[str] = []

    def flush() -> None:
        if table:
            head, *body = table
            out.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head)
                       + "</tr>" + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r)
                                           + "</tr>" for r in body) + "</table>")
            table.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>")
            items.clear()
        if quote:
            out.append("<blockquote>" + " ".join(inline(q) for q in quote) + "</blockquote>")
            quote.clear()

    for line in md.splitlines():
        stripped = line.strip()
        if stripped in blocks:
            flush()
            out.append(blocks[stripped])
            continue
        if stripped.startswith("<!--"):
            continue
        if stripped.startswith("|"):
            cells = _cells(stripped)
            if not all(c and set(c) <= {"-", ":"} for c in cells):
                table.append(cells)
            continue
        if stripped.startswith("- "):
            if table or quote:
                flush()
            items.append(stripped[2:])
            continue
        if stripped.startswith("> "):
            if table or items:
                flush()
            quote.append(stripped[2:])
            continue
        flush()
        if not stripped:
            continue
        level = len(stripped) - len(stripped.lstrip("#"))
        if 1 <= level <= 4 and stripped[level:level + 1] == " ":
            out.append(f"<h{level}>{inline(stripped[level + 1:])}</h{level}>")
        else:
            out.append(f"<p>{inline(stripped)}</p>")
    flush()
    return "\n".join(out)
