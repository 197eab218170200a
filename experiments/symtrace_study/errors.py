"""Typed errors of the study runner; each maps to a process exit code."""

from __future__ import annotations

from symtrace.errors import EXIT_ADAPTER, EXIT_USAGE, SymtraceError


class StudyError(SymtraceError):
    """Base of the study runner's own failures."""


class StudyConfigError(StudyError, ValueError):
    """The study config is malformed; raised before anything is written."""

    exit_code = EXIT_USAGE


class BackendUnavailable(StudyError, ImportError):
    """A backend's optional dependency is missing (the message names the extra to install)."""

    exit_code = EXIT_ADAPTER


class StudyStateError(StudyError):
    """The output directory belongs to another study (its frozen case set does not match)."""

    exit_code = EXIT_USAGE


class TooManyErrors(StudyError):
    """More attempts ended in system errors than the config's `max_error_rate` allows."""

    exit_code = 3


class StudyConfigChanged(StudyStateError):
    """`--resume` with a setting that changes results (equivalence, attempts, judge, templates,
    k, trace_back, theta, ...): the stored rows were produced under the old value, so they would
    be relabelled. Refused; the message names every changed key. Start a new output directory."""

    def __init__(self, changed: dict[str, tuple[object, object]], out: object) -> None:
        self.changed = changed
        lines = "; ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in changed.items())
        super().__init__(
            f"{out} was run with other result-affecting settings ({lines}); its rows would be "
            "reported under the new ones. Use another output directory (--out) for the new "
            f"settings, or restore them to resume. Changed: {', '.join(changed)}")


class JudgeUnavailable(StudyError):
    """The configured judge does not answer a pre-flight request: refused before any attempt
    (otherwise every judged attempt would end in a system error)."""

    exit_code = EXIT_ADAPTER


class StudyInterrupted(StudyError):
    """SIGINT/SIGTERM stopped the run: attempts in flight are discarded (never rows); `--resume`
    runs them. Exits 128 + the signal number (130 / 143), like a shell."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}: the attempts in flight "
                         "were discarded; run again with --resume to finish the study")


class JudgeReplyMalformed(StudyError):
    """The RQ1 reproduction judge answered something that is not a verdict (no JSON object,
    no boolean `reproduced`, no rationale). Never read as a default: the judging stops, the
    verdicts already stored stay, and a re-run asks only the attempts still unjudged."""

    exit_code = EXIT_ADAPTER
