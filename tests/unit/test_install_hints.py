"""Issue 38: an import error names what to install, and what it names exists.

Every adapter's `extra` is an extra of pyproject.toml (the adapter `ag2` is installed by
`symtrace[ag2-classic]`, `autogen_agentchat` by `symtrace[autogen]`: naming the adapter
would send a user to an extra pip does not know), and the message of a missing framework
says it; the otel and local-llm hints name their extras too.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from symtrace.errors import AdapterUnavailable
from symtrace.frameworks.registry import load, registered

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"]


@pytest.mark.parametrize("name", registered())
def test_every_adapter_names_an_extra_that_exists(name: str) -> None:
    adapter = load(name)
    assert adapter.extra in EXTRAS, (name, adapter.extra, sorted(EXTRAS))
    installs = " ".join(EXTRAS[adapter.extra])
    assert adapter.distribution in installs, (name, adapter.extra, installs)


@pytest.mark.parametrize("name", registered())
def test_a_missing_framework_is_named_with_its_extra(name: str, monkeypatch) -> None:
    adapter = load(name)
    monkeypatch.setattr(type(adapter), "is_available", classmethod(lambda cls: False))
    with pytest.raises(AdapterUnavailable) as caught:
        adapter.check_available()
    assert f"pip install 'symtrace[{adapter.extra}]'" in str(caught.value)


def test_the_otel_hint_names_modules_of_the_otel_extra() -> None:
    from symtrace.export.errors import OTEL_MODULES

    otel = " ".join(EXTRAS["otel"])
    for distribution in OTEL_MODULES.values():
        if distribution.startswith("opentelemetry-") and "common" not in distribution:
            assert distribution in otel, distribution


def test_the_local_llm_hint_names_its_extra() -> None:
    from symtrace.localllm.errors import INSTALL_HINT

    assert "local-llm" in EXTRAS
    assert "pip install 'symtrace[local-llm]'" in INSTALL_HINT
