"""AG2 1.x Network ids, the same in every run of a session.

The Network mints agent, channel, endpoint, request and envelope ids from the wall clock and
`os.urandom` (`ag2.network.ids`). They reach the model: the Network plugin's tools answer with
them (`say` returns "posted envelope <id>", `channels`/`peers`/`tasks` list ids), and those
tools run on replay like the rest of AG2's plumbing, so a fresh id would change the next
request and a strict replay would diverge on a run that did nothing different.

While a session is active, ids are drawn from Python's `random`, which the session seeded from
s0 (as `seeded_uuid4` does for AG2's uuid4): the same ids in the same order on replay.
Envelope ids keep their one property the hub relies on, strict creation order per hub (the
delivery cursor compares them): their 8-byte prefix counts up instead of reading the clock.
Outside a session both are untouched.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from symtrace.frameworks.contract import active


def seeded_make_id(original: Callable[[], str]) -> Callable[[], str]:
    """`make_id()` (and every module that imported it by name): 32 hex chars."""

    @functools.wraps(original)
    def make_id() -> str:
        if active() is None:
            return original()
        return f"{random.getrandbits(128):032x}"

    return make_id


def seeded_monotonic_id(original: Callable[[Any], str]) -> Callable[[Any], str]:
    """`_MonotonicIds.__call__`: a counter prefix (strictly increasing, as the clamped clock
    was) and a seeded suffix."""

    @functools.wraps(original)
    def __call__(self: Any) -> str:
        if active() is None:
            return original(self)
        with self._lock:
            self._last_ns += 1
            prefix = self._last_ns
        return f"{prefix:016x}{random.getrandbits(64):016x}"

    return __call__
