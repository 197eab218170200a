"""A module `ag2` of a major version no adapter knows (ag2>=2) is refused instead of recorded
without its tool boundaries; AG2 Classic (<1) and AG2 1.x have adapters and are not refused.

The real package cannot be installed next to classic ag2, so a stand-in `ag2` module with
`ag2-2.0.0.dist-info` metadata is put on sys.path; the check looks at the distribution's
version and location only, never at the module's code (it refuses before the module runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import symtrace
from symtrace.errors import EXIT_ADAPTER, AdapterError
from symtrace.frameworks.refusals import UnsupportedFrameworkError, refusal

REPO = Path(__file__).resolve().parents[2]


def fake_site(root: Path, version: str = "2.0.0", with_module: bool = True) -> Path:
    site = root / "site"
    if with_module:
        (site / "ag2").mkdir(parents=True)
        (site / "ag2" / "__init__.py").write_text("EXECUTED = True\n")
    info = site / f"ag2-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: ag2\nVersion: {version}\n")
    return site


@pytest.fixture
def ag2_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = fake_site(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "ag2", raising=False)
    yield site
    # a fake ag2 a test imported must not outlive it: a later `import ag2` would find it in
    # sys.modules and never reach the refusal (tests/testing/test_plugin_core.py does that)
    sys.modules.pop("ag2", None)


def test_import_inside_a_recording_is_refused_before_the_module_runs(ag2_v1, tmp_path):
    with (pytest.raises(UnsupportedFrameworkError) as caught,
          symtrace.record(tmp_path / "b", adapters=[])):
        import ag2  # noqa: F401
    error = caught.value
    assert error.exit_code == EXIT_ADAPTER == 94
    assert isinstance(error, AdapterError) and not isinstance(error, ImportError)
    assert "ag2 2.0.0" in str(error) and "symtrace[ag2v1]" in str(error)
    assert "docs/adapters/ag2v1.md" in str(error)
    assert "ag2" not in sys.modules  # never executed
    assert not (tmp_path / "b").exists()  # a refused recording keeps nothing (as the CLI)


def test_import_inside_a_replay_is_refused(ag2_v1, tmp_path):
    with symtrace.record(tmp_path / "b", adapters=[]):
        pass
    with pytest.raises(UnsupportedFrameworkError), symtrace.replay(tmp_path / "b"):
        import ag2  # noqa: F401


def test_already_imported_refuses_the_session_and_writes_nothing(ag2_v1, tmp_path):
    import ag2  # outside a session: allowed

    assert ag2.EXECUTED
    with pytest.raises(UnsupportedFrameworkError), symtrace.record(tmp_path / "b"):
        pass
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("version", ["0.14.0", "1.0.0", "1.2.1"])
def test_versions_with_an_adapter_and_foreign_modules_named_ag2_are_not_refused(
        version, tmp_path, monkeypatch):
    classic = fake_site(tmp_path / "classic", version=version)
    monkeypatch.syspath_prepend(str(classic))
    assert refusal("ag2", classic / "ag2" / "__init__.py") is None
    # the distribution is >=2 but the module found is a user's own, elsewhere
    metadata_only = fake_site(tmp_path / "meta", with_module=False)
    monkeypatch.syspath_prepend(str(metadata_only))
    assert refusal("ag2", classic / "ag2" / "__init__.py") is None
    assert refusal("ag2", metadata_only / "ag2" / "__init__.py") is not None
    assert refusal("autogen") is None


@pytest.mark.slow
def test_cli_record_of_a_program_importing_ag2_fails_loudly(ag2_v1, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ag2_v1), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "symtrace", "record", "-o", str(tmp_path / "b"), "--",
         sys.executable, "-c", "import ag2"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert "UnsupportedFrameworkError: symtrace cannot record or replay programs using ag2 " \
           "2.0.0" in done.stderr
    assert done.returncode == EXIT_ADAPTER  # the refusal's own code, not the program's 1
    assert not (tmp_path / "b").exists()  # no bundle that misses the LLM calls


@pytest.mark.slow
def test_cli_record_refuses_even_when_the_program_swallowed_the_error(ag2_v1, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ag2_v1), str(REPO)])}
    program = "try:\n    import ag2\nexcept Exception:\n    pass\n"
    done = subprocess.run(
        [sys.executable, "-m", "symtrace", "record", "-o", str(tmp_path / "b"), "--",
         sys.executable, "-c", program],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert done.returncode == EXIT_ADAPTER, done.stderr
    assert not (tmp_path / "b").exists()


def test_the_refusal_is_re_armed_after_sys_meta_path_was_reset(ag2_v1, tmp_path, monkeypatch):
    with symtrace.record(tmp_path / "a", adapters=[]):
        pass
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path
                                           if type(f).__name__ != "_RefusingFinder"])
    with (pytest.raises(UnsupportedFrameworkError),
          symtrace.record(tmp_path / "b", adapters=[])):
        import ag2  # noqa: F401


def test_a_refusal_the_program_swallowed_is_still_known(ag2_v1, tmp_path, monkeypatch):
    from symtrace.frameworks import refusals as unsupported_frameworks

    monkeypatch.setattr(unsupported_frameworks, "_refused", [])
    assert unsupported_frameworks.refused() is None
    with pytest.raises(UnsupportedFrameworkError, match=r"ag2 2\.0\.0"), \
            symtrace.record(tmp_path / "b", adapters=[]):
        try:
            import ag2  # noqa: F401
        except AdapterError:
            pass  # a program that carries on without the framework
    assert "ag2 2.0.0" in (unsupported_frameworks.refused() or "")
    assert not (tmp_path / "b").exists()  # its bundle would lack the framework's calls
