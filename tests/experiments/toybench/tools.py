"""The toy benchmark's tools: symtrace tool boundaries over the JSON state file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import symtrace


def apply_add(path: Path, amount: int) -> dict[str, Any]:
    state = json.loads(Path(path).read_text())
    state["counter"] += int(amount)
    Path(path).write_text(json.dumps(state))
    return state


@symtrace.tool
def toy_read() -> dict[str, Any]:
    """The current state: counter and note."""
    return json.loads(Path(os.environ["TOYBENCH_STATE"]).read_text())


@symtrace.tool
def toy_add(amount: int) -> dict[str, Any]:
    """Add an amount to the counter; returns the new state."""
    return apply_add(Path(os.environ["TOYBENCH_STATE"]), amount)


TOOLS = {"toy_read": toy_read, "toy_add": toy_add}
SCHEMAS = [
    {"type": "function", "function": {"name": "toy_read", "description": "Read the state.",
                                      "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "toy_add", "description": "Add to the counter.",
        "parameters": {"type": "object", "properties": {"amount": {"type": "integer"}},
                       "required": ["amount"]}}},
]
