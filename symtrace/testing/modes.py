"""Record modes of the pytest plugin and what each does with a test's bundle.

vcrpy's modes (`none`, `once`, `new_episodes`, `all`) mix recorded and live interactions in
one cassette; a fail-closed replayer cannot (a bundle is one trajectory, matched strictly).
So every mode here ends in exactly one of two actions for a test: record the whole call into
a fresh bundle, or replay the existing bundle strictly.

| mode      | bundle missing | bundle present, test unchanged | bundle present, test changed |
|-----------|----------------|--------------------------------|------------------------------|
| `none`    | fail           | replay                         | replay                       |
| `once`    | record         | replay                         | replay                       |
| `new`     | record         | replay                         | re-record                    |
| `rewrite` | record         | re-record                      | re-record                    |

"Test changed" means the bytes of the test's module differ from the digest stored in the
bundle when it was recorded (module-level prompts and helpers count; the code under test
outside the module does not: a change there is what replay is meant to catch).

Default: `none` when the `CI` environment variable is set (so a
CI run never talks to a model), `once` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


class RecordMode(StrEnum):
    NONE = "none"
    ONCE = "once"
    NEW = "new"
    REWRITE = "rewrite"


class Action(StrEnum):
    RECORD = "record"
    REPLAY = "replay"
    MISSING = "missing"  # mode none and no bundle: the test fails


def parse_mode(value: str, *, source: str) -> RecordMode:
    """A validated mode; a misspelling fails loudly instead of behaving like another mode."""
    try:
        return RecordMode(value.strip().lower())
    except ValueError:
        valid = ", ".join(m.value for m in RecordMode)
        raise ValueError(f"{source}: unknown symtrace mode {value!r} (valid: {valid})") from None


def in_ci(environ: Mapping[str, str]) -> bool:
    """True when `CI` is set to anything but an empty/false-ish value (GitHub, GitLab, …)."""
    value = environ.get("CI")
    return value is not None and value.strip().lower() not in FALSE_WORDS


def default_mode(environ: Mapping[str, str]) -> RecordMode:
    return RecordMode.NONE if in_ci(environ) else RecordMode.ONCE


def decide(mode: RecordMode, *, exists: bool, changed: bool) -> Action:
    """The table in the module docstring."""
    if not exists:
        return Action.MISSING if mode is RecordMode.NONE else Action.RECORD
    if mode is RecordMode.REWRITE or (mode is RecordMode.NEW and changed):
        return Action.RECORD
    return Action.REPLAY
