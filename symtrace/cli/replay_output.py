"""How `symtrace replay` and `symtrace repair` end: the divergence report, last, fitting the
terminal, and one line that ties the program's own traceback above to it.

When a replay diverges, symtrace refuses the call in the program, which usually fails with
its SDK's connection error (retried, logged each time) before it exits. The program's last
traceback is kept, the retries before it are summarised in one line under the report
(symtrace.process.held_stderr), the report comes after the traceback, and the closing line
says the traceback is the consequence of the divergence, not a second problem.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any, TextIO

from symtrace.cli import term
from symtrace.model.divergence import DivergenceKind
from symtrace.process.held_stderr import Held

# Divergences raised inside the program at a call it made (a request refused), as opposed to
# a missing call, which is found after the program ended normally.
REFUSED = (
    DivergenceKind.REQUEST_MISMATCH,
    DivergenceKind.UNEXPECTED_CALL,
    DivergenceKind.ORDER_UNREACHABLE,
    DivergenceKind.EGRESS_BLOCKED,
)


def divergence_text(outcome: Any, columns: int, *, color: bool = False) -> str:
    """The report for a diverged *outcome* (runner.ReplayOutcome), ending with the line that
    explains the program's own error output."""
    report = outcome.report
    if report is None:  # R104: nothing handed back; the runner's own text
        body = (outcome.report_json or {}).get("rendered") or "replay diverged"
        return "\n".join([term.rule("symtrace: replay not verified", columns),
                          *textwrap.wrap(body, columns)])
    lines = [term.rule("symtrace: replay diverged", columns), report.render(columns, color=color)]
    code = outcome.program_exit_code
    if report.kind in REFUSED and code not in (None, 0):
        lines += textwrap.wrap(
            f"The traceback above is a consequence of this divergence: symtrace refused the "
            f"call instead of sending it live, and the program exited {code}.",
            columns,
        )
    elif report.kind in REFUSED:
        lines += textwrap.wrap(
            "The program caught the refused call and exited 0; the replay still failed.",
            columns,
        )
    elif report.kind is DivergenceKind.ANCHOR_FAILED:
        lines += textwrap.wrap(
            "Any error output above is the provider failing the anchor: symtrace sent the "
            "guidance with every attempt. No child bundle was written.", columns)
    left_out = Held("", getattr(outcome, "stderr_left_out", "")).summary()
    if left_out:
        lines += textwrap.wrap(left_out, columns, break_on_hyphens=False)
    return "\n".join(lines)


def anchor_attempts_text(lineage: dict[str, Any]) -> str:
    """How many attempts the anchor of a selective replay took, and what failed before."""
    attempts = lineage.get("anchor_attempts") or []
    if len(attempts) <= 1:
        return "the anchor took 1 attempt"
    failed = [str(a.get("failure")) for a in attempts if a.get("failure")]
    return (f"the anchor took {len(attempts)} attempts, each with the guidance "
            f"(retried after {'; '.join(failed)})")


def print_divergence(outcome: Any, stream: TextIO | None = None) -> None:
    out = sys.stderr if stream is None else stream
    out.flush()
    out.write(divergence_text(outcome, term.width(out), color=term.color(out)) + "\n")
    out.flush()
