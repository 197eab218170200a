"""Outcome verification: a strict replay is faithful only if it ends as the recording did.

Matching every boundary call is necessary, not sufficient: a program whose output depends on
something symtrace does not pin (`os.urandom`, uuid4, the clock) replays every call and still
ends differently. So after a strict replay the runner compares, in this order:

1. the exit code,
2. the declared final result (`symtrace.final_result`, canonical JSON),
3. the standard output, line by line, after normalisation.

The first difference is a divergence (`outcome_mismatch`, SYM-R107, exit 90) naming what
differed and, for stdout, the first differing line (number, recorded, replayed).

Normalisation (the same on both sides, so a digest of the normalised text is stable):
volatile substrings are replaced by placeholders, never dropped:

* `<… at 0x7f3a…>` object addresses → `0x…`
* ISO-8601 date-times (`2026-12-03T14:05:01.123Z`, `2026-12-03 14:05:01`) → `<datetime>`
* clock times `14:05:01` (optionally `.123`) → `<time>`
* durations `1.23s`, `12 ms`, `0.5 seconds` → `<duration>`

and every line matching a `--volatile-stdout REGEX` is left out entirely, as are blank lines
(spacing: CrewAI skips a blank line while another thread streams). Nothing else is
normalised: uuids and random hex are exactly the entropy a faithful replay must reproduce.

stdout is compared as the multiset of its normalised lines: a line missing, added or changed
is a difference (reported at the first line where the two outputs part), while the same lines
in another order are not. Frameworks print from worker threads (CrewAI's console panels come
from its event bus's thread pool), so the interleaving of lines is timing, not outcome; the
order of the run's boundary calls is what replay matching already verifies.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from symtrace.model.canonical import JSONValue, canonical_bytes

NORMALISATIONS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("address", re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x…"),
    ("datetime", re.compile(
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"),
     "<datetime>"),
    ("time", re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    ("duration", re.compile(
        r"\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds|milliseconds)\b"), "<duration>"),
)


@dataclass(frozen=True, slots=True)
class OutcomeDifference:
    """What differs between the recorded and the replayed outcome (the first thing found)."""

    what: str  # "exit_code" | "final_result" | "stdout"
    expected: JSONValue
    actual: JSONValue
    line: int | None = None  # 1-based, for stdout
    counts: tuple[int, int] | None = None  # stdout: the same line, recorded vs replayed times

    def describe(self) -> str:
        if self.counts is not None:
            return (f"stdout differs: the line {visible(self.expected)} (first at line "
                    f"{self.line}) appears {self.counts[0]} times in the recording and "
                    f"{self.counts[1]} in the replay")
        if self.what == "stdout":
            return (f"stdout differs at line {self.line}: recorded {visible(self.expected)}, "
                    f"replayed {visible(self.actual)}")
        return f"{self.what.replace('_', ' ')} differs: recorded {self.expected!r}, " \
               f"replayed {self.actual!r}"


def visible(line: str | None) -> str:
    """*line* quoted so that two lines that differ look different, wrapped in a terminal too:
    control characters and whitespace other than a single space are escaped (`\\t`, `\\x1b`,
    `\\xa0`, `\\u200b`), and a run of spaces is counted (`⟨12 spaces⟩`), since a wrapped
    report cuts or collapses it."""
    if line is None:
        return "no line"
    parts = []
    for run in _SPACE_RUNS.split(line):
        if len(run) > 1 and run == " " * len(run):
            parts.append(f"⟨{len(run)} spaces⟩")
        else:
            parts.append("".join(_escaped(ch) for ch in run))
    return "'" + "".join(parts) + "'"


_SPACE_RUNS = re.compile(r"( {2,})")


def _escaped(ch: str) -> str:
    if ch in "\\'⟨⟩":
        return "\\" + ch
    if ch == " " or ch.isprintable():
        return ch
    return repr(ch)[1:-1]  # \t, \x1b, \xa0, \u200b


def compile_volatile(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """Compile --volatile-stdout patterns; a bad one is a ValueError naming it."""
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"--volatile-stdout {pattern!r} is not a valid regex: {exc}") from exc
    return tuple(out)


def normalised_lines(stdout: bytes, volatile: Sequence[re.Pattern[str]] = ()) -> list[str]:
    """The lines compared: normalised, without trailing whitespace, and without blank lines
    (spacing, not outcome: CrewAI's console skips the blank line after a panel while another
    thread streams, `ConsoleFormatter.print`, so their number is thread timing)."""
    out = []
    for line in stdout.decode("utf-8", "replace").splitlines():
        if any(p.search(line) for p in volatile):
            continue
        for _, pattern, placeholder in NORMALISATIONS:
            line = pattern.sub(placeholder, line)
        line = line.rstrip()
        if line:
            out.append(line)
    return out


def compare(
    *,
    recorded_exit: int | None,
    recorded_value: JSONValue,
    recorded_stdout: bytes | None,
    exit_code: int,
    value: JSONValue,
    stdout: bytes,
    volatile: Sequence[re.Pattern[str]] = (),
) -> OutcomeDifference | None:
    """The first difference between the recorded outcome and the replayed one, or None."""
    if recorded_exit is not None and recorded_exit != exit_code:
        return OutcomeDifference("exit_code", recorded_exit, exit_code)
    if canonical_bytes(recorded_value) != canonical_bytes(value):
        return OutcomeDifference("final_result", recorded_value, value)
    if recorded_stdout is None:
        return None
    expected = normalised_lines(recorded_stdout, volatile)
    actual = normalised_lines(stdout, volatile)
    if Counter(expected) == Counter(actual):
        return None  # the same lines; only their interleaving differs (see the docstring)
    missing = Counter(expected) - Counter(actual)
    extra = Counter(actual) - Counter(expected)
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else None
        got = actual[index] if index < len(actual) else None
        if want in missing or got in extra:
            if want == got:  # the same text: it is the number of such lines that differs
                counts = (Counter(expected)[want], Counter(actual)[got])
                return OutcomeDifference("stdout", want, got, index + 1, counts)
            return OutcomeDifference("stdout", want, got, index + 1)
    return None  # unreachable: unequal multisets differ at some line


def to_json(difference: OutcomeDifference) -> dict[str, JSONValue]:
    return orjson.loads(orjson.dumps({
        "what": difference.what, "expected": difference.expected,
        "actual": difference.actual, "line": difference.line,
        **({"counts": list(difference.counts)} if difference.counts else {})}))
