"""symtrace adapter for AG2 1.x (module `ag2`, PyPI `ag2>=1,<2`).

AG2 1.x sends to its providers through their SDKs (openai 3, anthropic 2, ...) over httpx2,
where the core captures the values of every LLM call (the httpx2 seam of the LLM boundary),
streaming included. This adapter adds what only the framework knows, through the hook table
below:

* attribution: which agent's turn made each LLM call, on which lane (_attribution.py);
* tool boundaries at `FunctionTool.__call__`, failures with the text AG2 showed the model,
  delegations to other agents left to those agents (_tools.py, _codec.py);
* the final result: the reply of the outermost turn;
* sub-task slots of a bounded `TaskConfig` taken in call order, not by a race (_slots.py);
* the Network `delegate` wait: whether the reply came in time, recorded (_delegate.py);
* Network ids (agents, channels, envelopes) seeded, so the Network tools that run on replay
  show the model the same ids (_ids.py).

Importing this package does not import AG2; the hooks resolve when the adapter installs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from symtrace.frameworks.contract import Hook, PatchingAdapter, seeded_uuid4
from symtrace_ag2v1 import _attribution, _delegate, _ids, _slots, _tools

AGENT = "ag2.agent:Agent"

HOOKS: tuple[Hook, ...] = (
    Hook(f"{AGENT}.__init__", _attribution.registered_at_creation,
         "numbers same-named agent objects in construction order (lanes name, name@2, ...)"),
    Hook(f"{AGENT}._drive_scope", _attribution.drive_scope,
         "every turn (ask, run, reply.ask, hub and sub-task turns): agent and lane of its "
         "LLM calls; the outermost turn's reply is the final result"),
    Hook(f"{AGENT}._spawn_subtask",
         functools.partial(_slots.spawn_subtask, call_of=_attribution.spawn_call),
         "a bounded TaskConfig's sub-task slots asked for in the order of the calls that "
         "spawn them (AG2 leaves it to a race; replay must not lose it the other way)"),
    Hook("ag2.agent:uuid4", seeded_uuid4,
         "sub-task agents' names (subtask-<uuid4 hex>) drawn from the s0-seeded random"),
    *(Hook(f"{module}:make_id", _ids.seeded_make_id,
           "Network agent/channel/request ids drawn from the s0-seeded random (tools show "
           "them to the model)")
      for module in ("ag2.network.ids", "ag2.network", "ag2.network.hub.core",
                     "ag2.network.transport.local", "ag2.network.client.hub_client")),
    Hook("ag2.network.ids:_MonotonicIds.__call__", _ids.seeded_monotonic_id,
         "Network envelope ids: a counting prefix (creation order kept) and a seeded suffix"),
    Hook("ag2.network.client.agent_client:AgentClient.wait_for_channel_event",
         _delegate.wait_for_channel_event,
         "the Network `delegate` wait: whether the reply came in time is recorded (a tool "
         "boundary); on replay it is that outcome, not the wall clock"),
    Hook("ag2.tools.executor:ToolExecutor.execute_tools", _tools.execute_tools,
         "the position of each tool call in the model's message (lane <agent>/tool#<i>)"),
    Hook("ag2.tools.executor:_execute_call", _tools.execute_call,
         "a symtrace error inside a tool call ends the turn instead of becoming a tool error"),
    Hook("ag2.tools.final.function_tool:FunctionTool.__call__", _tools.function_tool_call,
         "tool boundary: the function's outcome (result or failure with AG2's text) recorded "
         "and served; delegations to agents pass through"),
)


class AG2V1Adapter(PatchingAdapter):
    name = "ag2v1"
    module = "ag2"
    distribution = "ag2"
    requires = "ag2>=1,<2"
    extra = "ag2v1"

    @staticmethod
    def supported(version: str) -> bool:
        head = version.split(".", 1)[0]
        return head.isdigit() and int(head) == 1

    def hooks(self) -> Sequence[Hook]:
        return HOOKS


__all__ = ["HOOKS", "AG2V1Adapter"]
