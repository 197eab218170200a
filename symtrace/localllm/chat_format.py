"""The ``chatml-tools`` chat-completion handler for llama-cpp-python's server.

Fixes the four tool-calling bugs of the stock ``chatml-function-calling`` format
(docs/local-llm.md): missing ``tool_choice`` means ``auto``; a one-step grammar picks
``message:`` or ``functions.<name>:`` and a message is then free text (the stock grammar
forced it empty); tool results and assistant tool calls are rendered (prompt.py); null
assistant content is accepted (types_patch.py, applied by serve.py). Arguments are generated
under the tool's JSON-schema grammar with ``repeat_penalty=1.0``: the default 1.1 penalises
digits already in the prompt and truncated numbers (900 → 90). One tool call per turn.

Only ``make_handler``'s closure touches llama_cpp (through the ``llama`` object it is handed
and a lazy ``llama_grammar`` import); everything it decides is in the pure modules.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from symtrace.localllm.chat_request import (
    InvalidChatRequest,
    ToolChoice,
    normalise_tool_choice,
    normalise_tools,
)
from symtrace.localllm.grammar import DECISION_STOP, decision_grammar, parse_decision
from symtrace.localllm.prompt import IM_END, MESSAGE_PREFIX, function_prefix, render_prompt
from symtrace.localllm.responses import (
    chat_completion,
    request_digest,
    stream_chunks,
    usage,
)

FORMAT_NAME = "chatml-tools"
# A 135M model rambles until the context is full (8192 tokens, ~1 min) when nothing stops it.
DEFAULT_MAX_TOKENS = 512
DECISION_MAX_TOKENS = 32
# Sampling fields passed through to llama.create_completion (and hashed into the ids).
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "typical_p", "presence_penalty",
                   "frequency_penalty", "repeat_penalty", "tfs_z", "mirostat_mode",
                   "mirostat_tau", "mirostat_eta", "seed", "logit_bias")


def stop_list(stop: str | list[str] | None) -> list[str]:
    extra = [stop] if isinstance(stop, str) else list(stop or [])
    return [*extra, IM_END]


def check_unsupported(logprobs: Any, top_logprobs: Any) -> None:
    if logprobs or top_logprobs:
        raise InvalidChatRequest("logprobs are not supported by the chatml-tools format")


def stream_error(exc: InvalidChatRequest) -> dict[str, Any]:
    return {"error": {"message": str(exc), "type": "invalid_request_error", "param": None,
                      "code": "invalid_request"}}


def arguments_finish_reason(arguments: str, generation_finish: str | None) -> str:
    """``tool_calls`` when *arguments* is complete JSON, else ``length`` (cut off)."""
    try:
        json.loads(arguments)
    except ValueError:
        return "length"
    return "tool_calls" if generation_finish != "length" else "length"


def make_handler(
    default_max_tokens: int = DEFAULT_MAX_TOKENS, grammar_module: Any = None
) -> Callable[..., Any]:
    """A ``LlamaChatCompletionHandler`` (keyword-only call, see llama_chat_format).

    *grammar_module* stands in for ``llama_cpp.llama_grammar`` (imported on first call when
    None): the orchestration is tested without the native library.
    """

    def handler(*, stream: bool = False, **kwargs: Any) -> Any:
        try:
            completion = answer(**kwargs)
        except InvalidChatRequest as exc:
            if not stream:
                raise  # the server maps it to HTTP 400 (errors_http.py)
            # Headers (200) are already sent on a stream: OpenAI SDKs raise on an error event.
            return iter([stream_error(exc)])
        return iter(stream_chunks(completion)) if stream else completion

    def answer(
        *,
        llama: Any,
        messages: list[Mapping[str, Any]],
        functions: list[Mapping[str, Any]] | None = None,
        function_call: Any = None,
        tools: list[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        stop: str | list[str] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        model: str | None = None,
        logits_processor: Any = None,
        grammar: Any = None,
        logprobs: bool | None = None,
        top_logprobs: int | None = None,
        **sampling_kwargs: Any,
    ) -> dict[str, Any]:
        llama_grammar = grammar_module
        if llama_grammar is None:
            from llama_cpp import llama_grammar

        check_unsupported(logprobs, top_logprobs)
        tool_list = normalise_tools(tools, functions)
        choice = normalise_tool_choice(tool_choice, tool_list, function_call)
        prompt = render_prompt(messages, tool_list, choice)
        sampling = {k: sampling_kwargs[k] for k in SAMPLING_FIELDS if k in sampling_kwargs}
        request = request_digest(
            messages, tool_list, [choice.mode, choice.name], {**sampling, "stop": stop}
        )
        limit = max_tokens or default_max_tokens
        generated: list[Mapping[str, Any]] = []

        def generate(text: str, **overrides: Any) -> tuple[str, str | None]:
            params = {"max_tokens": limit, "stop": stop_list(stop),
                      "logits_processor": logits_processor, **sampling, **overrides}
            completion = llama.create_completion(prompt=text, model=model, stream=False, **params)
            generated.append(completion)
            first = completion["choices"][0]
            return first["text"], first.get("finish_reason")

        def done(content: str | None, calls: list[tuple[str, str]], finish: str) -> Any:
            first, last = generated[0], generated[-1]
            return chat_completion(
                request=request,
                model=last["model"],
                created=int(time.time()),
                content=content,
                tool_calls=calls,
                finish_reason=finish,
                token_usage=usage(
                    first["usage"]["prompt_tokens"],
                    sum(c["usage"]["completion_tokens"] for c in generated),
                ),
            )

        if not choice.tools_offered:
            text_grammar = _response_format_grammar(llama_grammar, response_format) or grammar
            text, finish = generate(prompt, grammar=text_grammar)
            return done(text, [], finish or "stop")

        names = [tool["function"]["name"] for tool in tool_list]
        decision, _ = generate(
            prompt,
            grammar=llama_grammar.LlamaGrammar.from_string(
                decision_grammar(names, choice), verbose=False
            ),
            stop=[DECISION_STOP],
            max_tokens=DECISION_MAX_TOKENS,
            repeat_penalty=1.0,
        )
        name = parse_decision(decision, names, choice)
        if name is None:
            text, finish = generate(f"{prompt}{MESSAGE_PREFIX}\n")
            return done(text.strip(), [], finish or "stop")
        tool = next(t for t in tool_list if t["function"]["name"] == name)
        arguments, finish = generate(
            f"{prompt}{function_prefix(name)}\n",
            grammar=_schema_grammar(llama_grammar, tool["function"].get("parameters")),
            repeat_penalty=1.0,
        )
        arguments = arguments.strip()
        return done(None, [(name, arguments)], arguments_finish_reason(arguments, finish))

    return handler


def _schema_grammar(llama_grammar: Any, parameters: Mapping[str, Any] | None) -> Any:
    schema = dict(parameters or {"type": "object", "properties": {}})
    try:
        return llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except Exception as exc:  # llama_cpp raises bare errors for unsupported schema features
        raise InvalidChatRequest(
            f"the tool parameters schema has no grammar in llama.cpp ({exc})"
        ) from exc


def _response_format_grammar(llama_grammar: Any, response_format: Mapping[str, Any] | None) -> Any:
    if not response_format or response_format.get("type") == "text":
        return None
    if response_format.get("type") == "json_object":
        schema = response_format.get("schema")
        if schema:
            return llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        if isinstance(schema, Mapping):
            return llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    raise InvalidChatRequest(f"response_format {response_format!r} is not supported")


def register(name: str = FORMAT_NAME, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
    """Register the handler under *name* in llama_cpp's chat-handler registry."""
    from llama_cpp.llama_chat_format import LlamaChatCompletionHandlerRegistry

    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        name, make_handler(default_max_tokens), overwrite=True
    )


__all__ = ["FORMAT_NAME", "ToolChoice", "make_handler", "register"]
