"""Re-record the AgentChat reference bundles (run from anywhere; needs `symtrace[autogen]`).

    python bundles/make_autogen_agentchat.py                 # every scenario + divergent case
    python bundles/make_autogen_agentchat.py magentic_one    # one scenario

Each scenario `examples/autogen_agentchat/<name>.py` is recorded with `symtrace record` from
the repository root (relative paths, so the bundle replays from any checkout) against the
embedded endpoint in scripted mode (`examples/autogen_agentchat/scripts/<name>.json`, slowed
per agent by `scripts/<name>.latency.json` where it exists, so concurrent agents complete in a
realistic order), with a fixed seed and hash seed, into `bundles/autogen_agentchat-<name>/`,
then strictly replayed once with no endpoint running to check it.

The divergent case `bundles/divergent/autogen_agentchat-critic-prompt/` is `round_robin`
recorded while ROUND_ROBIN_CRITIC_PROMPT replaced the critic's system message. That variable
is not part of the environment a bundle captures, so replaying runs today's default prompt and
must fail at the critic's first call; `expected_divergence.json` states where.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from symtrace import load_bundle
from symtrace.stub import StubLLM

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = Path("examples/autogen_agentchat")
sys.path.insert(0, str(REPO / EXAMPLES))
from stub_latency import add_latency  # noqa: E402 - lives next to the example programs

SCENARIOS = ("assistant_tools", "round_robin", "selector", "magentic_one",
             "streaming_tool_error", "swarm", "graph_sequential", "graph_fanout",
             "graph_conditional", "save_state", "twin_teams")
DIVERGENT = Path("bundles/divergent/autogen_agentchat-critic-prompt")
OLD_CRITIC_PROMPT = (
    "You are the critic. Review the draft and list every cliché in it. "
    "Reply APPROVE when there is none."
)


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "symtrace", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)


def record(name: str, out: Path, extra_env: dict[str, str] | None = None) -> None:
    with StubLLM(script=REPO / EXAMPLES / "scripts" / f"{name}.json") as stub:
        add_latency(stub, name)
        env = {**os.environ, "OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test",
               "PYTHONHASHSEED": "0", **(extra_env or {})}
        done = symtrace("record", "-o", str(out), "--force", "--quiet",
                        "--adapter", "autogen_agentchat", "--seed", "1",
                        "--task", f"autogen_agentchat scenario {name}", "--",
                        "python", str(EXAMPLES / f"{name}.py"), env=env)
    if done.returncode != 0:
        raise SystemExit(f"recording {name} failed:\n{done.stderr}")


def replay(bundle: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return symtrace("replay", str(bundle), "--quiet", env=env)


def make_scenario(name: str) -> None:
    out = Path(f"bundles/autogen_agentchat-{name}")
    record(name, out)
    done = replay(out)
    if done.returncode != 0:
        raise SystemExit(f"{out} does not replay:\n{done.stderr}")
    print(f"{out}: {len(load_bundle(REPO / out).events)} events")


def make_divergent() -> None:
    record("round_robin", DIVERGENT, {"ROUND_ROBIN_CRITIC_PROMPT": OLD_CRITIC_PROMPT})
    critic = next(e for e in load_bundle(REPO / DIVERGENT).events
                  if e.is_llm and e.agent == "critic")
    expected = {
        "kind": "request_mismatch",
        "event_id": critic.id,
        "lane": "critic",
        "path": "/body/messages/0/content",
        "why": "recorded with ROUND_ROBIN_CRITIC_PROMPT replacing the critic's system "
               "message; the program now sends its default prompt, so the writer's first "
               "draft still matches and the critic's first request is the first to differ",
    }
    (REPO / DIVERGENT / "expected_divergence.json").write_text(
        json.dumps(expected, indent=2, sort_keys=True) + "\n")
    done = replay(DIVERGENT)
    if done.returncode != 90:
        raise SystemExit(f"{DIVERGENT} should diverge but exited {done.returncode}")
    print(f"{DIVERGENT}: must diverge at {critic.id}")


def main(argv: list[str]) -> int:
    for name in argv or SCENARIOS:
        make_scenario(name)
    if not argv:
        make_divergent()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
