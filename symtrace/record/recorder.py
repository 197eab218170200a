"""The recording session: every boundary call goes live and is recorded."""

from __future__ import annotations

from symtrace.session.core import BoundaryCall, Session, Ticket


class Recorder(Session):
    """Every call goes live and is recorded."""

    mode = "record"

    def begin(self, call: BoundaryCall) -> Ticket:
        self.handoff.arrived()  # a caller's next call: it is done with its last result
        return self._open_live(call, call.request)
