"""The AgentChat hook table: every target, what it attributes or captures, and why there.

Imported only when the adapter installs (the framework is imported by then). Targets are
the concrete classes that define each method in autogen-agentchat / autogen-core /
autogen-ext 0.7.5; the adapter pins that version because several targets are private.
LLM *values* are not captured here: the core records them at the httpx transport, which
`OpenAIChatCompletionClient` (openai SDK → httpx) always reaches, streaming included.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import BaseChatMessage, StopMessage, ToolCallRequestEvent
from autogen_agentchat.tools._task_runner_tool import TaskRunnerTool

from symtrace.frameworks.contract import Hook, call_tool, final_result
from symtrace_autogen_agentchat import _attribution as attribution
from symtrace_autogen_agentchat import _tokens as tokens
from symtrace_autogen_agentchat import _tools as tools

Wrapper = Callable[..., Any]

AGENTS = "autogen_agentchat.agents."
TEAMS = "autogen_agentchat.teams._group_chat."
MAGENTIC = TEAMS + "_magentic_one._magentic_one_orchestrator:MagenticOneOrchestrator."


def hook_table() -> Sequence[Hook]:
    agent_turn = attribution.agent_turn(ToolCallRequestEvent)
    return (
        # -- who: agents' turns --------------------------------------------------------------
        Hook(AGENTS + "_assistant_agent:AssistantAgent.on_messages_stream", agent_turn,
             "an AssistantAgent's turn (run, run_stream, on_messages, team turn): its model "
             "calls on its own lane; learns the order of parallel tool calls"),
        Hook(AGENTS + "_society_of_mind_agent:SocietyOfMindAgent.on_messages_stream",
             agent_turn, "a SocietyOfMindAgent's turn (its summary call)"),
        Hook(AGENTS + "_code_executor_agent:CodeExecutorAgent.on_messages_stream", agent_turn,
             "a CodeExecutorAgent's turn (its optional model calls)"),
        Hook(AGENTS + "_base_chat_agent:BaseChatAgent.__init__", attribution.register,
             "every chat agent's creation: same-named instances get lanes name, name@2, ..."),
        Hook(AGENTS + "_base_chat_agent:BaseChatAgent.run", standalone_run,
             "a standalone agent run (any agent class): attribution, final result"),
        Hook(AGENTS + "_base_chat_agent:BaseChatAgent.run_stream", standalone_run_stream,
             "a standalone agent run_stream (any agent class): attribution, final result"),
        Hook(TEAMS + "_chat_agent_container:ChatAgentContainer.handle_request",
             attribution.participant_turn,
             "any participant's turn in a team, custom agent classes included; caused by "
             "the members whose messages it buffered since its last turn"),
        Hook(TEAMS + "_chat_agent_container:ChatAgentContainer.handle_agent_response",
             attribution.heard_from,
             "a participant buffering another member's message: that member's lane causes "
             "its next turn"),
        Hook(TEAMS + "_chat_agent_container:ChatAgentContainer.handle_team_response",
             attribution.heard_from,
             "a participant buffering a nested team's result: its lane causes the next turn"),
        Hook(TEAMS + "_chat_agent_container:ChatAgentContainer.handle_reset",
             attribution.buffer_reset, "a team reset empties the buffer and its causes"),
        # -- why: calls a team manager makes itself ------------------------------------------
        Hook(TEAMS + "_selector_group_chat:SelectorGroupChatManager.select_speaker",
             attribution.manager_call("speaker_selection"),
             "SelectorGroupChat picking the next speaker (model calls and selector_func)"),
        Hook(MAGENTIC + "handle_start", attribution.manager_call("planning"),
             "Magentic-One outer loop: task-ledger facts and plan"),
        Hook(MAGENTIC + "_orchestrate_step", attribution.manager_call("progress_ledger"),
             "Magentic-One inner loop: the progress ledger (with its JSON retries)"),
        Hook(MAGENTIC + "_update_task_ledger", attribution.manager_call("replanning"),
             "Magentic-One after a stall: updated facts and a new plan"),
        Hook(MAGENTIC + "_prepare_final_answer", attribution.manager_call("final_answer"),
             "Magentic-One's final answer"),
        # -- tool boundaries -----------------------------------------------------------------
        Hook("autogen_core.tools._base:BaseTool.run_json", tools.run_json(TaskRunnerTool),
             "tool boundary: every BaseTool (FunctionTool, handoffs, ...) via workbenches "
             "and direct calls; parallel calls on lanes <agent>/tool#<i>"),
        Hook("autogen_core.tools._base:BaseStreamTool.run_json_stream",
             tools.run_json_stream(TaskRunnerTool), "tool boundary for stream tools"),
        Hook(AGENTS + "_code_executor_agent:CodeExecutorAgent.execute_code_block",
             tools.execute_code_block, "code execution boundary (execute_code)"),
        Hook(AGENTS + "_user_proxy_agent:UserProxyAgent._get_input", tools.user_input,
             "human input boundary (user_input)"),
        # -- side channel: tiktoken ----------------------------------------------------------
        Hook("autogen_ext.models.openai._openai_client:BaseOpenAIChatCompletionClient."
             "count_tokens", count_tokens,
             "token counts (tiktoken) recorded as count_tokens; estimated when offline"),
        # -- the run's outcome ---------------------------------------------------------------
        Hook(TEAMS + "_base_group_chat:BaseGroupChat.run_stream", team_run_stream,
             "a team run (run and run_stream): final result"),
    )


# -- standalone runs and final results ---------------------------------------------------------
def final_text(result: TaskResult) -> str | None:
    """The text of a run's last chat message (not the stop signal), or None."""
    for message in reversed(result.messages):
        if isinstance(message, BaseChatMessage) and not isinstance(message, StopMessage):
            return message.to_text()
    return None


def _declare(item: Any) -> None:
    if isinstance(item, TaskResult):
        text = final_text(item)
        if text is not None:
            final_result(text)


def standalone_run(original: Wrapper) -> Wrapper:
    @functools.wraps(original)
    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with attribution.attributed(self):
            result = await original(self, *args, **kwargs)
        _declare(result)
        return result

    return run


def standalone_run_stream(original: Wrapper) -> Wrapper:
    @functools.wraps(original)
    def run_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        stream = attribution.attributed_stream(
            original(self, *args, **kwargs), self, ToolCallRequestEvent
        )
        return _declaring(stream)

    return run_stream


def team_run_stream(original: Wrapper) -> Wrapper:
    @functools.wraps(original)
    def run_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return _declaring(original(self, *args, **kwargs))

    return run_stream


async def _declaring(stream: Any) -> AsyncIterator[Any]:
    try:
        async for item in stream:
            _declare(item)
            yield item
    finally:
        await stream.aclose()


# -- token counting ----------------------------------------------------------------------------
def count_tokens(original: Wrapper) -> Wrapper:
    @functools.wraps(original)
    def wrapper(self: Any, messages: Sequence[Any], *, tools: Sequence[Any] = ()) -> int:
        model = self._create_args["model"]
        arguments = {"model": model, **tokens.request_digest(messages, tools)}
        count: int = call_tool(
            "count_tokens",
            arguments,
            lambda: tokens.count_live(original, self, messages, tools),
            meta={"side_channel": "tiktoken", "encoding": tokens.encoding_for_model(model)},
        )
        return count

    return wrapper
