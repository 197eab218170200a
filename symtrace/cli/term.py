"""What the terminal can show: how wide to write and whether to use colour.

Width: `$COLUMNS` when set (as `shutil.get_terminal_size` and rich honour it), else the
terminal's, else 80 for a pipe or a file. Colour follows https://no-color.org: a non-empty
`NO_COLOR` turns it off, a non-empty `FORCE_COLOR` on; otherwise only a TTY that is not
`TERM=dumb` gets colour. Every command writes through these two answers, so output in a CI log
or a file is plain text that fits 80 columns.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from symtrace.model.inert import inert

DEFAULT_WIDTH = 80
MIN_WIDTH = 40


def width(stream: TextIO | None = None) -> int:
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    target = sys.stdout if stream is None else stream
    try:
        return max(MIN_WIDTH, os.get_terminal_size(target.fileno()).columns)
    except (AttributeError, OSError, ValueError):  # not a terminal (pipe, file, capture)
        return DEFAULT_WIDTH


def color(stream: TextIO | None = None) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    target = sys.stdout if stream is None else stream
    try:
        tty = target.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and os.environ.get("TERM") != "dumb"


def bold(text: str, on: bool) -> str:
    return f"\x1b[1m{text}\x1b[0m" if on else text


def rule(title: str, columns: int) -> str:
    """`── title ─────` across *columns*: a header that stands out without colour."""
    head = f"── {title} "
    return head + "─" * max(3, columns - len(head))


def err(text: str) -> None:
    """One message line to stderr, flushed (it interleaves with the program's own output).
    Control characters in it are escaped: an error may quote a bundle's content."""
    sys.stderr.write(inert(text) + "\n")
    sys.stderr.flush()
