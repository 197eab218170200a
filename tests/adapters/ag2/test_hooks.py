"""The adapter's plumbing: hook table, symmetric install/uninstall, availability, imports."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from symtrace_ag2 import HOOKS, AG2Adapter

import symtrace
from symtrace.errors import AdapterAlreadyInstalled, AdapterUnavailable, HookTargetMissing
from symtrace.frameworks.contract import Hook, resolve_target
from symtrace.frameworks.registry import load, resolve

from ..._support import overriding_subclasses
from ._support import REPO

pytestmark = pytest.mark.framework("ag2")


def _current(target: str) -> object:
    return resolve_target(target)[2]


class TestHookTable:
    def test_the_entry_point_loads_this_adapter(self) -> None:
        adapter = load("ag2")
        assert isinstance(adapter, AG2Adapter)
        assert adapter.module == "autogen" and adapter.distribution == "ag2"

    def test_every_target_exists_in_the_installed_ag2(self) -> None:
        """A renamed private method fails here, not silently at record time."""
        for hook in HOOKS:
            resolve_target(hook.target)
            assert hook.purpose

    def test_no_ag2_subclass_overrides_a_hooked_method(self) -> None:
        """A subclass override would bypass the patch on the class that defines the method."""
        import autogen  # noqa: F401  (loads the classic agent classes)

        for hook in HOOKS:
            owner, attribute, _ = resolve_target(hook.target)
            if not isinstance(owner, type):
                continue
            for cls in overriding_subclasses(owner, attribute, "autogen."):
                # a constructor override still reaches the patched one through super()
                assert attribute == "__init__" and "super().__init__(" in inspect.getsource(
                    vars(cls)[attribute]), f"{cls.__qualname__} overrides {attribute}"

    def test_install_patches_every_target_and_uninstall_restores_the_originals(self) -> None:
        originals = {hook.target: _current(hook.target) for hook in HOOKS}
        adapter = AG2Adapter()
        adapter.install()
        try:
            for hook in HOOKS:
                assert _current(hook.target) is not originals[hook.target], hook.target
            with pytest.raises(AdapterAlreadyInstalled):
                adapter.install()
        finally:
            adapter.uninstall()
        for hook in HOOKS:
            assert _current(hook.target) is originals[hook.target], hook.target
        assert not adapter.installed

    def test_a_missing_target_patches_nothing(self) -> None:
        originals = {hook.target: _current(hook.target) for hook in HOOKS}

        class Broken(AG2Adapter):
            def hooks(self) -> tuple[Hook, ...]:
                return (*HOOKS, Hook("autogen.oai.client:OpenAIWrapper.gone", lambda f: f))

        with pytest.raises(HookTargetMissing):
            Broken().install()
        assert {hook.target: _current(hook.target) for hook in HOOKS} == originals

    def test_a_half_failed_install_restores_what_it_patched(self) -> None:
        originals = {hook.target: _current(hook.target) for hook in HOOKS}

        def explode(function: object) -> object:
            raise RuntimeError("wrapper factory failed")

        class HalfBroken(AG2Adapter):
            def hooks(self) -> tuple[Hook, ...]:
                middle = len(HOOKS) // 2
                return (*HOOKS[:middle], Hook(HOOKS[middle].target, explode), *HOOKS[middle:])

        adapter = HalfBroken()
        with pytest.raises(RuntimeError):
            adapter.install()
        assert not adapter.installed
        assert {hook.target: _current(hook.target) for hook in HOOKS} == originals

    def test_a_session_installs_and_removes_the_hooks(self, tmp_path: Path) -> None:
        create = _current(HOOKS[0].target)
        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            assert _current(HOOKS[0].target) is not create
        assert _current(HOOKS[0].target) is create


class TestAvailability:
    @pytest.mark.parametrize(("version", "ok"), [
        ("0.13.3", True), ("0.14.0", True), ("0.99.1", True),
        ("0.12.9", False), ("1.0.0", False), ("1.2.1", False),
    ])
    def test_supported_versions(self, version: str, ok: bool) -> None:
        assert AG2Adapter.supported(version) is ok

    def test_a_named_adapter_without_its_framework_is_a_clear_error(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setitem(sys.modules, "autogen", None)
        with pytest.raises(AdapterUnavailable, match="ag2"):
            resolve(["ag2"])
        with pytest.raises(AdapterUnavailable), symtrace.record(tmp_path / "b", adapters=["ag2"]):
            pass
        assert "ag2" not in [armed.name for armed in resolve(None)]

    def test_an_unsupported_installed_version_is_refused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        metadata = importlib.import_module("symtrace.frameworks.contract").metadata
        monkeypatch.setattr(metadata, "version", lambda name: "1.2.1")
        with pytest.raises(AdapterUnavailable, match=r"1\.2\.1"):
            AG2Adapter().check_available()


class TestImports:
    @pytest.mark.slow
    def test_importing_symtrace_and_the_adapter_does_not_import_ag2(self) -> None:
        code = (
            "import sys, symtrace, symtrace_ag2, symtrace.frameworks.registry as a\n"
            "armed = a.resolve(['ag2'])\n"
            "assert 'autogen' not in sys.modules, 'autogen imported'\n"
            "armed[0].install()\n"
            "assert not armed[0].adapter.installed\n"
            "import autogen\n"
            "assert armed[0].adapter.installed, 'not installed on import'\n"
            "armed[0].uninstall()\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
