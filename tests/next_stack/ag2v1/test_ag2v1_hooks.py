"""The AG2 1.x adapter's plumbing: hook table, symmetric install/uninstall, versions, imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from symtrace_ag2v1 import HOOKS, AG2V1Adapter

import symtrace
from symtrace.errors import AdapterAlreadyInstalled, HookTargetMissing
from symtrace.frameworks.contract import Hook, resolve_target
from symtrace.frameworks.registry import load
from tests._support import overriding_subclasses
from tests.next_stack.ag2v1._support import REPO


def _current(target: str) -> object:
    return resolve_target(target)[2]


def test_the_entry_point_loads_this_adapter() -> None:
    adapter = load("ag2v1")
    assert isinstance(adapter, AG2V1Adapter)
    assert (adapter.module, adapter.distribution) == ("ag2", "ag2")


def test_every_target_exists_in_the_installed_ag2_and_says_what_it_does() -> None:
    for hook in HOOKS:
        resolve_target(hook.target)
        assert hook.purpose


def test_no_ag2_subclass_overrides_a_hooked_method() -> None:
    """A subclass override would bypass the patch (SubagentTool inherits __call__)."""
    import ag2.tools.subagents  # noqa: F401  (loads the FunctionTool subclasses)

    for hook in HOOKS:
        owner, attribute, _ = resolve_target(hook.target)
        if not isinstance(owner, type) or attribute == "__init__":
            continue
        overriding = [cls.__qualname__ for cls in overriding_subclasses(owner, attribute, "ag2.")]
        assert not overriding, f"{overriding} override {attribute}"


def test_install_patches_every_target_and_uninstall_restores_the_originals() -> None:
    originals = {hook.target: _current(hook.target) for hook in HOOKS}
    adapter = AG2V1Adapter()
    adapter.install()
    try:
        for hook in HOOKS:
            assert _current(hook.target) is not originals[hook.target], hook.target
        with pytest.raises(AdapterAlreadyInstalled):
            adapter.install()
    finally:
        adapter.uninstall()
    assert {hook.target: _current(hook.target) for hook in HOOKS} == originals
    assert not adapter.installed


def test_a_missing_target_patches_nothing() -> None:
    originals = {hook.target: _current(hook.target) for hook in HOOKS}

    class Broken(AG2V1Adapter):
        def hooks(self) -> tuple[Hook, ...]:
            return (*HOOKS, Hook("ag2.agent:Agent.gone", lambda f: f))

    with pytest.raises(HookTargetMissing):
        Broken().install()
    assert {hook.target: _current(hook.target) for hook in HOOKS} == originals


def test_a_session_installs_and_removes_the_hooks(tmp_path: Path) -> None:
    before = _current(HOOKS[0].target)
    with symtrace.record(tmp_path / "b", adapters=["ag2v1"]):
        assert _current(HOOKS[0].target) is not before
    assert _current(HOOKS[0].target) is before


@pytest.mark.parametrize(("version", "ok"), [
    ("1.0.0", True), ("1.2.1", True), ("1.99.0", True), ("0.14.0", False), ("2.0.0", False),
])
def test_supported_versions(version: str, ok: bool) -> None:
    assert AG2V1Adapter.supported(version) is ok


def test_importing_symtrace_and_the_adapter_does_not_import_ag2() -> None:
    code = (
        "import sys, symtrace, symtrace_ag2v1\n"
        "from symtrace.frameworks.registry import resolve\n"
        "armed = resolve(['ag2v1'])\n"
        "assert 'ag2' not in sys.modules, 'ag2 imported'\n"
        "armed[0].install()\n"
        "assert not armed[0].adapter.installed\n"
        "import ag2\n"
        "assert armed[0].adapter.installed, 'not installed on import'\n"
        "armed[0].uninstall()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=120)
