"""An embedded LLM endpoint (scripted or stochastic): OpenAI chat completions and Responses,
and Anthropic messages.

The harness is tested against real HTTP with real SDKs; this package provides the server they
talk to. Importing it is cheap: stdlib and orjson only, never the openai SDK.
"""

from __future__ import annotations

from symtrace.stub.reply import Reply, ToolCall
from symtrace.stub.scripted import Script, ScriptedResponder, ScriptError, load_script
from symtrace.stub.server import StubLLM, check_loopback
from symtrace.stub.stochastic import TERMINATE, StochasticConfig, StochasticResponder

__all__ = [
    "TERMINATE",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptedResponder",
    "StochasticConfig",
    "StochasticResponder",
    "StubLLM",
    "ToolCall",
    "check_loopback",
    "load_script",
]
