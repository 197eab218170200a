"""Every error symtrace raises, in one tree.

    SymtraceError
    ├── BundleError
    │   ├── BundleNotFound            (also FileNotFoundError)
    │   ├── BundleFormatError         (also ValueError) — corrupt, truncated, not a bundle
    │   │   └── UnsupportedBundleVersion
    │   ├── BundleIntegrityError      — a stored digest does not match the bytes
    │   ├── BundleExistsError         (also FileExistsError) — refusing to overwrite
    │   └── BundleWriteError          (also OSError) — output not writable
    ├── CanonicalizationError         (also TypeError) — a value has no canonical JSON form
    ├── RedactionError                — a secret-shaped value was about to reach disk
    ├── AnchorError                   (also LookupError)
    │   ├── UnknownEvent              — no event with that id
    │   └── NoDependentLLMRequest     — anchor is not an LLM call and nothing LLM depends on it
    ├── AdapterError
    │   ├── AdapterNotFound           (also LookupError)
    │   ├── AdapterUnavailable        (also ImportError) — framework not installed
    │   ├── HookTargetMissing         (also AttributeError, PatchTargetMissing)
    │   ├── AdapterAlreadyInstalled   (also RuntimeError, AlreadyPatched)
    │   ├── NotInstrumented           — the program never ran symtrace's bootstrap
    │   ├── HandBackError             — the instrumented child's message to the parent (or
    │   │                               the parent's launch file) is malformed or of another
    │   │                               protocol version (symtrace.process.protocol)
    │   ├── UnsupportedConstruct      — a framework construct no bundle could replay (refused
    │   │                               at record time, before it runs)
    │   └── UnrecordedLLMRequest      — an LLM request sent around every HTTP seam while
    │                                   recording (the recording fails)
    ├── PatchError                    — a global could not be patched (symtrace.patching)
    │   ├── PatchTargetMissing        (also AttributeError)
    │   └── AlreadyPatched            (also RuntimeError)
    ├── SessionError                  (also RuntimeError) — nesting / no active session
    ├── UsageError                    (also ValueError) — contradictory or incomplete options
    ├── ReplayNotApproved             — a bundle's command, not approved: not run (exit 97)
    └── ReplayError
        ├── ReplayDivergence          — carries a DivergenceReport
        │   ├── RequestMismatch
        │   ├── UnexpectedCall
        │   ├── MissingCall
        │   ├── OrderUnreachable      — the recorded completion order cannot be reached
        │   ├── EgressBlocked         (also ConnectionRefusedError) — a connection the bundle
        │   │                           does not serve, refused at the socket (SYM-R106)
        │   ├── OutcomeMismatch       — exit code, final result or stdout differ (SYM-R107)
        │   └── GuidedAnchorFailed    — every guided attempt of a selective replay's anchor
        │                               failed (HTTP error, timeout, cut-off stream): the
        │                               guidance never reached the model (SYM-R109)
        └── UnreplayableEvent

This module imports nothing from symtrace so that every other module can raise from it.
CLI exit codes live here too, next to the errors they stand for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from symtrace.model.divergence import DivergenceReport

# Exit codes of the `symtrace` CLI. A replayed program's own exit code is passed through
# unchanged; these are chosen high so they are unlikely to collide with a program's own.
EXIT_USAGE = 2
EXIT_DIVERGED = 90
EXIT_BUNDLE = 91
EXIT_ANCHOR = 92
EXIT_WRITE = 93
EXIT_ADAPTER = 94
EXIT_REDACTION = 95
EXIT_NOT_APPROVED = 97  # a bundle's command not run: no consent (a terminal, or --trust)


class SymtraceError(Exception):
    """Base of every error symtrace raises."""

    exit_code: int = 1


class BundleError(SymtraceError):
    """A bundle cannot be read, trusted or written."""

    exit_code = EXIT_BUNDLE


class BundleNotFound(BundleError, FileNotFoundError):
    """No bundle at the given path (no manifest.json)."""


class BundleFormatError(BundleError, ValueError):
    """The bytes are not a valid bundle: corrupt JSON, missing fields, truncated lines."""


class UnsupportedBundleVersion(BundleFormatError):
    """The bundle's format_version is not one this symtrace reads."""

    def __init__(self, found: object, supported: int, retired: str | None = None) -> None:
        self.found = found
        self.supported = supported
        what = f" ({retired})" if retired else ""
        super().__init__(
            f"bundle format_version {found!r}{what} is not supported (this symtrace reads "
            f"version {supported}); re-record the run with this version of symtrace"
        )


class BundleIntegrityError(BundleError):
    """A stored digest does not match the content it names (tampered or damaged bundle).

    `where` names the first place that differs: `manifest.task`, `events[12].agent`,
    `blobs.jsonl line 7`, `stdout.txt line 3`, ... (docs/bundle-format.md, *Integrity*).
    """

    def __init__(self, what: str, *, where: str = "", bundle: str = "") -> None:
        self.what = what
        self.where = where
        self.bundle = bundle
        place = ": ".join(part for part in (bundle, where) if part)
        super().__init__(f"{place}: {what}" if place else what)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_integrity_error, (self.what, self.where, self.bundle))


def _integrity_error(what: str, where: str, bundle: str) -> BundleIntegrityError:
    return BundleIntegrityError(what, where=where, bundle=bundle)


class BundleExistsError(BundleError, FileExistsError):
    """The output directory already holds a bundle and overwriting was not requested."""

    exit_code = 93


class BundleWriteError(BundleError, OSError):
    """The output location cannot be written."""

    exit_code = 93


class CanonicalizationError(SymtraceError, TypeError):
    """A value has no canonical JSON form; we refuse to fall back to repr()."""

    def __init__(self, path: str, value: object) -> None:
        self.path = path
        self.type_name = type(value).__name__
        super().__init__(f"cannot canonicalize {self.type_name} at {path or '/'}")


class RedactionError(SymtraceError):
    """A secret-shaped value would have been written; nothing was written."""

    exit_code = EXIT_REDACTION


class AnchorError(SymtraceError, LookupError):
    """The requested intervention anchor cannot be used."""

    exit_code = EXIT_ANCHOR


class UnknownEvent(AnchorError):
    """No event with this id exists in the bundle."""

    def __init__(self, event_id: str, known: list[str]) -> None:
        self.event_id = event_id
        hint = ", ".join(known[:8]) + (" …" if len(known) > 8 else "")
        super().__init__(f"no event {event_id!r} in the bundle (events: {hint})")


class NoDependentLLMRequest(AnchorError):
    """The anchor is not an LLM call and no LLM call depends on it."""


class AdapterError(SymtraceError):
    """A framework adapter cannot be found, loaded or installed."""

    exit_code = EXIT_ADAPTER


class PatchError(SymtraceError):
    """A module or class attribute could not be patched: the process cannot be instrumented."""

    exit_code = EXIT_ADAPTER


class PatchTargetMissing(PatchError, AttributeError):
    """The attribute to patch does not exist."""


class AlreadyPatched(PatchError, RuntimeError):
    """install() was called twice without uninstall()."""


class UnsupportedConstruct(AdapterError):
    """The program uses a framework construct whose outcome is not a function of its boundaries
    (e.g. thread timing decides it): refused at record time, before anything of it runs."""


class UnrecordedLLMRequest(AdapterError):
    """An LLM-shaped request left the process outside every symtrace HTTP seam while
    recording (exit 94): the recording would miss it and a replay would send it live."""


class AdapterNotFound(AdapterError, LookupError):
    """No adapter is registered under this name."""


class AdapterUnavailable(AdapterError, ImportError):
    """The adapter's framework is not installed (or not at a supported version)."""


class HookTargetMissing(AdapterError, PatchTargetMissing):
    """A hook names a function the installed framework does not have."""


class AdapterAlreadyInstalled(AdapterError, AlreadyPatched):
    """install() was called twice without uninstall()."""


class NotInstrumented(AdapterError):
    """The program ended normally without symtrace's bootstrap ever running in it."""


class HandBackError(AdapterError):
    """A launch file or a child's hand-back that symtrace.process.protocol cannot read: not
    JSON, another protocol version, a missing or mistyped field, an unknown status."""


class SessionError(SymtraceError, RuntimeError):
    """A recording/replay session was nested or used while not active."""


class UsageError(SymtraceError, ValueError):
    """The command line asks for something contradictory or incomplete (`--anchor` without
    guidance, an unreadable `--guidance-file`): exit 2, nothing started or written."""

    exit_code = EXIT_USAGE


class ReplayNotApproved(SymtraceError):
    """A replay would run a command this user neither recorded nor approved on this machine,
    and nobody could be asked (no terminal, no --trust): exit 97, nothing started or written
    (symtrace.process.consent)."""

    exit_code = EXIT_NOT_APPROVED


class ReplayError(SymtraceError):
    """Replay could not reproduce the recorded run."""

    exit_code = EXIT_DIVERGED


class ReplayDivergence(ReplayError):
    """The replayed program did something the bundle does not allow. `.report` says what."""

    # The message is the whole report, except in a program run by `symtrace replay -- CMD`:
    # there the CLI prints the report once, last, and the exception (shown in the program's
    # own traceback, once per SDK retry) says only what happened and where
    # (symtrace.process.child turns this off for the child process).
    full_message: ClassVar[bool] = True

    def __init__(self, report: DivergenceReport) -> None:
        self.report = report
        super().__init__(report.headline)

    def __str__(self) -> str:
        if ReplayDivergence.full_message:
            return self.report.render()
        return (
            f"{self.report.headline}: symtrace refused this call instead of sending it live; "
            "the report follows when the program ends"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # keep the report when copied across threads
        return (type(self), (self.report,))


class RequestMismatch(ReplayDivergence):
    """A boundary call's canonical request differs from the expected record."""


class UnexpectedCall(ReplayDivergence):
    """A boundary call arrived that the bundle has no record for."""


class MissingCall(ReplayDivergence):
    """The run ended with recorded boundary calls never made."""


class OrderUnreachable(ReplayDivergence):
    """A held result waits for recorded results the program never asks for (SYM-R105)."""


class EgressBlocked(ReplayDivergence, ConnectionRefusedError):
    """A strict replay refused a network connection the bundle does not serve (SYM-R106).

    Also a ConnectionRefusedError, so the program's own connection handling sees what it
    would see from a closed port; the session keeps the divergence even if it is swallowed."""


class OutcomeMismatch(ReplayDivergence):
    """Every boundary call matched, but the run ended differently (SYM-R107)."""


class GuidedAnchorFailed(ReplayDivergence):
    """No guided attempt of a selective replay's anchor succeeded (SYM-R109): the provider
    answered every one, retries included, with an HTTP error, a transport failure or a
    stream cut off before its end. The repair never reached the model, so the run is no
    evidence about it: an infrastructure error, not a failed repair."""


class UnreplayableEvent(ReplayError):
    """A recorded event cannot be materialised again (e.g. an analysis-only trace)."""
