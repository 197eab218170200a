"""The CrewAI hook table: symmetric install/uninstall, lazy arming, loud failures, the codec."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from symtrace_crewai import CrewAIAdapter
from symtrace_crewai._codec import CODEC, RecordedText

import symtrace
from symtrace.errors import (
    AdapterAlreadyInstalled,
    AdapterError,
    AdapterUnavailable,
    UnreplayableEvent,
)
from symtrace.frameworks.contract import resolve_target
from symtrace.frameworks.registry import load, resolve

from ..._support import subclasses_in
from ._support import ROOT

pytestmark = pytest.mark.framework("crewai")


def current_values(adapter: CrewAIAdapter) -> dict[str, object]:
    return {hook.target: resolve_target(hook.target)[2] for hook in adapter.hooks()}


class TestHookTable:
    def test_every_target_resolves_and_is_restored_after_uninstall(self):
        adapter = CrewAIAdapter()
        before = current_values(adapter)
        adapter.install()
        try:
            during = current_values(adapter)
            assert all(during[t] is not before[t] for t in before), "a hook did not patch"
            with pytest.raises(AdapterAlreadyInstalled):
                adapter.install()
        finally:
            adapter.uninstall()
        assert current_values(adapter) == before
        assert all(current_values(adapter)[t] is before[t] for t in before)

    def test_install_twice_in_a_row_is_symmetric(self):
        adapter = CrewAIAdapter()
        before = current_values(adapter)
        for _ in range(2):
            adapter.install()
            adapter.uninstall()
        assert all(current_values(adapter)[t] is before[t] for t in before)

    def test_every_concrete_tool_class_that_defines_run_is_hooked(self):
        """A subclass overriding run/arun/invoke would bypass a patch on its base."""
        for module in ("crewai.tools", "crewai.tools.agent_tools.agent_tools",
                       "crewai.tools.mcp_native_tool", "crewai.tools.mcp_tool_wrapper",
                       "crewai.tools.memory_tools", "crewai.tools.structured_tool"):
            importlib.import_module(module)
        from crewai.tools.base_tool import BaseTool

        targets = {hook.target for hook in CrewAIAdapter().hooks()}
        for cls in subclasses_in(BaseTool, "crewai.", with_owner=True):
            for method in ("run", "arun"):
                if method in vars(cls):
                    assert f"{cls.__module__}:{cls.__qualname__}.{method}" in targets

    def test_the_adapter_is_registered_and_versions_are_gated(self):
        assert isinstance(load("crewai"), CrewAIAdapter)
        assert CrewAIAdapter.supported("1.15.30")
        assert not CrewAIAdapter.supported("1.14.2")
        assert not CrewAIAdapter.supported("2.0.0")


class TestAvailability:
    @pytest.mark.slow
    def test_importing_symtrace_imports_no_framework(self):
        code = ("import sys, symtrace, symtrace_crewai; "
                "symtrace_crewai.CrewAIAdapter().hooks(); "
                "assert 'crewai' not in sys.modules, 'crewai imported'")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)

    def test_named_adapter_with_crewai_hidden_is_a_clear_error(self, monkeypatch, tmp_path):
        monkeypatch.setitem(sys.modules, "crewai", None)
        with pytest.raises(AdapterUnavailable, match="crewai"):
            resolve(["crewai"])
        with pytest.raises(AdapterUnavailable, match="crewai"), \
                symtrace.record(tmp_path / "b", adapters=["crewai"]):
            pass  # pragma: no cover - never entered
        assert not (tmp_path / "b" / "manifest.json").exists()

    def test_auto_resolution_skips_a_hidden_crewai(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "crewai", None)
        assert "crewai" not in [armed.name for armed in resolve(None)]

    @pytest.mark.slow
    def test_arming_waits_for_the_crewai_import(self, tmp_path):
        """Record started before `import crewai`: the hooks install when it is imported."""
        code = f"""
import sys, symtrace
with symtrace.record({str(tmp_path / 'b')!r}, adapters=["crewai"]):
    assert "crewai" not in sys.modules
    import crewai.tools.base_tool as bt
    assert hasattr(bt.BaseTool.run, "__wrapped__"), "not installed on import"
assert not hasattr(bt.BaseTool.run, "__wrapped__"), "not uninstalled"
"""
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


class TestUncapturedProviders:
    def test_a_provider_whose_sdk_bypasses_httpx_is_refused_inside_a_session(self, tmp_path):
        """Bedrock/Azure calls would neither be recorded nor served: fail before sending."""
        from crewai.llms.base_llm import BaseLLM

        class BedrockLike(BaseLLM):  # a provider reaching its API without httpx
            llm_type: str = "bedrock"

            def call(self, messages, *args, **kwargs):
                self._invoke_before_llm_call_hooks([{"role": "user", "content": messages}])
                return "sent elsewhere"

        llm = BedrockLike(model="anthropic.claude-3")
        with pytest.raises(AdapterError, match="bedrock"), \
                symtrace.record(tmp_path / "b", adapters=["crewai"]):
            llm.call("hi")
        assert llm.call("hi") == "sent elsewhere"  # outside a session: untouched


class TestCodec:
    @pytest.mark.parametrize("value", [
        "text", 3, True, None, 2.5, 21.0, float("inf"), (1, 2.0), [1, (2, 3)],
        {"a": 1.0, "b": [None]}, {1: "x", (2, 3): "y"}, {"$crewai": "not a tag"},
    ])
    def test_values_round_trip_exactly_as_crewai_renders_them(self, value):
        back = CODEC.decode(CODEC.encode(value))
        assert back == value and type(back) is type(value) and str(back) == str(value)

    def test_pydantic_results_are_rebuilt_as_their_class(self):
        from crewai.tools.tool_failure import ToolFailure, ToolFailureReason

        failure = ToolFailure(message="limit", reason=ToolFailureReason.USAGE_LIMIT)
        back = CODEC.decode(symtrace.model.canonical.to_json_value(CODEC.encode(failure)))
        assert isinstance(back, ToolFailure) and back == failure

    def test_other_objects_replay_as_their_text(self):
        class Opaque:
            def __str__(self) -> str:
                return "opaque value"

        back = CODEC.decode(CODEC.encode(Opaque()))
        assert isinstance(back, RecordedText) and back == "opaque value"
        assert back.type_name.endswith("Opaque")

    def test_an_unknown_tag_is_a_typed_error(self):
        with pytest.raises(UnreplayableEvent):
            CODEC.decode({"$crewai": "mystery"})
