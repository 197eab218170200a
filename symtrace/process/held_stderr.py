"""The program's stderr after the first divergence of a `symtrace replay -- CMD`.

Once symtrace has refused a call, what the program writes to stderr is its reaction: SDKs and
frameworks retry the refused call and log each failure (CrewAI prints "Failed to connect to
OpenAI API: Connection error." once per attempt), then the program ends with a traceback. Read
live, the retries look like network attempts. So from the first divergence on, the child's
fd 2 goes to a file (`hold`, in the child); when the program has ended, the parent prints its
last traceback (what the README promises: the program's own traceback, then the report) and
leaves the rest out, summarised in one line under the divergence report (`summary`). Nothing
is lost: `--report-json` keeps the left-out text. Before the first divergence, stderr is the
program's own and is never touched.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "stderr-after-divergence.txt"  # next to the hand-back file, in the parent's tmp
TRACEBACK = "Traceback (most recent call last):"
CHAINED = frozenset({
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
})


def held_path(hand_back: str | os.PathLike[str]) -> Path:
    return Path(hand_back).with_name(FILE_NAME)


def hold(path: Path) -> None:
    """Send this process's fd 2 to *path* from now on (child side; a second call appends to
    the same file). If that fails, stderr stays live: the divergence matters, not this."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.dup2(fd, 2)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Held:
    """What the program wrote to stderr after the first divergence, split in two."""

    kept: str  # its last traceback (chained causes included) to the end, shown as written
    left_out: str  # everything before that: the retries of the refused call

    @classmethod
    def split(cls, text: str) -> Held:
        """Keep the last traceback chain and what follows it; with no traceback, keep all
        (nothing tells the retries from the program's own last words)."""
        lines = text.splitlines(keepends=True)
        starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
        if not starts:
            return cls(text, "")
        index = len(starts) - 1
        while index > 0 and _chained_to_previous(lines, starts[index]):
            index -= 1
        first = starts[index]
        return cls("".join(lines[first:]), "".join(lines[:first]))

    def summary(self) -> str | None:
        """One sentence on what was left out, or None when nothing was."""
        every = self.left_out.splitlines()
        lines = [line.rstrip() for line in every if line.strip()]
        if not lines:
            return None
        tracebacks = sum(1 for i, line in enumerate(every)  # a chain counts once
                         if line.startswith(TRACEBACK) and not _chained_to_previous(every, i))
        said = Counter(line for line in lines
                       if not line[0].isspace() and line != TRACEBACK and line not in CHAINED)
        text = (f"symtrace: left out {len(lines)} line{'s' if len(lines) != 1 else ''} the "
                "program wrote to stderr between the refused call and its last traceback "
                "(most likely its SDK or framework retrying the refused call")
        if tracebacks:
            text += f"; {tracebacks} traceback{'s' if tracebacks != 1 else ''}"
        if said:
            line, count = said.most_common(1)[0]
            text += f"; {count}× {line!r}" if count > 1 else f"; {line!r}"
        return text + "); --report-json FILE keeps them."


def _chained_to_previous(lines: list[str], start: int) -> bool:
    """Whether the traceback at *start* is the later part of a chain ("The above exception
    was the direct cause …" right before it)."""
    before = start - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    return before >= 0 and lines[before].strip() in CHAINED
