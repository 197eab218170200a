"""Frameworks whose calls symtrace cannot record faithfully: refused loudly instead of
recorded without them.

PyPI `ag2` ships two frameworks: AG2 Classic (`ag2<1`, module `autogen`, adapter `ag2`) and
AG2 1.x (module `ag2`, adapter `ag2v1`, docs/adapters/ag2v1.md). A later major version of
module `ag2` is neither: the hooks adapter `ag2v1` relies on (agent turns, tool execution) are
AG2 1.x's, so under ag2>=2 tool calls would not be boundaries (a replay would run the tool
bodies live) and LLM calls would lose their agents.

So while a session (record or replay) is active, importing module `ag2` of distribution
ag2>=2 raises UnsupportedFrameworkError (exit code 94) before the module runs, and starting a
session in a process that already imported it fails before anything is written.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from importlib import metadata

from symtrace.errors import AdapterError, UnsupportedConstruct
from symtrace.patching import find_elsewhere, install_finder

# module name -> (distribution, first unsupported major version, why, what to do instead)
UNSUPPORTED: dict[str, tuple[str, int, str, str]] = {
    "ag2": (
        "ag2",
        2,
        "symtrace's adapter ag2v1 knows the hooks of AG2 1.x only (agent turns, tool "
        "execution): tool calls would not be boundaries and a replay would run them live",
        "use AG2 1.x (pip install 'symtrace[ag2v1]', ag2==1.2.1) or AG2 Classic "
        "(pip install 'symtrace[ag2-classic]', ag2==0.14.0, module autogen)",
    ),
}
DOC = "docs/adapters/ag2v1.md"
_FRAMEWORK_REFUSAL = "symtrace cannot record or replay programs using "  # every such reason

_lock = threading.Lock()
_finder: _RefusingFinder | None = None
_refused: list[str] = []  # every refusal raised in this process, for a parent to read back


class UnsupportedFrameworkError(AdapterError):
    """The program uses a framework symtrace cannot record faithfully (exit code 94).

    Not an ImportError on purpose: `try: import x except ImportError` must not hide it."""


def refusal(module: str, location: Any = None) -> str | None:
    """Why *module* is refused, or None. Only the module of the named distribution at an
    unsupported version is refused: a user's own `ag2.py` is not."""
    entry = UNSUPPORTED.get(module)
    if entry is None:
        return None
    dist_name, first_bad, why, instead = entry
    from importlib import metadata  # here: only a watched module's import asks (fast start)

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    if _major(dist.version) < first_bad:
        return None
    if location is not None and not _belongs(dist, module, location):
        return None
    return (
        f"{_FRAMEWORK_REFUSAL}{dist_name} {dist.version} "
        f"(module {module}): {why}. Instead, {instead}; see {DOC}"
    )


def check_imported() -> None:
    """Refuse a session in a process that already imported an unsupported framework."""
    for module in UNSUPPORTED:
        loaded = sys.modules.get(module)
        if loaded is not None:
            reason = refusal(module, getattr(loaded, "__file__", None))
            if reason:
                _refuse(reason)


def arm() -> None:
    """Install the import-time refusal (once; again if someone reset sys.meta_path, as
    pytester does after an inner run). It acts only while a session is active."""
    global _finder
    with _lock:
        if _finder is None:
            _finder = _RefusingFinder()
        install_finder(_finder)


class _RefusingFinder:  # a meta path finder, by protocol (fast start: no importlib.abc)
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname not in UNSUPPORTED:
            return None
        from symtrace.session.core import active

        if active() is None:
            return None
        spec = find_elsewhere(self, fullname, path, target)
        if spec is not None:
            reason = refusal(fullname, spec.origin)
            if reason:
                _refuse(reason)
        return None


def refused() -> str | None:
    """The first refusal raised in this process (None if none): a program may catch the
    error, so whoever finalizes a recording asks here rather than trusting the exit code."""
    return _refused[0] if _refused else None


def refusals() -> tuple[str, ...]:
    """Every refusal raised in this process so far, oldest first."""
    return tuple(_refused)


def _refuse(reason: str) -> NoReturn:
    _refused.append(reason)
    raise UnsupportedFrameworkError(reason)


def refuse_construct(reason: str) -> NoReturn:
    """Raise UnsupportedConstruct (exit 94) for a construct an adapter cannot record, and
    remember it like a framework refusal: the program's framework may catch the exception or
    turn it into an ordinary crash, and whoever finalizes the recording must still refuse."""
    _refused.append(reason)
    raise UnsupportedConstruct(reason)


def refusal_error(reason: str) -> AdapterError:
    """The typed error (exit 94) for a refusal read back from a child process by its text."""
    if reason.startswith(_FRAMEWORK_REFUSAL):
        return UnsupportedFrameworkError(reason)
    return UnsupportedConstruct(reason)



def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def _belongs(dist: metadata.Distribution, module: str, location: Any) -> bool:
    """Is the module found at *location* the one the distribution installed?"""
    try:
        installed = Path(str(dist.locate_file(module))).resolve()
        found = Path(str(location)).resolve()
    except (OSError, TypeError):
        return True  # cannot tell: refusing is the safe side
    return found == installed or installed in found.parents
