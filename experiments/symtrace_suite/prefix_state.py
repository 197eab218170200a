"""The service state at an anchor: what a node-level replay must start its live suffix from.

A selective replay serves every boundary before the anchor from the bundle, so the tool
bodies of that prefix do not run and their writes never reach freshly reset services. Before
resuming live at an anchor, reset the services and re-apply the prefix's state-changing tool
calls (same tools, same arguments, same order); the deterministic services then hold exactly
the state the recorded run had at the anchor. Reads need no re-application.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from symtrace.bundle import Bundle, load_bundle
from symtrace_suite.mas import tools
from symtrace_suite.services import remote_reset

MUTATING_TOOLS = {
    fn.__name__: fn
    for fn in (tools.shop_cancel_order, tools.shop_update_order_status, tools.shop_refund_order)
}


def prefix_mutations(bundle: Bundle, anchor: str) -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) of every state-changing suite tool call before *anchor*, in order O."""
    limit = bundle.event(anchor).position  # UnknownEvent (exit 92) for a bad id
    out = []
    for event in bundle.events:
        if event.position >= limit:
            break
        request = event.request if isinstance(event.request, dict) else {}
        if event.type == "tool_call" and request.get("tool") in MUTATING_TOOLS:
            args = request.get("arguments")
            out.append((request["tool"], dict(args) if isinstance(args, dict) else {}))
    return out


def restore_prefix_state(
    bundle: Bundle | str | os.PathLike[str], anchor: str, urls: Mapping[str, str]
) -> list[tuple[str, dict[str, Any]]]:
    """Reset the services at *urls*, then re-apply the writes made before *anchor*.

    Returns the re-applied calls. Use it right before `symtrace.replay(bundle, anchor=…)` /
    `symtrace repair` of a run of a mutating task.
    """
    loaded = bundle if isinstance(bundle, Bundle) else load_bundle(Path(bundle))
    calls = prefix_mutations(loaded, anchor)
    remote_reset(urls)
    with tools.using_urls(urls):
        for name, args in calls:
            MUTATING_TOOLS[name](**args)
    return calls
