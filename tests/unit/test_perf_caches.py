"""The caches that keep recording cheap must never serve something stale.

Each cache is keyed by the identity of what it read (content, or the installation state),
so these tests change that input in place between two uses and check the second answer is
the fresh one, not the remembered one.
"""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from symtrace.errors import AdapterNotFound
from symtrace.frameworks import registry


# -- the adapter registry: scanned once per installation state ---------------------------------
def _dist(root, name: str, adapters: dict[str, str]) -> None:
    info = root / f"{name}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text(
        "[symtrace.adapters]\n" + "".join(f"{k} = {v}\n" for k, v in adapters.items())
    )


def test_registry_scans_once_per_installation_state(monkeypatch):
    calls = []
    real = metadata.entry_points

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(registry.metadata, "entry_points", counting)
    registry._registered_cache.clear()
    first = registry.registered()
    registry.resolve(None)
    registry.imported_unarmed([])
    assert registry.registered() == first
    assert len(calls) == 1  # one scan served the whole session set-up


def test_registry_sees_an_adapter_installed_while_the_process_runs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    before = registry.registered()
    assert "late_fake" not in before
    _dist(tmp_path, "symtrace_late_fake", {"late_fake": "symtrace_late_fake_mod:make"})
    assert registry.registered()["late_fake"].value == "symtrace_late_fake_mod:make"
    # a second distribution claiming the same name differently is still refused, not cached
    _dist(tmp_path, "symtrace_late_twin", {"late_fake": "elsewhere:make"})
    with pytest.raises(AdapterNotFound, match="two adapters"):
        registry.registered()


def test_registry_forgets_an_adapter_removed_from_the_path(tmp_path, monkeypatch):
    _dist(tmp_path, "symtrace_gone_fake", {"gone_fake": "symtrace_gone_fake_mod:make"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "gone_fake" in registry.registered()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    assert "gone_fake" not in registry.registered()
