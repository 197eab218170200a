"""The adapter contract: everything an adapter under adapters/ builds on, in one module.

Adapters import this module (plus the pure layers `symtrace.model` and `symtrace.errors`),
never `symtrace.api` (the in-process facade, which pulls in the replayer). Besides the hook
table below, it names what adapters need from the session (attribution `context`, the active
session, instance lanes, the final result) and from the tool boundary (`call_tool`, codecs).

Hook tables with a symmetric install/uninstall:

An adapter contains framework glue only. It names the functions to wrap (a table of `Hook`s,
targets written `"package.module:Class.method"`) and, for each, a wrapper factory that turns
what the framework passes into attribution (`symtrace.agent(...)`) and tool boundaries
(`call_tool`). Matching, hashing, storage and graph logic stay in the core.

`PatchingAdapter` derives install/uninstall from the table: it checks the framework is
importable at a supported version, resolves every target first (a missing one raises
HookTargetMissing and nothing is patched), and hands the patches to a
`symtrace.patching.PatchSet`, which patches in order and restores the originals in reverse
order on uninstall — and after a half-failed install.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import threading
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar

from symtrace.boundaries.tools import (
    JSON_CODEC,
    Codec,
    ReplayedToolError,
    acall_tool,
    call_tool,
    error_outcome,
    failure_detail,
)
from symtrace.errors import AdapterAlreadyInstalled, AdapterUnavailable, HookTargetMissing
from symtrace.frameworks.refusals import refuse_construct
from symtrace.model.seeded_ids import MAIN_SEQUENCE, SeededIds
from symtrace.patching import Patch, PatchSet
from symtrace.session import context
from symtrace.session.core import TOOL, BoundaryCall, active, final_result, instance_lane

Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class Hook:
    target: str  # "package.module:Class.method"
    wrap: Wrapper  # original -> replacement
    purpose: str = ""  # what the hook attributes or captures, for `symtrace adapters`


def resolve_target(target: str) -> tuple[Any, str, Any]:
    """(owner, attribute, current value) for a hook target, or HookTargetMissing."""
    module_name, _, qualname = target.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise HookTargetMissing(f"hook target {target}: cannot import {module_name}") from exc
    parts = qualname.split(".")
    for part in parts[:-1]:
        try:
            owner = getattr(owner, part)
        except AttributeError as exc:
            raise HookTargetMissing(f"hook target {target}: {part} not found") from exc
    attribute = parts[-1]
    # On a class, the method must be defined *there*: patching an inherited attribute would
    # shadow the base's method on this class only, and uninstall would then delete nothing.
    defined = attribute in vars(owner) if isinstance(owner, type) else hasattr(owner, attribute)
    if not defined:
        where = getattr(owner, "__name__", owner)
        raise HookTargetMissing(f"hook target {target}: {attribute} is not defined on {where}")
    return (
        owner,
        attribute,
        (vars(owner)[attribute] if isinstance(owner, type) else getattr(owner, attribute)),
    )


class PatchingAdapter:
    """Base class: subclasses set `name`, `module`, `requires` and return `hooks()`."""

    name: ClassVar[str]
    module: ClassVar[str]  # top-level module whose import arms the adapter
    distribution: ClassVar[str]  # PyPI distribution providing `module`
    supported: ClassVar[Callable[[str], bool]] = staticmethod(lambda version: True)
    requires: ClassVar[str] = ""  # human-readable requirement, e.g. "ag2>=0.13.3,<1"
    extra: ClassVar[str] = ""  # symtrace's extra that installs it (pip install 'symtrace[X]')

    def __init__(self) -> None:
        self._patches: PatchSet | None = None

    def hooks(self) -> Sequence[Hook]:
        raise NotImplementedError

    # -- availability ------------------------------------------------------------------------
    @classmethod
    def is_available(cls) -> bool:
        return importlib.util.find_spec(cls.module) is not None

    def check_available(self) -> None:
        if not self.is_available():
            install = f"'symtrace[{self.extra}]'" if self.extra else f"'{self.distribution}'"
            raise AdapterUnavailable(
                f"adapter {self.name!r} needs {self.requires or self.distribution}, which is not "
                f"installed (pip install {install})"
            )
        try:
            version = metadata.version(self.distribution)
        except metadata.PackageNotFoundError as exc:
            raise AdapterUnavailable(
                f"adapter {self.name!r}: module {self.module} is importable but distribution "
                f"{self.distribution} is not installed; it needs {self.requires}"
            ) from exc
        if not type(self).supported(version):
            raise AdapterUnavailable(
                f"adapter {self.name!r} supports {self.requires}; installed {self.distribution} "
                f"is {version}"
            )

    # -- install / uninstall -----------------------------------------------------------------
    @property
    def installed(self) -> bool:
        return self._patches is not None and self._patches.installed

    def install(self) -> None:
        if self.installed:
            raise AdapterAlreadyInstalled(f"adapter {self.name!r} is already installed")
        self.check_available()
        patches = PatchSet(
            Patch(owner, attribute, _keeping_descriptor(hook.wrap))
            for hook in self.hooks()
            for owner, attribute, _ in [resolve_target(hook.target)]
        )
        patches.install()  # restores what it applied if a wrapper fails half-way
        self._patches = patches

    def uninstall(self) -> None:
        if self._patches is not None:
            self._patches.uninstall()
            self._patches = None


def consumption_point(original: Callable[..., Any]) -> Callable[..., Any]:
    """Hook wrapper for a *consumption point*: where the framework shows that its caller is
    done with the last result it got (it hands on the message made of it, or parks until its
    next message). Reaching it lets the next result be handed out at once
    (session/scheduling.py), instead of waiting for the caller's next boundary call or the
    end of its task. Adapters list these in their hook tables; the call runs unchanged."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def aconsumed(*args: Any, **kwargs: Any) -> Any:
            session = active()
            if session is not None:
                session.consumed()
            return await original(*args, **kwargs)

        return aconsumed

    @functools.wraps(original)
    def consumed(*args: Any, **kwargs: Any) -> Any:
        session = active()
        if session is not None:
            session.consumed()
        return original(*args, **kwargs)

    return consumed


def _keeping_descriptor(wrap: Wrapper) -> Callable[[Any], Any]:
    """Wrap the function inside a classmethod/staticmethod and re-wrap it the same way."""

    def replace(original: Any) -> Any:
        if isinstance(original, classmethod):
            return classmethod(wrap(original.__func__))
        if isinstance(original, staticmethod):
            return staticmethod(wrap(original.__func__))
        return wrap(original)

    return replace


def seeded_uuid4(original: Callable[[], uuid.UUID],
                 sequence: Callable[[], str] | None = None) -> Callable[[], uuid.UUID]:
    """Wrapper factory for a framework's `uuid4`: while a session is active, ids are seeded
    (derived from s0 by the scheme the bundle records, model/seeded_ids.py), so a restarted
    run gets the same ids (frameworks print them, or name things after them); outside a
    session, untouched. *sequence* names the causal sequence the caller draws in (classic
    AG2: its concurrent chat), so concurrent sequences draw their own ids."""

    @functools.wraps(original)
    def uuid4() -> uuid.UUID:
        session = active()
        if session is None:
            return original()
        return _seeded_ids(session).uuid4(sequence() if sequence is not None else MAIN_SEQUENCE)

    return uuid4


_ids_of: weakref.WeakKeyDictionary[Any, SeededIds] = weakref.WeakKeyDictionary()
_ids_lock = threading.Lock()


def _seeded_ids(session: Any) -> SeededIds:
    """*session*'s seeded ids: a replay's follow its bundle, a recording's its new manifest."""
    with _ids_lock:
        ids = _ids_of.get(session)
        if ids is None:
            bundle = getattr(session, "bundle", None)
            manifest = getattr(session.sink, "manifest", None)
            state = (bundle.initial_state if bundle is not None
                     else manifest["initial_state"] if manifest is not None else {})
            ids = _ids_of[session] = SeededIds(state)
        return ids


__all__ = [  # the contract: the names adapters may rely on
    "JSON_CODEC",
    "TOOL",
    "BoundaryCall",
    "Codec",
    "Hook",
    "PatchingAdapter",
    "ReplayedToolError",
    "Wrapper",
    "acall_tool",
    "active",
    "call_tool",
    "context",
    "error_outcome",
    "failure_detail",
    "final_result",
    "instance_lane",
    "refuse_construct",
    "resolve_target",
    "seeded_uuid4",
]
