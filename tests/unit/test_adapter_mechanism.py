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
from symtrace.frameworks.registry import Armed, load, resolve

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
