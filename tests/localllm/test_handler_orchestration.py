"""The chatml-tools handler's steps, driven with a scripted stand-in for ``llama.Llama``.

The real model is exercised in test_real_model.py; this pins down *what* the handler asks the
model for (prompts, grammars, penalties, stops) and how it assembles the answer, and runs
without llama_cpp installed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from symtrace.localllm.chat_format import make_handler
from symtrace.localllm.chat_request import InvalidChatRequest

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
USER = [{"role": "user", "content": "Weather in Lisbon?"}]


@dataclasses.dataclass
class Grammar:
    kind: str
    text: str


class GrammarModule:
    """Stands in for llama_cpp.llama_grammar: records which grammar was built."""

    JSON_GBNF = "json-gbnf"

    class LlamaGrammar:
        @staticmethod
        def from_string(text: str, verbose: bool = True) -> Grammar:
            return Grammar("gbnf", text)

        @staticmethod
        def from_json_schema(text: str, verbose: bool = True) -> Grammar:
            if "unsupported" in text:
                raise RuntimeError("bad schema")
            return Grammar("schema", text)


class ScriptedLlama:
    def __init__(self, *replies: tuple[str, str]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        text, finish = self.replies.pop(0)
        return {"model": "smollm2", "choices": [{"text": text, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100 + len(self.calls), "completion_tokens": 3}}


def handler() -> Any:
    return make_handler(default_max_tokens=64, grammar_module=GrammarModule)


def test_tool_call_path() -> None:
    llama = ScriptedLlama(("functions.get_weather", "stop"), ('{"city": "Lisbon"}', "stop"))
    result = handler()(llama=llama, messages=USER, tools=TOOLS, temperature=0.0,
                       repeat_penalty=1.1, seed=3)
    decide, args = llama.calls
    assert decide["grammar"] == Grammar(
        "gbnf", 'root ::= "message:" | "functions.get_weather:"\n')  # no tool_choice → auto
    assert decide["stop"] == [":"] and decide["repeat_penalty"] == 1.0
    assert args["prompt"] == decide["prompt"] + "functions.get_weather:\n"
    assert args["grammar"].kind == "schema" and '"city"' in args["grammar"].text
    assert args["repeat_penalty"] == 1.0  # 1.1 truncated numbers in arguments
    assert args["max_tokens"] == 64 and args["seed"] == 3 and args["temperature"] == 0.0
    message = result["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"] == {"name": "get_weather",
                                                    "arguments": '{"city": "Lisbon"}'}
    assert result["choices"][0]["finish_reason"] == "tool_calls"
    assert result["usage"] == {"prompt_tokens": 101, "completion_tokens": 6, "total_tokens": 107}


def test_message_path_generates_free_text() -> None:
    llama = ScriptedLlama(("message", "stop"), (" It is sunny. ", "stop"))
    result = handler()(llama=llama, messages=USER, tools=TOOLS, tool_choice="auto",
                       repeat_penalty=1.1, stop="END")
    _, text = llama.calls
    assert text["prompt"].endswith("<|im_start|>assistant\nmessage:\n")
    assert text.get("grammar") is None  # the stock format forced an empty message here
    assert text["repeat_penalty"] == 1.1
    assert text["stop"] == ["END", "<|im_end|>"]
    assert result["choices"][0]["message"] == {"role": "assistant", "content": "It is sunny."}
    assert result["choices"][0]["finish_reason"] == "stop"


def test_without_tools_one_plain_generation() -> None:
    llama = ScriptedLlama(("hello", "length"))
    result = handler()(llama=llama, messages=USER, max_tokens=5)
    (call,) = llama.calls
    assert call["prompt"] == (
        "<|im_start|>user\nWeather in Lisbon?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert call["max_tokens"] == 5
    assert result["choices"][0]["finish_reason"] == "length"


def test_json_object_response_format_uses_the_json_grammar() -> None:
    llama = ScriptedLlama(("{}", "stop"))
    handler()(llama=llama, messages=USER, response_format={"type": "json_object"})
    assert llama.calls[0]["grammar"] == Grammar("gbnf", "json-gbnf")


def test_cut_off_arguments_finish_with_length() -> None:
    llama = ScriptedLlama(("functions.get_weather", "stop"), ('{"city": "Lis', "length"))
    result = handler()(llama=llama, messages=USER, tools=TOOLS, tool_choice="required")
    assert result["choices"][0]["finish_reason"] == "length"


def test_same_request_same_ids() -> None:
    def run() -> dict[str, Any]:
        llama = ScriptedLlama(("functions.get_weather", "stop"), ('{"city": "A"}', "stop"))
        return handler()(llama=llama, messages=USER, tools=TOOLS, temperature=0.0)

    first, second = run(), run()
    assert first["id"] == second["id"]
    assert (first["choices"][0]["message"]["tool_calls"][0]["id"]
            == second["choices"][0]["message"]["tool_calls"][0]["id"])


def test_streaming_is_served_as_chunks() -> None:
    llama = ScriptedLlama(("functions.get_weather", "stop"), ('{"city": "A"}', "stop"))
    chunks = list(handler()(llama=llama, messages=USER, tools=TOOLS, stream=True))
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_invalid_request_raises_or_streams_an_error_event() -> None:
    bad = {"type": "function", "function": {"name": "nope"}}
    with pytest.raises(InvalidChatRequest, match="not among the tools"):
        handler()(llama=ScriptedLlama(), messages=USER, tools=TOOLS, tool_choice=bad)
    (event,) = list(handler()(llama=ScriptedLlama(), messages=USER, tools=TOOLS,
                              tool_choice=bad, stream=True))
    assert event["error"]["type"] == "invalid_request_error"


def test_unsupported_schema_and_logprobs_are_400s() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"format": "unsupported"}}}}}]
    llama = ScriptedLlama(("functions.f", "stop"))
    with pytest.raises(InvalidChatRequest, match="no grammar"):
        handler()(llama=llama, messages=USER, tools=tools)
    with pytest.raises(InvalidChatRequest, match="logprobs"):
        handler()(llama=ScriptedLlama(), messages=USER, logprobs=True)
