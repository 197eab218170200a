"""Append-only JSONL result logs: one canonical JSON row per line, fsync'ed per row.

A crash can leave at most a torn last line; loading drops it (and truncates the file to the
last complete row), so a resumed run appends cleanly and never duplicates a row.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from symtrace_study.jobs import Key

DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY


def row_key(row: dict[str, Any]) -> Key:
    return (row["phase"], row["case"], row["arm"], int(row["attempt"]))


class ResultLog:
    def __init__(self, path: Path, key: Callable[[dict[str, Any]], Any] = row_key) -> None:
        self.path = path
        self.key = key  # what makes two rows the same observation (a later one wins)

    def load(self) -> dict[Any, dict[str, Any]]:
        """Complete rows by key (a later row for the same key wins; there should be none)."""
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        good = data.rfind(b"\n") + 1
        if good < len(data):  # torn write from a crash: drop the partial line
            with self.path.open("r+b") as fh:
                fh.truncate(good)
        rows = {}
        for line in data[:good].splitlines():
            if line.strip():
                row = orjson.loads(line)
                rows[self.key(row)] = row
        return rows

    def append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as fh:
            fh.write(orjson.dumps(row, option=DUMP) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())


def write_json(path: Path, data: Any) -> None:
    """Atomically write canonical, indented JSON."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(data, option=DUMP | orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)
