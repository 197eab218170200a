"""The adapter as a piece of plumbing: discovery, availability, a symmetric hook table."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest
from symtrace_autogen_agentchat import AgentChatAdapter

from symtrace.errors import AdapterUnavailable, HookTargetMissing
from symtrace.frameworks.contract import Hook, resolve_target
from symtrace.frameworks.registry import load, resolve

from ._support import ROOT

pytestmark = pytest.mark.framework("autogen_agentchat")


def current(adapter):
    return {hook.target: resolve_target(hook.target)[2] for hook in adapter.hooks()}


def test_the_entry_point_resolves_to_the_adapter():
    adapter = load("autogen_agentchat")
    assert isinstance(adapter, AgentChatAdapter)
    assert adapter.module == "autogen_agentchat"
    assert adapter.is_available()


def test_install_patches_every_target_and_uninstall_restores_it():
    adapter = AgentChatAdapter()
    before = current(adapter)
    assert len(before) == len(adapter.hooks())
    adapter.install()
    try:
        during = current(adapter)
        assert all(during[target] is not before[target] for target in before)
    finally:
        adapter.uninstall()
    after = current(adapter)
    assert all(after[target] is before[target] for target in before)
    assert not adapter.installed


def test_a_missing_target_patches_nothing():
    class Broken(AgentChatAdapter):
        def hooks(self):
            return [*super().hooks(), Hook("autogen_agentchat.agents:NoSuchAgent.run",
                                           lambda f: f)]

    adapter = Broken()
    before = current(AgentChatAdapter())
    with pytest.raises(HookTargetMissing):
        adapter.install()
    assert not adapter.installed
    after = current(AgentChatAdapter())
    assert all(after[target] is before[target] for target in before)


def test_message_handlers_keep_their_routing_attributes():
    """Two hooks wrap `@event`/`@rpc` handlers: the runtime discovers them by attribute."""
    from autogen_agentchat.teams._group_chat._chat_agent_container import ChatAgentContainer

    original = ChatAgentContainer.__dict__["handle_request"]
    adapter = AgentChatAdapter()
    adapter.install()
    try:
        patched = ChatAgentContainer.__dict__["handle_request"]
        assert patched is not original
        assert patched.is_message_handler and patched.target_types == original.target_types
        assert patched in ChatAgentContainer._discover_handlers()
    finally:
        adapter.uninstall()


def test_a_named_adapter_with_its_framework_hidden_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "autogen_agentchat", None)
    with pytest.raises(AdapterUnavailable, match=r"autogen-agentchat==0\.7\.5"):
        resolve(["autogen_agentchat"])
    assert "autogen_agentchat" not in {a.name for a in resolve(None)}


@pytest.mark.parametrize(("distribution", "version"), [("autogen-ext", None),
                                                        ("autogen-core", "0.6.4")])
def test_a_missing_or_mismatched_companion_is_unavailable(monkeypatch, distribution, version):
    real = metadata.version

    def fake(name):
        if name == distribution:
            if version is None:
                raise metadata.PackageNotFoundError(name)
            return version
        return real(name)

    monkeypatch.setattr(metadata, "version", fake)
    with pytest.raises(AdapterUnavailable, match=distribution):
        AgentChatAdapter().check_available()


def test_importing_symtrace_and_the_adapter_imports_no_framework():
    code = (
        "import sys, symtrace, symtrace_autogen_agentchat\n"
        "from symtrace.frameworks.registry import resolve\n"
        "armed = resolve(None)\n"
        "assert 'autogen_agentchat' in [a.name for a in armed]\n"
        "loaded = [m for m in ('autogen_agentchat', 'autogen_core', 'autogen_ext', 'openai',"
        " 'tiktoken') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_adapter_installs_when_the_framework_is_imported():
    code = (
        "import symtrace\n"
        "from symtrace.frameworks.registry import resolve\n"
        "[armed] = resolve(['autogen_agentchat'])\n"
        "armed.install()\n"
        "assert not armed.adapter.installed\n"
        "from autogen_agentchat.agents import AssistantAgent\n"
        "assert armed.adapter.installed\n"
        "assert AssistantAgent.__dict__['on_messages_stream'].__wrapped__\n"
        "armed.uninstall()\n"
        "assert not hasattr(AssistantAgent.__dict__['on_messages_stream'], '__wrapped__')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
