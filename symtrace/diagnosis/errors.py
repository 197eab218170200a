"""Errors raised by symtrace.diagnosis, added under the project's error tree.

    SymtraceError
    ├── DiagnosisError
    │   ├── DiagnosisConfigError  (also ValueError) — bad coefficients, rule ids or options
    │   ├── TraceImportError      (also ValueError) — a log file cannot be turned into a trace
    │   ├── LabelsError           (also ValueError) — a --eval labels file is unusable
    │   ├── TemplateError         (also ValueError) — a prompt template file is unusable
    │   ├── JudgeError            (also RuntimeError) — the semantic judge failed or answered badly
    │   └── RepairUnavailable     (also RuntimeError) — selective replay is not available
    └── AnchorError
        └── NoEligibleAnchor      — no node passed the gate (Algorithm 4 returns "no intervention")

This module imports only symtrace.errors.
"""

from __future__ import annotations

from symtrace.errors import EXIT_ANCHOR, EXIT_BUNDLE, EXIT_USAGE, AnchorError, SymtraceError


class DiagnosisError(SymtraceError):
    """Diagnosis or repair could not run."""


class DiagnosisConfigError(DiagnosisError, ValueError):
    """A scoring config, rule selection or option is invalid (unknown key, unknown rule id)."""

    exit_code = EXIT_USAGE


class TraceImportError(DiagnosisError, ValueError):
    """An existing log cannot be converted into an analysis-only trace; says where and why."""

    exit_code = EXIT_BUNDLE


class LabelsError(DiagnosisError, ValueError):
    """A labels file for `diagnose --eval` is unreadable or an entry is malformed."""

    exit_code = EXIT_USAGE


class TemplateError(DiagnosisError, ValueError):
    """A prompt template override names an unknown template or an unknown placeholder."""

    exit_code = EXIT_USAGE


class JudgeError(DiagnosisError, RuntimeError):
    """The semantic judge could not be reached or did not answer in the expected JSON shape."""


class RepairUnavailable(DiagnosisError, RuntimeError):
    """Selective replay (symtrace.process.runner.replay_bundle) is not installed in this build."""


class NoEligibleAnchor(AnchorError):
    """No node has a confirmed symptom with c_f ≥ θ and an LLM boundary to resume at."""

    exit_code = EXIT_ANCHOR
