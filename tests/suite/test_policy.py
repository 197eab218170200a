"""The task-aware stub policy: determinism, guidance effects, serving it, its CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from symtrace_suite import plan
from symtrace_suite.policy import SuitePolicy
from symtrace_suite.policy.conversation import parse_result, tool_history
from symtrace_suite.policy.dryrun import tool_schemas
from symtrace_suite.tasks import Task, get_task, load_tasks

from symtrace.diagnosis.templates import default_templates
from symtrace.stub.reply import Reply
from symtrace.stub.server import StubLLM
from tests.suite._support import wait_for_file

TASKS = load_tasks()
SEEDS = range(12)
HTTP = httpx.Client(timeout=30)  # one client: building one per request costs ~0.1 s


def body(task: Task, *extra: dict[str, Any], prompt: str | None = None) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "temperature": 0,
        "tools": tool_schemas(),
        "messages": [
            {"role": "system", "content": "You are the assistant."},
            {"role": "user", "content": prompt or task.prompt},
            *extra,
        ],
    }


def first_step_ok(task: Task, reply: Reply) -> bool:
    """Did the reply make exactly the plan's first call(s)?"""
    want = [(task.plan[0]["tool"], a) for a in plan.step_calls(task.plan[0], [])]
    got = [(c.name, json.loads(c.arguments)) for c in reply.tool_calls]
    return got == want


def suspicious(categories: str) -> dict[str, Any]:
    first = categories.split()[0]
    text = default_templates().render(
        "suspicious_node",
        target="agent_action_0001",
        anchor="agent_action_0001",
        categories=categories,
        evidence=f'- tool_result_0000 [{first}]: "quote" (note)',
    )
    return {"role": "user", "content": text}


GENERIC = {
    "role": "user",
    "content": default_templates().render(
        "generic_node", target="agent_action_0001", anchor="agent_action_0001"
    ),
}


def mistake_rate(extra: list[dict[str, Any]], skill: float = 0.5) -> float:
    draws = [
        not first_step_ok(task, SuitePolicy(seed, skill).respond(body(task, *extra), 0))
        for task in TASKS
        for seed in SEEDS
    ]
    return sum(draws) / len(draws)


def test_same_seed_and_request_give_the_same_reply_whatever_the_call_index() -> None:
    task = get_task("multi-001")
    for seed in range(5):
        a = SuitePolicy(seed, 0.5).respond(body(task), 0)
        b = SuitePolicy(seed, 0.5).respond(body(task), 917)
        assert a == b
    replies = {SuitePolicy(seed, 0.5).respond(body(task), 0) for seed in range(40)}
    assert len(replies) > 1  # the seed matters


def test_served_replies_do_not_depend_on_order_or_concurrency() -> None:
    bodies = [body(t) for t in TASKS]

    def ask(url: str, b: dict[str, Any]) -> Any:
        return HTTP.post(url + "/chat/completions", json=b).json()["choices"][0]["message"]

    def strip(message: dict[str, Any]) -> Any:
        return [
            (c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ], message.get("content")

    with StubLLM(responder=SuitePolicy(3, 0.5)) as llm:
        sequential = [strip(ask(llm.url, b)) for b in bodies]
    with StubLLM(responder=SuitePolicy(3, 0.5)) as llm, ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(lambda b: strip(ask(llm.url, b)), reversed(bodies)))[::-1]
    assert sequential == parallel


def test_skill_one_makes_no_mistakes_and_lower_skill_makes_more() -> None:
    assert mistake_rate([], skill=1.0) == 0.0
    assert 0.3 < mistake_rate([], skill=0.5) < 0.7
    assert mistake_rate([], skill=0.8) < mistake_rate([], skill=0.5)


def test_guidance_lowers_the_mistake_rate_by_what_it_carries() -> None:
    none = mistake_rate([])
    relevant = mistake_rate([suspicious("C3 (unresolved runtime condition), C4 (plan-action)")])
    off_target = mistake_rate([suspicious("C2 (repeated or stalled progress)")])
    generic = mistake_rate([GENERIC])
    assert relevant < 0.5 * generic, (relevant, generic)
    assert generic < 0.8 * none, (generic, none)
    assert relevant < off_target < none, (relevant, off_target, none)


def test_a_rerun_prompt_is_resampling_not_guidance() -> None:
    def rate(mode: str) -> float:
        draws = []
        for task in TASKS:
            prompt = f"Mode: {mode}\nTask: {task.prompt}\nSolve the task."
            for seed in SEEDS:
                reply = SuitePolicy(seed, 0.5).respond(body(task, prompt=prompt), 0)
                draws.append(not first_step_ok(task, reply))
        return sum(draws) / len(draws)

    none, rerun, critic = mistake_rate([]), rate("fail-then-rerun"), rate("critic-agent")
    assert abs(rerun - none) < 0.08, (rerun, none)  # same rate, different samples
    assert critic < rerun - 0.1, (critic, rerun)


def test_after_a_failed_call_guidance_lowers_the_retry_unchanged_rate() -> None:
    task = get_task("shop-001")
    bad = {"order_id": "__ORDER_ID__"}
    error = {
        "status": "error",
        "http_status": 404,
        "error": {"code": "not_found", "message": "order '__ORDER_ID__' not found"},
    }
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shop_get_order", "arguments": json.dumps(bad)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": str(error)},  # python repr, like AG2
    ]

    def retries(extra: list[dict[str, Any]]) -> int:
        count = 0
        for seed in range(200):
            reply = SuitePolicy(seed, 0.8).respond(body(task, *history, *extra), 0)
            count += [json.loads(c.arguments) for c in reply.tool_calls] == [bad]
        return count

    plain, guided = retries([]), retries([suspicious("C3 (unresolved runtime condition)")])
    assert plain > 80 and guided < plain / 3, (plain, guided)


def test_tool_history_reads_json_and_python_repr_results() -> None:
    assert parse_result('{"a": 1}') == {"a": 1}
    assert parse_result("{'a': None, 'b': True}") == {"a": None, "b": True}
    assert parse_result("Error: boom") == "Error: boom"
    uses = tool_history(
        body(
            get_task("shop-001"),
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "x",
                        "function": {"name": "shop_get_order", "arguments": '{"order_id": "O-1"}'},
                    },
                    {
                        "id": "y",
                        "function": {"name": "shop_get_order", "arguments": '{"order_id": "O-2"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "x", "content": "Error: timeout"},
            {"role": "tool", "tool_call_id": "y", "content": '{"total": 3}'},
        )
    )
    assert [(u.args["order_id"], u.ok) for u in uses] == [("O-1", False), ("O-2", True)]


def test_unknown_task_gets_an_honest_unknown_answer() -> None:
    reply = SuitePolicy(0, 1.0).respond(
        {"messages": [{"role": "user", "content": "Hi"}], "tools": tool_schemas()}, 0
    )
    assert reply.content is not None and "FINAL ANSWER: unknown" in reply.content


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="skill"):
        SuitePolicy(0, 1.5)
    with pytest.raises(TypeError, match="seed"):
        SuitePolicy(True, 0.5)  # type: ignore[arg-type]


# -- StubLLM(responder=...) ---------------------------------------------------------------


class Echo:
    mode = "echo"

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        return Reply(content=f"#{call_index}: {body['messages'][-1]['content']}")


def test_stub_serves_a_custom_responder_through_the_openai_sdk() -> None:
    with StubLLM(responder=Echo()) as llm:
        client = openai.OpenAI(base_url=llm.url, api_key="x", max_retries=0)
        for i in range(2):
            out = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"hello {i}"}]
            )
            assert out.choices[0].message.content == f"#{i}: hello {i}"
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "s"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "#2: s"
        assert llm.mode == "policy" and llm.stats()["served"] == 3


def test_stub_responder_argument_errors() -> None:
    with pytest.raises(ValueError, match="served alone"):
        StubLLM(mode="scripted", responder=Echo())
    with pytest.raises(ValueError, match="served alone"):
        StubLLM(script={"rules": []}, responder=Echo())
    with pytest.raises(ValueError, match="responder="):
        StubLLM(mode="policy")
    with pytest.raises(TypeError, match="respond"):
        StubLLM(responder=object())  # type: ignore[arg-type]
    assert StubLLM().mode == "stochastic"  # unchanged default


def test_policy_cli_writes_the_port_file_and_serves(tmp_path: Path) -> None:
    port_file = tmp_path / "port.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "symtrace_suite.policy",
            "--port-file",
            str(port_file),
            "--seed",
            "4",
            "--skill",
            "1.0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        info = wait_for_file(port_file, proc)
        assert info["url"] == f"http://127.0.0.1:{info['port']}/v1"
        task = get_task("wiki-002")
        message = HTTP.post(info["url"] + "/chat/completions", json=body(task), timeout=30).json()[
            "choices"
        ][0]["message"]
        assert message["tool_calls"][0]["function"]["name"] == "wiki_search"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # waits, and closes its pipes
        assert proc.returncode == 0
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "symtrace_suite.policy",
            "--port-file",
            str(port_file),
            "--skill",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "skill" in bad.stderr


def test_a_foreach_over_nothing_is_done_without_a_call() -> None:
    """shop-010 for a customer with no pending orders: answer at once, never an empty turn."""
    task = get_task("shop-010")

    def call(i: int, name: str, args: dict[str, Any], result: Any) -> list[dict[str, Any]]:
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(result)},
        ]

    history = [
        *call(
            0,
            "shop_find_customers",
            {"query": "Mara Quint"},
            {"customers": [{"id": "C-108"}], "count": 1},
        ),
        *call(
            1,
            "shop_list_orders",
            {"customer_id": "C-108", "status": "pending"},
            {"orders": [], "count": 0},
        ),
    ]
    for seed in range(20):
        reply = SuitePolicy(seed, 1.0).respond(body(task, *history), 0)
        assert reply.tool_calls == () and reply.content
        assert 'FINAL ANSWER: {"canceled":[]}' in reply.content
