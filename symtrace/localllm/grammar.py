"""GBNF for the one-step decision of a ``chatml-tools`` turn (pure: no llama_cpp needed).

The model first produces exactly one of ``message:`` / ``functions.<name>:`` under this
grammar; the text after it is generated without a grammar (a message) or under the tool's
JSON-schema grammar (arguments). The stock format instead constrained the *message* to
``functions | "<|im_end|>"``, which forced every text reply to be empty.
"""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.localllm.chat_request import ToolChoice
from symtrace.localllm.prompt import MESSAGE_PREFIX, function_prefix

# Every alternative ends with ":" and no tool name contains one (chat_request.TOOL_NAME),
# so generation may stop at the first ":".
DECISION_STOP = ":"


def gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def decision_alternatives(tool_names: Sequence[str], choice: ToolChoice) -> list[str]:
    """The prefixes the model may start its reply with, in a fixed order."""
    if choice.mode == "function":
        return [function_prefix(choice.name or "")]
    alternatives = [function_prefix(name) for name in tool_names]
    if choice.mode == "auto":
        alternatives.insert(0, MESSAGE_PREFIX)
    return alternatives


def decision_grammar(tool_names: Sequence[str], choice: ToolChoice) -> str:
    """``root ::= "message:" | "functions.a:" | ...`` for *choice*."""
    alternatives = decision_alternatives(tool_names, choice)
    if not alternatives:
        raise ValueError("no decision to make: tools are not offered")
    return "root ::= " + " | ".join(gbnf_literal(a) for a in alternatives) + "\n"


def parse_decision(text: str, tool_names: Sequence[str], choice: ToolChoice) -> str | None:
    """The tool name chosen by the generated decision *text*, or None for a message."""
    head = text.strip()
    if not head.endswith(DECISION_STOP):
        head += DECISION_STOP
    for alternative in decision_alternatives(tool_names, choice):
        if head == alternative:
            return None if alternative == MESSAGE_PREFIX else alternative[len("functions.") : -1]
    raise ValueError(f"decision {text!r} is none of {decision_alternatives(tool_names, choice)}")
