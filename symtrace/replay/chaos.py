"""Test-only scheduling chaos at hand-off points (rr's chaos mode as the model).

With ``SYMTRACE_CHAOS`` set (``1``: a fresh seed; an integer: that seed), replay pauses for a
random moment right after a recorded result is handed to its caller and right before a held
caller is released: threads sleep a few milliseconds or not at all, asyncio tasks yield to
the loop a random number of times (an asyncio task is delayed only by other ready callbacks:
on replay no I/O or timer stands between a result and its use, so a timer here would change
the program, not its scheduling). That is where a loaded machine delays one caller against
another, so a replay whose order rests on timing diverges under chaos, and one whose order
rests on state does not. The draws come from a private generator, never from Python's global
`random` (which replay seeds for the program). Unset (the default), the hooks do nothing.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import time

from symtrace.errors import SessionError

CHAOS_ENV = "SYMTRACE_CHAOS"
THREAD_PAUSES = (0.0, 0.0, 0.0005, 0.002, 0.006)  # seconds a thread may be held back
MAX_YIELDS = 8  # an asyncio task yields 0..MAX_YIELDS times


class Chaos:
    """Random pauses at hand-off points; inert unless enabled."""

    def __init__(self, seed: int | None) -> None:
        self.enabled = seed is not None
        self.seed = seed
        self._rng = random.Random(seed)

    @classmethod
    def from_env(cls) -> Chaos:
        raw = os.environ.get(CHAOS_ENV, "").strip()
        if not raw or raw == "0":
            return cls(None)
        if raw == "1":
            return cls(secrets.randbits(32))
        try:
            return cls(int(raw))
        except ValueError:
            raise SessionError(f"{CHAOS_ENV} must be 1 or an integer seed, got {raw!r}") from None

    def pause(self) -> None:
        if self.enabled:
            delay = self._rng.choice(THREAD_PAUSES)
            if delay:
                time.sleep(delay)

    async def apause(self) -> None:
        if not self.enabled:
            return
        for _ in range(self._rng.randint(0, MAX_YIELDS)):
            await asyncio.sleep(0)
