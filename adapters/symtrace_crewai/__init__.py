"""symtrace adapter for CrewAI (`crewai==1.15.*`).

The values of every LLM call are captured by the core at the httpx transport (CrewAI's native
providers use the openai SDK). This adapter says who made each call and why, turns tool
bodies into replayable boundaries, pins the date `inject_date` puts into prompts, and declares
a crew's output as the run's final result. Importing it does not import CrewAI: targets are
resolved when the adapter is installed, after `import crewai`.
"""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.errors import UnsupportedConstruct
from symtrace.frameworks.contract import Hook, PatchingAdapter, consumption_point
from symtrace_crewai import _hooks as h
from symtrace_crewai import _pinning

CREW = "crewai.crew:Crew"
AGENT = "crewai.agent.core:Agent"
TASK = "crewai.task:Task"
BASE_TOOL = "crewai.tools.base_tool:BaseTool"
TOOL = "crewai.tools.base_tool:Tool"
STRUCTURED_TOOL = "crewai.tools.structured_tool:CrewStructuredTool"
FLOW = "crewai.flow.runtime:Flow"
USER_DATA = ("crewai_core.user_data", "crewai.events.listeners.tracing.utils")
EVENT_BUS = "crewai.events.event_bus:CrewAIEventsBus"


class CrewAIAdapter(PatchingAdapter):
    name = "crewai"
    module = "crewai"
    distribution = "crewai"
    requires = "crewai==1.15.*"
    extra = "crewai"

    @staticmethod
    def supported(version: str) -> bool:
        return version.startswith("1.15.")

    def hooks(self) -> Sequence[Hook]:
        agent_run = h.chain(h.scoped(h.executing_agent), h.declaring_final)
        return (
            # who calls: every agent's calls on its own lane, framework-internal ones with a reason
            Hook(f"{AGENT}.execute_task", h.scoped(h.executing_agent),
                 "attribute a task's LLM calls to the agent (role, lane); manager: reason"),
            Hook(f"{AGENT}.aexecute_task", h.scoped(h.executing_agent), "async twin"),
            Hook(f"{FLOW}._execute_method", h.flow_method,
                 "each Flow step on lane '<Flow>.<method>'; its crews' agents under it"),
            Hook(f"{AGENT}.kickoff", agent_run,
                 "standalone Agent.kickoff: attribution, final result"),
            Hook(f"{AGENT}.kickoff_async", agent_run, "async twin (akickoff delegates here)"),
            Hook(f"{TASK}._export_output", h.scoped(h.converting_output),
                 "reason output_conversion: output_pydantic/output_json converter call"),
            Hook(f"{TASK}._aexport_output", h.scoped(h.converting_output), "async twin"),
            Hook(f"{TASK}._invoke_guardrail_function", h.scoped(h.checking_guardrail),
                 "reason guardrail: LLM guardrails and the retries they trigger"),
            Hook(f"{TASK}._ainvoke_guardrail_function", h.scoped(h.checking_guardrail),
                 "async twin"),
            Hook("crewai.utilities.planning_handler:CrewPlanner._handle_crew_planning",
                 h.scoped(h.because("planning")), "reason planning: Crew(planning=True)"),
            Hook("crewai.utilities.planning_handler:CrewPlanner._create_tasks_summary",
                 h.planning_summary,
                 "the planner's task summary (holds memory addresses): record it, serve it"),
            Hook("crewai.utilities.reasoning_handler:AgentReasoning.handle_agent_reasoning",
                 h.scoped(h.because("reasoning")), "reason reasoning: Agent(reasoning=True)"),
            Hook("crewai.llms.context_window:summarize_messages",
                 h.scoped(h.because("context_summary")),
                 "reason context_summary: history compaction when the window overflows"),
            Hook("crewai.llms.providers.openai.completion:OpenAICompletion.get_input_tokens_count",
                 h.scoped(h.because("input_tokens")),
                 "reason input_tokens: POST /responses/input_tokens preflights (api.openai.com)"),
            Hook("crewai.llms.base_llm:BaseLLM._invoke_before_llm_call_hooks", h.provider_guard,
                 "fail closed on native providers whose SDK bypasses httpx (Bedrock, Azure)"),
            # tools: one lane per native call of a response; bodies are boundaries
            Hook("crewai.agents.agent_executor:AgentExecutor._execute_single_native_tool_call",
                 h.native_tool_call, "lane f'{agent}/tool#{i}' and call id per native tool call"),
            Hook("crewai.agents.agent_executor:AgentExecutor._should_parallelize_native_tool_calls",
                 h.refusing_parallel_handoffs,
                 "refuse two parallel hand-offs to one coworker (a race no bundle replays)"),
            Hook(f"{BASE_TOOL}.run", h.tool_run, "tool boundary (native path)"),
            Hook(f"{TOOL}.run", h.tool_run, "tool boundary for @tool functions (overrides run)"),
            Hook(f"{BASE_TOOL}.arun", h.tool_arun, "tool boundary (async)"),
            Hook(f"{TOOL}.arun", h.tool_arun, "tool boundary for @tool functions (async)"),
            Hook(f"{STRUCTURED_TOOL}.invoke", h.structured_invoke,
                 "tool boundary (text/ReAct path: func is the tool's _run)"),
            Hook(f"{STRUCTURED_TOOL}.ainvoke", h.structured_ainvoke, "async twin"),
            # side channel and final output
            Hook("crewai.utilities.prompts:Prompts._build_date_block", h.date_block,
                 "inject_date: record the rendered date, serve it on replay"),
            Hook(f"{CREW}.kickoff", h.chain(h.declaring_final, h.refusing_unsupported,
                                            _pinning.seeded_ids),
                 "refuse unreplayable crews; declare the crew output as final result; "
                 "crew/task/agent ids (verbose crews print them) derived, not uuid4"),
            Hook(f"{CREW}.akickoff", h.chain(h.declaring_final, h.refusing_unsupported,
                                             _pinning.seeded_ids),
                 "async twin (kickoff_async uses kickoff)"),
            Hook(f"{CREW}.kickoff_async", h.chain(h.opening_unit, h.registering_crew),
                 "the crew's place among concurrent crews and its final-result unit, taken "
                 "in the caller's task"),
            *(Hook(f"{CREW}.{name}", h.declaring_each_final,
                   "copies kicked off at once: the final result is their outputs in input order")
              for name in ("kickoff_for_each", "kickoff_for_each_async", "akickoff_for_each")),
            Hook(f"{FLOW}._create_initial_state", h.flow_state_id,
                 "a user Flow's random state id (printed): record it, serve it on replay"),
            Hook(f"{FLOW}.kickoff_async", h.chain(h.declaring_flow_final, consumption_point),
                 "declare a Flow's output as final result (kickoff/akickoff end here); "
                 "consumption point: the caller hands on to the Flow's methods (threads)"),
            *self.pinning_hooks(),
        )

    @staticmethod
    def pinning_hooks() -> Sequence[Hook]:
        """State CrewAI prints that is not a boundary (see _pinning.py)."""
        return (
            *(Hook(f"{module}:_load_user_data", _pinning.pinned_user_data,
                   "first-run and tracing-consent state under $HOME: pinned")
              for module in USER_DATA),
            *(Hook(f"{module}:_save_user_data", _pinning.unsaved_user_data,
                   "a recorded run does not write the user's CrewAI state")
              for module in USER_DATA),
            Hook(f"{EVENT_BUS}.emit", _pinning.delivered_events,
                 "verbose panels printed in emit order, not thread-pool order"),
        )


__all__ = ["CrewAIAdapter", "UnsupportedConstruct"]
