"""Serve ``InvalidChatRequest`` as HTTP 400 instead of the stock server's HTTP 500.

llama-cpp-python's ``RouteErrorHandler`` maps exception texts to OpenAI error bodies through
a class-level regex table; adding one entry keeps the stock route code untouched.
"""

from __future__ import annotations

import re
from typing import Any

from symtrace.localllm.chat_request import INVALID_PREFIX


def invalid_request(_request: Any, match: re.Match[str]) -> tuple[int, dict[str, Any]]:
    return 400, {
        "message": match.group(0),
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request",
    }


def install_invalid_request_mapping() -> None:
    from llama_cpp.server.errors import RouteErrorHandler

    pattern = re.compile(re.escape(INVALID_PREFIX) + r".*", re.DOTALL)
    RouteErrorHandler.pattern_and_formatters[pattern] = invalid_request
