"""The knobs of the scheduling rule (session/scheduling.py), in one immutable object.

Built once with the replay's options (`ReplayOptions.scheduling`, from `--order-timeout` or
the API's `order_timeout=`), checked there (a bad value is a UsageError, exit 2, before
anything runs) and handed to the replayer — across the launch file for a program in a child
process. Nothing deeper reads the environment for them. Light on purpose: the option parser
imports it at start-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from symtrace.errors import UsageError

DEFAULT_STALL_TIMEOUT = 20.0  # seconds without any boundary progress before a hold stops
INFER_FROM_STATE = True  # the state-inference fallback is on unless turned off
_BAD = "order timeout (--order-timeout, order_timeout=) {!r}: give a number of seconds > 0"


@dataclass(frozen=True, slots=True)
class SchedulingOptions:
    # a held call waits this long without any boundary progress, then SYM-R105
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    chaos_seed: int | None = None  # tests only: random pauses at hand-off points
    # the fallback: a receiver that shows nothing at symtrace's boundaries is judged done
    # from its state (blocked frames, CPU clock, a quiescent loop); see scheduling.py
    infer_from_state: bool = INFER_FROM_STATE

    def __post_init__(self) -> None:
        value = self.stall_timeout
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value <= 0:
            raise UsageError(_BAD.format(value))
        object.__setattr__(self, "stall_timeout", float(value))  # JSON keeps it a float
        if self.chaos_seed is not None and (isinstance(self.chaos_seed, bool)
                                            or not isinstance(self.chaos_seed, int)):
            raise UsageError(f"chaos seed {self.chaos_seed!r}: give an integer")

    @classmethod
    def build(cls, order_timeout: float | str | None = None,
              infer_from_state: bool | None = None) -> SchedulingOptions:
        """From loose input (`--order-timeout` is a string); None: the default."""
        infer = INFER_FROM_STATE if infer_from_state is None else bool(infer_from_state)
        if order_timeout is None:
            return cls(infer_from_state=infer)
        if isinstance(order_timeout, str):
            try:
                return cls(float(order_timeout), infer_from_state=infer)
            except (ValueError, UsageError):
                raise UsageError(_BAD.format(order_timeout)) from None
        return cls(order_timeout, infer_from_state=infer)
