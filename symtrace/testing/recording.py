"""Run one marked test's call phase under `symtrace.record` or a strict `symtrace.replay`.

The test function body is the program: fixtures are set up before the bundle opens, so a stub
server or client built in a fixture is not part of the recording, the calls it serves are.

Recording goes into a hidden staging directory next to the bundle and replaces the old bundle
only once the recording is complete, so an interrupted run (Ctrl-C, a skip, a symtrace error)
leaves the previous bundle, or nothing, at the path. A test that fails while recording keeps
its bundle (outcome "error"), like vcrpy keeps a cassette: a failing run is worth replaying.

Replay runs under the socket block (symtrace.testing.netblock) on top of the replayer's own
egress guard; every failure of the replay is turned into a short, readable pytest failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import orjson
import pytest

import symtrace
from symtrace.bundle.format import MANIFEST
from symtrace.errors import (
    BundleError,
    EgressBlocked,
    MissingCall,
    ReplayDivergence,
    SymtraceError,
)
from symtrace.frameworks import refusals as unsupported_frameworks
from symtrace.frameworks.refusals import UnsupportedFrameworkError
from symtrace.testing.modes import Action, RecordMode
from symtrace.testing.netblock import blocked_network


class SymtraceTestFailure(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """A test failed because of its bundle (divergence, missing bundle, blocked network)."""


def fail(message: str) -> NoReturn:
    """Fail the test with *message* alone: no traceback, and no chained framework errors (the
    failure is raised while pytest still handles the test's own exception)."""
    raise SymtraceTestFailure(message, pytrace=False) from None


@dataclass(frozen=True, slots=True)
class TestBundle:
    """What the plugin decided for one test (also what the `symtrace_bundle` fixture gives)."""

    __test__ = False  # not a test class, whatever pytest's python_classes says

    nodeid: str
    path: Path
    mode: RecordMode
    action: Action
    mode_source: str  # where the mode came from: option, ini, CI, default
    adapters: tuple[str, ...] | None
    secret_env: tuple[str, ...]  # names of environment variables whose values are redacted
    allow_hosts: tuple[str, ...]
    test_module: str | None  # digest of the test module's bytes

    def secret_values(self) -> list[str]:
        return [os.environ.get(name, "") for name in self.secret_env]

    def rerecord_hint(self) -> str:
        return f're-record it: pytest --symtrace-mode=rewrite "{self.nodeid}"'


@contextmanager
def bundled_call(spec: TestBundle, properties: list[tuple[str, object]]) -> Iterator[None]:
    """Wrap the test call; *properties* gets junit-xml-visible facts (bundle, action, report)."""
    properties.append(("symtrace_bundle", str(spec.path)))
    properties.append(("symtrace_action", spec.action.value))
    if spec.action is Action.MISSING:
        fail(missing_message(spec))
    run = _recording(spec) if spec.action is Action.RECORD else _replaying(spec, properties)
    try:
        with run:
            yield
    except SymtraceError as exc:  # bad bundle, unknown adapter, redaction: symtrace's words
        fail(error_message(spec, exc))


# -- record ------------------------------------------------------------------------------------
def _staging(path: Path) -> Path:
    return path.with_name(f".{path.name}.recording-{os.getpid()}")


def _keeps(exc: BaseException) -> bool:
    """Keep a recording when the test itself failed; drop it on skip/xfail/interrupt and on
    a symtrace error (e.g. an unsupported framework): such a recording cannot be trusted."""
    if isinstance(exc, SymtraceError):
        return False
    return isinstance(exc, Exception | pytest.fail.Exception)


@contextmanager
def _recording(spec: TestBundle) -> Iterator[None]:
    check_replaceable(spec.path)
    staging = _staging(spec.path)
    shutil.rmtree(staging, ignore_errors=True)
    body_error: BaseException | None = None
    refusals = len(unsupported_frameworks.refusals())
    try:
        with symtrace.record(
            staging,
            task=spec.nodeid,
            config={"pytest": {"nodeid": spec.nodeid, "test_module": spec.test_module}},
            secrets=spec.secret_values(),
            adapters=spec.adapters,
        ):
            try:
                yield
            except BaseException as exc:
                body_error = exc
                raise
    except BaseException as exc:
        if exc is body_error and _keeps(exc) and not _refused_since(refusals):
            _publish(staging, spec.path)
        else:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    swallowed = _refused_since(refusals)
    if swallowed:  # the test caught the refusal and passed: its bundle lacks LLM calls
        shutil.rmtree(staging, ignore_errors=True)
        fail(error_message(spec, UnsupportedFrameworkError(swallowed)))
    _publish(staging, spec.path)


def _refused_since(count: int) -> str | None:
    later = unsupported_frameworks.refusals()[count:]
    return later[0] if later else None


def check_replaceable(path: Path) -> None:
    """Refuse to replace a directory that is not a bundle (someone else's files)."""
    foreign = path.exists() and not (path / MANIFEST).is_file()
    if foreign and (not path.is_dir() or any(path.iterdir())):
        fail(f"symtrace: {path} exists and is not a symtrace bundle; refusing to record "
            "over it (move it away or pick another bundle= name)")


def _publish(staging: Path, path: Path) -> None:
    """Move a complete recording into place; the old bundle goes only after that worked."""
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    if path.exists():
        os.replace(path, old)
    os.replace(staging, path)
    shutil.rmtree(old, ignore_errors=True)


# -- replay ------------------------------------------------------------------------------------
@contextmanager
def _replaying(spec: TestBundle, properties: list[tuple[str, object]]) -> Iterator[None]:
    failure: str | None = None
    with blocked_network(spec.allow_hosts) as attempts:
        try:
            with symtrace.replay(spec.path, secrets=spec.secret_values(),
                                 adapters=spec.adapters, allow_hosts=spec.allow_hosts):
                yield
        except EgressBlocked as exc:  # the replay's own socket guard refused it first
            attempts.append(str(exc.report.actual["connect"]))
            failure = blocked_message(spec, attempts, None)
        except ReplayDivergence as exc:
            report = orjson.dumps(exc.report.to_json(), option=orjson.OPT_SORT_KEYS).decode()
            properties.append(("symtrace_divergence", report))
            failure = divergence_message(spec, exc, attempts)
        except Exception as exc:
            if not attempts:
                raise
            failure = blocked_message(spec, attempts, exc)
    if failure is None and attempts:
        failure = blocked_message(spec, attempts, None)
    if failure is not None:
        fail(failure)


# -- messages ----------------------------------------------------------------------------------
def _header(spec: TestBundle) -> str:
    return f"  bundle {spec.path} (mode {spec.mode.value} from {spec.mode_source})"


def divergence_message(
    spec: TestBundle, divergence: ReplayDivergence, attempts: Sequence[str]
) -> str:
    lines = [
        "symtrace: the test's run diverged from its recorded bundle "
        f"(mode {spec.mode.value} from {spec.mode_source})",
        divergence.report.render(),
    ]
    if attempts:
        lines.append(f"  blocked network connections: {', '.join(attempts)}")
    cause = divergence.__cause__
    if isinstance(divergence, MissingCall) and cause is not None:
        # the test stopped early with its own error; after R101/R102 the test's error is
        # only the framework's wrapping of the divergence, so it is not repeated
        lines.append(f"  the test itself raised {type(cause).__name__}: {_first_line(cause)}")
    lines.append(
        "  if the new behaviour is intended, " + spec.rerecord_hint()
    )
    return "\n".join(lines)


def blocked_message(spec: TestBundle, attempts: Sequence[str], exc: BaseException | None) -> str:
    lines = [
        f"symtrace: replay blocked {len(attempts)} network connection(s) the bundle does not "
        f"serve: {', '.join(dict.fromkeys(attempts))}",
        _header(spec),
        "  only calls through the HTTP seams (httpx, httpx2, aiohttp, requests/urllib3) and "
        "@symtrace.tool functions are recorded; "
        "make this call a tool, or allow the host: @pytest.mark.symtrace(allow_hosts=[...])",
    ]
    if exc is not None:
        lines.append(f"  the test then raised {type(exc).__name__}: {_first_line(exc)}")
    return "\n".join(lines)


def error_message(spec: TestBundle, exc: SymtraceError) -> str:
    lines = [f"symtrace: {spec.action.value} failed: {type(exc).__name__}: {exc}", _header(spec)]
    if isinstance(exc, BundleError):
        lines.append(
            "  a bad bundle is never re-recorded silently; fix or delete it, or "
            + spec.rerecord_hint()
        )
    return "\n".join(lines)


def missing_message(spec: TestBundle) -> str:
    return "\n".join(
        [
            f"symtrace: no bundle for this test at {spec.path}",
            f"  mode {spec.mode.value} (from {spec.mode_source}) replays only and never "
            "records, so this test cannot run",
            f'  record it where a model is reachable: pytest --symtrace-mode=once "{spec.nodeid}"'
            ", then commit the bundle",
        ]
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def load_module_digest(path: Path) -> Any:
    """The test-module digest the plugin stored in a bundle (None if absent). A corrupt
    bundle raises here: it is never mistaken for a missing one."""
    bundle = symtrace.load_bundle(path)
    user = bundle.config.get("user") or {}
    return (user.get("pytest") or {}).get("test_module") if isinstance(user, dict) else None
