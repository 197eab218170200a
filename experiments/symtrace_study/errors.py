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
