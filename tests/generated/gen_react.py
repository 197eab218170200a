"""The stochastic stub, taught two framework formats: CrewAI's ReAct text, Magentic-One ledgers.

A model without function calling gets CrewAI's ReAct instructions in its system prompt and must
answer `Thought: …` then either `Action: <tool>` + `Action Input: {json}` or
`Final Answer: …`. The plain stochastic responder answers free text, which CrewAI rejects
until it forces an answer. This responder keeps every stochastic choice (unseeded: fresh draws
per request) but writes it in that format; requests without the ReAct prompt get the plain
stochastic answer unchanged.

Magentic-One's progress ledger names the next speaker, which must be one of the team
("select from: a, b"); a schema-shaped random word is not, and the orchestrator gives up.
`LedgerAware` draws the ledger like the stub does and then picks the next speaker among the
names the prompt offers.
"""

from __future__ import annotations

import random
import re
import secrets
from typing import Any

import orjson

from symtrace.stub import Reply, StochasticResponder
from symtrace.stub import request as rq

REACT_MARKER = "Final Answer:"
TOOL_LINE = re.compile(r"^Tool Name: (\S+)", re.MULTILINE)


class ReActStochastic:
    """Unseeded; ReAct-formatted answers to ReAct prompts, plain stochastic ones otherwise."""

    mode = "policy"

    def __init__(self, tool_probability: float = 0.5) -> None:
        self.plain = StochasticResponder()
        self.tool_probability = tool_probability

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        system = " ".join(str(m.get("content")) for m in body.get("messages", [])
                          if m.get("role") == "system")
        if REACT_MARKER not in system:
            return self.plain.respond(body, call_index)
        rng = random.Random(secrets.randbits(64))
        tools = TOOL_LINE.findall(system)
        last = rq.last_user_text(body)
        went_on = len(body.get("messages", [])) > 2  # a tool result or a retry came back
        p = self.tool_probability / (3 if went_on else 1)
        if tools and rng.random() < p:
            name = rng.choice(tools)
            topic = rng.choice(("Lisbon", "Porto", "Madeira"))
            return Reply(content=f"Thought: I should look this up.\nAction: {name}\n"
                         f"Action Input: {orjson.dumps({'topic': topic}).decode()}")
        text = self.plain.respond({"messages": [{"role": "user", "content": last}]},
                                  call_index).content
        return Reply(content=f"Thought: I now know the final answer.\nFinal Answer: {text}")


NAMES = re.compile(r"select from: ([^)\n]+)\)")


class LedgerAware:
    """Unseeded stochastic answers; Magentic-One ledgers name a real team member."""

    mode = "policy"

    UNSATISFIED_LEDGERS = 2  # the first ledgers never declare the task done: turns happen

    def __init__(self) -> None:
        self.plain = StochasticResponder()
        self.ledgers = 0

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        reply = self.plain.respond(body, call_index)
        names = NAMES.findall(orjson.dumps(body.get("messages", [])).decode())
        if not names or not reply.content or '"next_speaker"' not in reply.content:
            return reply
        ledger = orjson.loads(reply.content)
        choices = [n.strip() for n in names[-1].split(",") if n.strip()]
        ledger["next_speaker"]["answer"] = random.Random(secrets.randbits(64)).choice(choices)
        self.ledgers += 1
        if self.ledgers <= self.UNSATISFIED_LEDGERS:
            ledger["is_request_satisfied"]["answer"] = False
        return Reply(content=orjson.dumps(ledger).decode())
