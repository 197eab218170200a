"""Per-agent latency for the embedded stub, so a recording has a realistic completion order.

`scripts/<scenario>.latency.json` maps a system-prompt fragment to seconds; the stub answers
requests of that agent that much later. Used when recording (bundles/make_autogen_agentchat.py,
the adapter tests); replay never reaches the stub.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def add_latency(stub: Any, scenario: str) -> Any:
    """Slow *stub* down per the scenario's latency table (none: unchanged); returns it."""
    table_file = SCRIPTS / f"{scenario}.latency.json"
    if not table_file.exists():
        return stub
    table: dict[str, float] = json.loads(table_file.read_text())
    answer = stub.answer

    def delayed(body: dict[str, Any], call_index: int) -> Any:
        system = " ".join(
            str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
        )
        time.sleep(sum(seconds for fragment, seconds in table.items() if fragment in system))
        return answer(body, call_index)

    stub.answer = delayed
    return stub
