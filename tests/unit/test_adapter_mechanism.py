"""Hook tables: symmetric install/uninstall, loud failures, lazy arming on import.

A tiny throwaway "framework" package is written to disk for these tests, so the real import
machinery (and the post-import hook) is exercised without any real framework.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence

import pytest

from symtrace.errors import (
    AdapterAlreadyInstalled,
    AdapterNotFound,
    AdapterUnavailable,
    HookTargetMissing,
)
from symtrace.frameworks.contract import Hook, PatchingAdapter
from symtrace.frameworks.registry import (
    Armed,
    Declaration,
    arm_declared,
    imported_unarmed_declared,
    load,
    resolve,
)

FAKE = "symtrace_fake_framework"


@pytest.fixture
def fake_framework(tmp_path, monkeypatch):
    package = tmp_path / FAKE
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent("""
        class Agent:
            def act(self, x):
                return f"acted {x}"

            @classmethod
            def build(cls):
                return cls()
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield FAKE
    sys.modules.pop(FAKE, None)


def tagging(original):
    def wrapper(*args, **kwargs):
        return "wrapped:" + str(original(*args, **kwargs))

    return wrapper


class FakeAdapter(PatchingAdapter):
    name = "fake"
    module = FAKE
    distribution = "pytest"  # any installed distribution: the fake has no metadata
    requires = "pytest"
    targets: Sequence[str] = (f"{FAKE}:Agent.act", f"{FAKE}:Agent.build")

    def hooks(self):
        return [Hook(t, tagging) for t in self.targets]


def test_install_patches_and_uninstall_restores(fake_framework):
    import symtrace_fake_framework as fw

    original_act, original_build = fw.Agent.__dict__["act"], fw.Agent.__dict__["build"]
    adapter = FakeAdapter()
    adapter.install()
    assert fw.Agent().act(1) == "wrapped:acted 1"
    assert isinstance(fw.Agent.__dict__["build"], classmethod)
    with pytest.raises(AdapterAlreadyInstalled):
        adapter.install()
    adapter.uninstall()
    assert fw.Agent.__dict__["act"] is original_act
    assert fw.Agent.__dict__["build"] is original_build


def test_missing_target_patches_nothing(fake_framework):
    import symtrace_fake_framework as fw

    original = fw.Agent.__dict__["act"]
    adapter = FakeAdapter()
    adapter.targets = (f"{FAKE}:Agent.act", f"{FAKE}:Agent.vanished")
    with pytest.raises(HookTargetMissing, match="vanished"):
        adapter.install()
    assert fw.Agent.__dict__["act"] is original
    assert not adapter.installed


def test_half_failed_install_is_rolled_back(fake_framework):
    import symtrace_fake_framework as fw

    original = fw.Agent.__dict__["act"]

    def explode(_original):
        raise RuntimeError("wrapper factory failed")

    class Broken(FakeAdapter):
        def hooks(self):
            return [Hook(f"{FAKE}:Agent.act", tagging), Hook(f"{FAKE}:Agent.build", explode)]

    with pytest.raises(RuntimeError):
        Broken().install()
    assert fw.Agent.__dict__["act"] is original


def test_arming_waits_for_the_framework_import(fake_framework):
    assert FAKE not in sys.modules
    armed = Armed(FakeAdapter())
    armed.install()
    assert FAKE not in sys.modules  # arming imported nothing
    import symtrace_fake_framework as fw

    assert fw.Agent().act(2) == "wrapped:acted 2"
    armed.uninstall()
    assert fw.Agent().act(2) == "acted 2"


def test_unknown_adapter_name():
    with pytest.raises(AdapterNotFound, match="nope"):
        load("nope")


def test_named_adapter_with_framework_missing(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "crewai" else real(name, *a)
    )
    with pytest.raises(AdapterUnavailable, match="crewai"):
        resolve(["crewai"])


def test_a_declared_adapter_is_imported_only_with_its_framework(fake_framework, tmp_path,
                                                                monkeypatch):
    """The instrumented child arms from the parent's declarations: the adapter's package is
    imported (and its hooks installed) only when the program imports the framework."""
    adapter_package = "symtrace_fake_adapter_pkg"
    (tmp_path / f"{adapter_package}.py").write_text(
        "from tests.unit.test_adapter_mechanism import FakeAdapter\n")
    declared = [Declaration("fake", f"{adapter_package}:FakeAdapter", FAKE),
                Declaration("other", "symtrace_never_imported:Adapter", "json")]
    try:
        (armed,) = arm_declared(["fake"], declared)
        assert armed.name == "fake" and armed.module == FAKE
        armed.install()
        assert adapter_package not in sys.modules and armed.adapter is None
        assert not armed.installed
        import symtrace_fake_framework as fw

        assert adapter_package in sys.modules and armed.installed
        assert fw.Agent().act(2) == "wrapped:acted 2"
        # "other"'s framework (json) is imported and its adapter was not armed: named
        assert imported_unarmed_declared([armed], declared) == [("other", "json")]
        armed.uninstall()
        assert fw.Agent().act(2) == "acted 2" and not armed.installed
    finally:
        sys.modules.pop(adapter_package, None)


def test_a_name_the_parent_did_not_declare_is_refused():
    with pytest.raises(AdapterNotFound, match="crewai"):
        arm_declared(["crewai"], [Declaration("ag2", "symtrace_ag2:AG2Adapter", "autogen")])


def test_a_declaration_that_fails_to_load_is_a_typed_error():
    from symtrace.errors import AdapterError

    with pytest.raises(AdapterError, match="failed to load"):
        Declaration("gone", "symtrace_no_such_package:Adapter", "x").load()


def test_declarations_read_statically_name_the_module_loading_would():
    """The parent declares every registered adapter without importing it (the class's literal
    `module`); the result is what importing the adapter says."""
    from symtrace.frameworks.registry import declarations

    declared = declarations()
    assert {d.name for d in declared} >= {"ag2", "crewai", "autogen_agentchat"}
    for declaration in declared:
        assert declaration.module == load(declaration.name).module


def test_a_declaration_that_cannot_be_read_statically_falls_back(tmp_path, monkeypatch):
    from symtrace.frameworks.registry import _static_module

    (tmp_path / "symtrace_dynamic_adapter.py").write_text(
        "MODULE = 'x'\nclass A:\n    module = MODULE\n"
        "class B:\n    module = 'fw'\n    @classmethod\n    def is_available(cls):\n"
        "        return True\n"
        "class C:\n    module = 'fw'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _static_module("symtrace_dynamic_adapter:A") is None  # not a literal
    assert _static_module("symtrace_dynamic_adapter:B") is None  # decides availability itself
    assert _static_module("symtrace_dynamic_adapter:C") == "fw"
    assert _static_module("symtrace_no_such_adapter:C") is None
    assert "symtrace_dynamic_adapter" not in sys.modules
