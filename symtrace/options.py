"""What a recording or a replay is asked to do, checked once: `RecordOptions`, `ReplayOptions`.

The CLI builds them from its arguments, the Python API (`symtrace.record`/`replay`, the
process-mode entry points `record_command`/`replay_bundle`) from its keyword arguments, both
with `build(...)`, which takes loose input (any sequence, a path as str) and gives typed,
immutable options or a UsageError (exit 2) naming the bad value before anything runs. Whoever
receives options trusts them and checks nothing again.

Fields marked *process* apply to `symtrace record/replay -- CMD` only (a program run in a child
process); the in-process sessions refuse options that set them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from symtrace.boundaries.egress import HostPort
from symtrace.errors import UsageError
from symtrace.model.canonical import JSONValue
from symtrace.model.intervention import DEFAULT_PLACEMENT, PLACEMENTS
from symtrace.replay.outcome_check import compile_volatile
from symtrace.session.scheduling_options import SchedulingOptions

Options = TypeVar("Options", "RecordOptions", "ReplayOptions")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JSON_FIELDS = {"task", "state", "config"}  # any JSON value, lists and objects included
DEFAULT_SCHEDULING = SchedulingOptions()  # immutable: one shared default
_SEED_LIMIT = 2**64  # manifest seeds are drawn from 32 bits; any non-negative 64-bit int works


@dataclass(frozen=True)
class RecordOptions:
    task: JSONValue = None  # T: what the run was asked to do
    state: JSONValue = None  # s0 beside the seed
    config: JSONValue = None  # c
    seed: int | None = None  # Python's `random` seed; None: a new one
    secret_envs: tuple[str, ...] = ()  # variables whose values are redacted
    secrets: tuple[str, ...] = ()  # in-process: bare values redacted (SECRET_1, ...)
    adapters: tuple[str, ...] | None = None  # None: every installed framework
    force: bool = False  # replace an existing bundle at the path
    env_keep: tuple[str, ...] = ()  # process: variables kept beside the captured prefixes
    quiet: bool = False  # process: do not echo the program's output

    PROCESS_ONLY = ("env_keep", "quiet")
    IN_PROCESS_ONLY = ("secrets",)  # values are never written to a launch file

    @classmethod
    def build(cls, *, secret_envs: Iterable[str] = (), secrets: Iterable[str] = (),
              adapters: Iterable[str] | None = None, env_keep: Iterable[str] = (),
              overwrite: bool | None = None, **values: Any) -> RecordOptions:
        """Options from loose input (lists, None); a bad value is a UsageError. *overwrite*
        is the in-process API's name of *force*."""
        _known(cls, values)
        if overwrite is not None:
            values["force"] = bool(overwrite) or bool(values.get("force"))
        return cls(secret_envs=_names(secret_envs, "secret variable"),
                   secrets=_strings(secrets, "secret"),
                   adapters=None if adapters is None else _strings(adapters, "adapter"),
                   env_keep=_names(env_keep, "--env"), **values)

    def __post_init__(self) -> None:
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)
                                      or not 0 <= self.seed < _SEED_LIMIT):
            raise UsageError(f"seed {self.seed!r}: give a non-negative integer below 2**64")
        _check_tuples(self)


@dataclass(frozen=True)
class ReplayOptions:
    anchor: str | None = None  # selective: the event where the run goes live
    guidance: str | None = None  # Δ added to the anchor's request (needs anchor)
    placement: str = DEFAULT_PLACEMENT  # where Δ goes in that request
    out: Path | None = None  # selective: the child bundle
    force: bool = False  # replace an existing child bundle
    adapters: tuple[str, ...] | None = None  # None: the recorded ones
    allow_hosts: tuple[HostPort, ...] = ()  # connections allowed before going live
    hold_tools: bool = False  # live suffix: identical tool calls get the recorded outcome
    secrets: tuple[str, ...] = ()  # in-process: the bare values given when recording
    command: tuple[str, ...] | None = None  # process: replaces the recorded argv
    cwd: Path | None = None  # process: where the program runs
    set_env: tuple[tuple[str, str], ...] = ()  # process: variables overridden
    report_json: Path | None = None  # process: where the replay report goes
    volatile_stdout: tuple[re.Pattern[str], ...] = ()  # process: lines left out of the check
    trust: bool = False  # process: run the bundle's command without asking
    endpoint: str | None = None  # process: where live calls go (OPENAI_BASE_URL)
    quiet: bool = False  # process: do not echo the program's output
    # when results are handed out (session/scheduling.py): the order timeout, SYM-R105
    scheduling: SchedulingOptions = DEFAULT_SCHEDULING

    PROCESS_ONLY = ("command", "cwd", "set_env", "report_json", "volatile_stdout", "trust",
                    "endpoint", "quiet")
    IN_PROCESS_ONLY = ("secrets",)  # process mode redacts the variables the bundle names

    @classmethod
    def build(cls, *, out: str | os.PathLike[str] | None = None,
              adapters: Iterable[str] | None = None, allow_hosts: Iterable[str] = (),
              secrets: Iterable[str] = (), command: Iterable[str] | None = None,
              cwd: str | os.PathLike[str] | None = None,
              set_env: Mapping[str, str] | None = None,
              report_json: str | os.PathLike[str] | None = None,
              volatile_stdout: Iterable[str] = (), overwrite: bool | None = None,
              order_timeout: float | str | None = None,
              infer_from_state: bool | None = None, **values: Any) -> ReplayOptions:
        """Options from loose input (lists, str paths, a dict of variables); a bad value is a
        UsageError. *overwrite* is the in-process API's name of *force*; *order_timeout*
        (seconds) and *infer_from_state* set `scheduling`'s fields."""
        _known(cls, values)
        if order_timeout is not None or infer_from_state is not None:
            if "scheduling" in values:
                raise TypeError("give order_timeout/infer_from_state or scheduling, not both")
            values["scheduling"] = SchedulingOptions.build(order_timeout, infer_from_state)
        if overwrite is not None:
            values["force"] = bool(overwrite) or bool(values.get("force"))
        try:
            hosts = tuple(HostPort.parse(h) for h in _strings(allow_hosts, "--allow-host"))
            volatile = compile_volatile(_strings(volatile_stdout, "--volatile-stdout"))
        except UsageError:
            raise
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        env = dict(set_env or {})
        return cls(
            out=None if out is None else Path(out),
            adapters=None if adapters is None else _strings(adapters, "adapter"),
            allow_hosts=hosts,
            secrets=_strings(secrets, "secret"),
            command=None if command is None else (_strings(command, "command") or None),
            cwd=None if cwd is None else Path(cwd),
            set_env=tuple(sorted((_names([k], "--set-env")[0], str(v)) for k, v in env.items())),
            report_json=None if report_json is None else Path(report_json),
            volatile_stdout=volatile,
            **values,
        )

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise UsageError(f"unknown guidance placement {self.placement!r}; choose one of "
                             f"{', '.join(PLACEMENTS)}")
        if self.guidance and not self.anchor:
            raise UsageError("guidance needs an anchor: the event whose request gets it")
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise UsageError(f"--endpoint {self.endpoint!r}: give an http:// or https:// URL")
        if not isinstance(self.scheduling, SchedulingOptions):
            raise TypeError(f"ReplayOptions.scheduling: expected SchedulingOptions, got "
                            f"{type(self.scheduling).__name__}")
        if self.cwd is not None and not self.cwd.is_dir():
            raise UsageError(f"--cwd {self.cwd}: not a directory")
        _check_tuples(self)

    @property
    def selective(self) -> bool:
        return self.anchor is not None


def in_process(options: RecordOptions | ReplayOptions) -> None:
    """Refuse options that only a program run in a child process can honour."""
    used = _set(options, options.PROCESS_ONLY)
    if used:
        raise UsageError(f"{', '.join(used)}: only for `symtrace record/replay -- CMD` "
                         "(symtrace.process.runner), not for an in-process session")


def in_child_process(options: RecordOptions | ReplayOptions) -> None:
    """Refuse options that only an in-process session can honour."""
    used = _set(options, options.IN_PROCESS_ONLY)
    if used:
        raise UsageError(f"{', '.join(used)}: only for the in-process symtrace.record/replay "
                         "(a program in a child process names secret variables instead)")


def _set(options: Any, names: Iterable[str]) -> list[str]:
    return [name for name in names if getattr(options, name) != _default(type(options), name)]


def _default(cls: type, name: str) -> Any:
    return next(f.default for f in fields(cls) if f.name == name)


def _known(cls: type, values: dict[str, Any]) -> None:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"{cls.__name__}: unknown option(s) {', '.join(unknown)}")


def _strings(values: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(values, str | bytes):
        raise UsageError(f"{what}: give a list of strings, not one string {values!r}")
    out = tuple(values)
    for value in out:
        if not isinstance(value, str) or not value:
            raise UsageError(f"{what} {value!r}: not a non-empty string")
    return out


def _names(values: Iterable[str], what: str) -> tuple[str, ...]:
    out = _strings(values, what)
    for value in out:
        if not _ENV_NAME.match(value):
            raise UsageError(f"{what} {value!r}: not an environment variable name")
    return out


def _check_tuples(options: Any) -> None:
    """Constructed directly rather than with build(): the sequences must already be tuples,
    or the frozen options would share a caller's mutable list."""
    for f in fields(options):
        if f.name in _JSON_FIELDS:
            continue
        value = getattr(options, f.name)
        if isinstance(value, list | dict | set):
            raise TypeError(f"{type(options).__name__}.{f.name}: give a tuple (or use "
                            f"{type(options).__name__}.build)")


def given(cls: type[Options], options: Options | None, keywords: dict[str, Any]) -> Options:
    """The options an entry point was called with: *options*, or built from its keyword
    arguments (the documented keyword API); both at once is a TypeError."""
    if options is None:
        return cls.build(**keywords)  # type: ignore[attr-defined, no-any-return]
    if keywords:
        raise TypeError(f"give {cls.__name__} or keyword arguments, not both "
                        f"({', '.join(sorted(keywords))})")
    if not isinstance(options, cls):
        raise TypeError(f"options: expected {cls.__name__}, got {type(options).__name__}")
    return options
