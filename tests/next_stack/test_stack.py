"""The second environment is the stack it claims to be: every installed distribution at the
version constraints-next.txt pins, and the SDKs sending over httpx2 (the reason it exists)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints-next.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[name.lower().replace("_", "-")] = version
    return out


def test_every_pinned_distribution_is_installed_at_its_pin() -> None:
    wanted = pins()
    assert {"ag2", "openai", "httpx2", "anthropic", "autogen-agentchat"} <= set(wanted)
    wrong = {name: (version, _installed(name)) for name, version in wanted.items()
             if _installed(name) != version}
    assert not wrong, f"pinned vs installed: {wrong}"


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("module", ["openai._base_client", "anthropic._base_client"])
def test_the_provider_sdks_send_over_httpx2(module: str) -> None:
    import importlib

    import httpx
    import httpx2

    sdk = vars(importlib.import_module(module))
    assert sdk["httpx2"] is httpx2
    assert httpx2.AsyncClient is not httpx.AsyncClient  # its own classes, not an alias


def test_classic_ag2_is_not_on_this_stack() -> None:
    """AG2 1.x ships no `autogen` module: the classic adapter has nothing to arm here."""
    import importlib.util

    assert importlib.util.find_spec("ag2") is not None
    assert importlib.util.find_spec("autogen") is None
