"""Frameworks whose LLM calls symtrace cannot see: refused loudly instead of recorded empty.

PyPI `ag2>=1.0` (module `ag2`) is a different framework from the classic AG2 API (`ag2<1`,
module `autogen`). It reaches its providers through openai 3, which sends over `httpx2`, a
fork of httpx with its own module and transport classes. symtrace's LLM boundary patches
`httpx`'s transports, so under ag2>=1.0 a recording would hold no LLM call at all and a
replay would let every call go live. Checked by hand against ag2 1.2.1 / openai 3.57.0 /
httpx2 2.16.2: the stub served the request, the bundle held only `final_result_0000`.

So while a session (record or replay) is active, importing module `ag2` of distribution
ag2>=1 raises UnsupportedFrameworkError (exit code 94) before the module runs, and starting a
session in a process that already imported it fails before anything is written.
docs/adapters/ag2v1.md says what supporting it would take.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from symtrace.errors import AdapterError
from symtrace.patching import install_finder, spec_elsewhere

# module name -> (distribution, first unsupported major version, why)
UNSUPPORTED: dict[str, tuple[str, int, str]] = {
    "ag2": (
        "ag2",
        1,
        "its LLM calls go through openai 3 over httpx2, which symtrace's httpx boundary does "
        "not see (a recording would miss every LLM call, a replay would let them go live)",
    ),
}
DOC = "docs/adapters/ag2v1.md"

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
    dist_name, first_bad, why = entry
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    if _major(dist.version) < first_bad:
        return None
    if location is not None and not _belongs(dist, module, location):
        return None
    return (
        f"symtrace cannot record or replay programs using {dist_name} {dist.version} "
        f"(module {module}): {why}. Use the classic API instead: pip install 'symtrace[ag2]' "
        f"(ag2==0.14.0, module autogen); see {DOC}"
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


class _RefusingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname not in UNSUPPORTED:
            return None
        from symtrace.session.core import active

        if active() is None:
            return None
        spec = spec_elsewhere(self, fullname, path, target)
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
