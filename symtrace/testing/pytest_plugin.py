"""The symtrace pytest plugin: a real OpenAI-compatible endpoint on loopback as fixtures, and
``@pytest.mark.symtrace`` (a bundle per test, recorded once, replayed strictly).

Registered through the ``pytest11`` entry point, so this module is imported by every pytest
run in an environment where symtrace is installed: it must stay cheap and must not import the
openai SDK, the stub server or the record/replay machinery until a test needs them.

    def test_agent(stub_llm):
        client = openai.OpenAI(base_url=stub_llm.url, api_key="x")

    def test_scripted(stub_llm_factory):
        stub = stub_llm_factory(script={"rules": [], "default": {"content": "hi"}})

It also provides ``@pytest.mark.symtrace``: the marked test's call is recorded into a bundle
once and replayed strictly afterwards (modes and options: docs/pytest.md).

    @pytest.mark.symtrace
    def test_chat(stub_llm):
        run_my_agents(base_url=stub_llm.url)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from symtrace.stub import StubLLM
    from symtrace.testing.modes import RecordMode
    from symtrace.testing.recording import TestBundle

MARKER_KEYS = frozenset({"bundle", "adapters", "secret_env", "allow_hosts"})
_SPEC = pytest.StashKey["TestBundle"]()
_MODE = pytest.StashKey[tuple["RecordMode", str]]()
_SEEN = pytest.StashKey[dict[Path, str]]()
_DONE = pytest.StashKey[dict[str, list[str]]]()


# -- options and markers -------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("symtrace", "symtrace record/replay of @pytest.mark.symtrace tests")
    group.addoption(
        "--symtrace-mode",
        metavar="MODE",
        help="none: replay only, a missing bundle fails; once: record missing bundles, replay "
        "the rest; new: also re-record tests whose module changed; rewrite: re-record all "
        "(default: none if $CI is set, else once)",
    )
    group.addoption(
        "--symtrace-dir",
        metavar="DIR",
        help="bundle root (relative to the rootdir; default: bundles/ next to each module)",
    )
    parser.addini("symtrace_mode", "default for --symtrace-mode", default=None)
    parser.addini("symtrace_dir", "default for --symtrace-dir", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "symtrace(bundle=None, adapters=None, secret_env=(), allow_hosts=()): record the test's "
        "LLM/tool boundary calls into a bundle once, replay them strictly afterwards",
    )
    from symtrace.testing.modes import default_mode, in_ci, parse_mode

    option, ini = config.getoption("symtrace_mode"), config.getini("symtrace_mode")
    try:
        if option:
            config.stash[_MODE] = (parse_mode(option, source="--symtrace-mode"), "--symtrace-mode")
        elif ini:
            config.stash[_MODE] = (parse_mode(ini, source="ini symtrace_mode"), "ini symtrace_mode")
        else:
            config.stash[_MODE] = (default_mode(os.environ), "$CI" if in_ci(os.environ)
                                   else "default")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_SEEN] = {}
    config.stash[_DONE] = {"record": [], "replay": []}


def pytest_report_header(config: pytest.Config) -> str | None:
    if _MODE not in config.stash:
        return None
    mode, source = config.stash[_MODE]
    return f"symtrace: mode {mode.value} (from {source})"


def _bundle_base(config: pytest.Config) -> Path | None:
    value = config.getoption("symtrace_dir") or config.getini("symtrace_dir")
    if not value:
        return None
    base = Path(value)
    return base if base.is_absolute() else config.rootpath / base


def _marker_spec(item: pytest.Item) -> TestBundle | None:
    marker = item.get_closest_marker("symtrace")
    if marker is None:
        return None
    from symtrace.testing.locations import bundle_path, module_digest
    from symtrace.testing.modes import decide
    from symtrace.testing.recording import TestBundle, load_module_digest

    if marker.args or set(marker.kwargs) - MARKER_KEYS:
        extra = [repr(a) for a in marker.args] + sorted(set(marker.kwargs) - MARKER_KEYS)
        raise ValueError(
            f"@pytest.mark.symtrace takes keywords {', '.join(sorted(MARKER_KEYS))}; "
            f"got {', '.join(extra)}"
        )
    if not isinstance(item, pytest.Function):
        raise ValueError("@pytest.mark.symtrace applies to test functions only")
    adapters = marker.kwargs.get("adapters")
    cls = item.cls.__name__ if item.cls is not None else None
    path = bundle_path(
        item.path,
        item.config.rootpath,
        _bundle_base(item.config),
        class_name=cls,
        test_name=item.name,
        explicit=marker.kwargs.get("bundle"),
    )
    mode, source = item.config.stash[_MODE]
    digest = module_digest(item.path)
    exists = (path / "manifest.json").is_file()
    changed = False
    if exists and mode.value == "new":
        recorded = load_module_digest(path)
        changed = recorded is not None and digest is not None and recorded != digest
    return TestBundle(
        nodeid=item.nodeid,
        path=path,
        mode=mode,
        action=decide(mode, exists=exists, changed=changed),
        mode_source=source,
        adapters=None if adapters is None else _names(adapters, "adapters"),
        secret_env=_names(marker.kwargs.get("secret_env", ()), "secret_env"),
        allow_hosts=_names(marker.kwargs.get("allow_hosts", ()), "allow_hosts"),
        test_module=digest,
    )


def _names(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise ValueError(f"@pytest.mark.symtrace({key}=...) must be a list of strings, "
                         f"got {value!r}")
    if not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"@pytest.mark.symtrace({key}=...) must hold non-empty strings, "
                         f"got {value!r}")
    return tuple(sorted(value))


# -- running a marked test -------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Decide record/replay before fixtures run (bad marker arguments are setup errors)."""
    from symtrace.errors import SymtraceError
    from symtrace.testing.recording import fail

    try:
        spec = _marker_spec(item)
    except (ValueError, SymtraceError) as exc:
        fail(f"symtrace: {type(exc).__name__}: {exc}")
    if spec is None:
        return
    seen = item.config.stash[_SEEN]
    owner = seen.setdefault(spec.path, item.nodeid)
    if owner != item.nodeid:
        fail(
            f"symtrace: {item.nodeid} and {owner} both use the bundle {spec.path}; "
            "give one of them its own bundle= name"
        )
    item.stash[_SPEC] = spec


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    spec = item.stash.get(_SPEC, None)
    if spec is None:
        return (yield)
    from symtrace.testing.recording import bundled_call

    if spec.action.value in ("record", "replay"):
        item.config.stash[_DONE][spec.action.value].append(str(spec.path))
    with bundled_call(spec, item.user_properties):
        return (yield)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    done = config.stash.get(_DONE, None)
    if not done or not (done["record"] or done["replay"]):
        return
    mode, source = config.stash[_MODE]
    terminalreporter.write_line(
        f"symtrace: recorded {len(done['record'])} bundle(s), replayed "
        f"{len(done['replay'])} (mode {mode.value} from {source})"
    )
    for path in done["record"]:
        terminalreporter.write_line(f"symtrace: recorded {path}")


@pytest.fixture
def symtrace_bundle(request: pytest.FixtureRequest) -> TestBundle:
    """The marked test's bundle decision: `.path`, `.mode`, `.action` ("record"/"replay")."""
    spec = request.node.stash.get(_SPEC, None)
    if spec is None:
        pytest.fail("symtrace_bundle needs a test marked @pytest.mark.symtrace", pytrace=False)
    return spec


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A started stochastic, unseeded stub server, stopped after the test."""
    from symtrace.stub import StubLLM

    with StubLLM(mode="stochastic") as stub:
        yield stub


@pytest.fixture
def stub_llm_factory() -> Iterator[Callable[..., StubLLM]]:
    """``factory(mode=None, script=None, seed=None, **kwargs)`` → a started StubLLM.

    Every server it started is stopped at teardown.
    """
    from symtrace.stub import StubLLM

    started: list[StubLLM] = []

    def factory(
        mode: str | None = None, script: Any = None, seed: int | None = None, **kwargs: Any
    ) -> StubLLM:
        stub = StubLLM(mode=mode, script=script, seed=seed, **kwargs)  # type: ignore[arg-type]
        stub.start()
        started.append(stub)
        return stub

    try:
        yield factory
    finally:
        for stub in reversed(started):
            stub.stop()
