"""Text from a bundle made inert for a terminal, a log or an XML document.

Recorded content is someone else's text: a model's reply, a tool's output, an agent's name.
Written raw to a terminal, `ESC[2J` clears the screen, an OSC 8 sequence turns a word into a
link to another host, a carriage return or backspaces overwrite what was printed, bidi
controls reorder what the reader sees (CVE-2021-42574); XML 1.0 forbids C0 controls even as
character references. `inert` replaces every such character by a visible escape (`\\x1b`,
`\\u202e`), so the text reads the same everywhere and does nothing. Every human-facing output
of symtrace passes recorded text through it (`show`, `verify`, `diff`, `diagnose`, divergence
reports, the CLI's error messages, the SVG graph); JSON output needs none (JSON escapes).
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; the bidi embedding, override and isolate
# controls and marks; line and paragraph separators; zero-width characters that hide text;
# the two noncharacters XML forbids.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_INVISIBLE = "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffe\uffff"
_UNSAFE_KEEP_LINES = re.compile(f"[{_CONTROL}{_INVISIBLE}]")
_UNSAFE = re.compile(f"[\n\t{_CONTROL}{_INVISIBLE}]")


def inert(text: str, *, keep_lines: bool = True) -> str:
    """*text* with every control, bidi and invisible formatting character escaped.

    Newlines and tabs are kept unless *keep_lines* is False (a table cell, a one-line label:
    there a newline could forge a line of symtrace's own output)."""
    pattern = _UNSAFE_KEEP_LINES if keep_lines else _UNSAFE
    if pattern.search(text) is None:  # the common case: one C-level scan
        return text
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
