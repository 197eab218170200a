"""In the main environment (AG2 Classic installed, no AG2 1.x) the ag2v1 adapter is registered,
imports without its framework, and naming it fails loudly instead of recording without it."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace.errors import EXIT_ADAPTER, AdapterUnavailable
from symtrace.frameworks.registry import load, resolve


def test_named_without_ag2_1x_installed_it_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("autogen")  # the main environment: module `ag2` is not installed
    adapter = load("ag2v1")
    assert adapter.module == "ag2" and not adapter.is_available()
    with pytest.raises(AdapterUnavailable, match=r"symtrace\[ag2v1\]") as caught:
        resolve(["ag2v1"])
    assert caught.value.exit_code == EXIT_ADAPTER
    with pytest.raises(AdapterUnavailable), symtrace.record(tmp_path / "b", adapters=["ag2v1"]):
        pass
    assert not (tmp_path / "b").exists()
    assert "ag2v1" not in [armed.name for armed in resolve(None)]
