"""Re-record the CrewAI reference bundles (run from anywhere; needs `symtrace[crewai]`).

    python bundles/make_crewai.py               # every scenario, then the divergent cases
    python bundles/make_crewai.py sequential    # one scenario

Each scenario `examples/crewai/<name>.py` is recorded with `symtrace record --adapter crewai`
from the repo root (relative paths, so the bundle replays from any checkout) against the
embedded endpoint in scripted mode (`examples/crewai/scripts/<name>.json`), with a fixed seed
and hash seed, into `bundles/crewai-<name>/`, and then strictly replayed once to check it.
CrewAI's home-directory writes go to a temporary HOME; telemetry and the version check are off.

`openai_host` is `sequential` with its endpoint at http://api.openai.com/v1, reached through
the stub acting as a loopback HTTP proxy: CrewAI then adds `POST /v1/responses/input_tokens`
preflights (the stub answers 404, CrewAI falls back to estimating), which the bundle holds.

Divergent cases (`bundles/divergent/crewai-*/`, each with `expected_divergence.json`) run a
small `app.py` that is edited after the recording:
* `crewai-edited-writer-goal`: the writer's goal changes, so replay fails at its first call;
* `crewai-endpoint-host`: the endpoint moves off api.openai.com, the input_tokens preflights
  are no longer made, so replay fails where the first one was recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from symtrace import load_bundle
from symtrace.stub import StubLLM

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "crewai"
SCENARIOS = ("sequential", "hierarchical", "parallel_tools", "tool_error", "structured_output",
             "openai_host", "async_tasks", "trip_flow", "planning", "guardrails")
SEED = "1"
OPENAI_HOST_URL = "http://api.openai.com/v1"

APP = '''"""examples/crewai/sequential.py as it was recorded, then edited: {what}.

{bundle} holds the recording; replaying it runs this file.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "crewai"))
import sequential  # noqa: E402

{edit}sequential.main()
'''


def script(name: str) -> dict:
    base = "sequential" if name == "openai_host" else name
    return json.loads((EXAMPLES / "scripts" / f"{base}.json").read_text())


def base_env(home: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.lower().endswith("_proxy") and not key.startswith(("OPENAI_", "CREWAI_"))}
    return {**env, "HOME": home, "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_CONFIG_HOME": f"{home}/.config", "CREWAI_STORAGE_DIR": f"{home}/storage",
            "OPENAI_API_KEY": "sk-test", "PYTHONHASHSEED": "0",
            "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
            "CREWAI_DISABLE_VERSION_CHECK": "true", "CREWAI_TRACING_ENABLED": "false"}


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "symtrace", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)


def record(name: str, out: Path, program: str, home: str) -> None:
    with StubLLM(mode="scripted", script=script(name)) as stub:
        env = {**base_env(home), "OPENAI_BASE_URL": stub.url}
        if name == "openai_host":  # the stub as a plain-HTTP proxy: nothing leaves loopback
            env.update(OPENAI_BASE_URL=OPENAI_HOST_URL, HTTP_PROXY=stub.root_url,
                       http_proxy=stub.root_url)
        done = symtrace("record", "-o", os.path.relpath(out, REPO), "--force", "--quiet",
                        "--adapter", "crewai", "--seed", SEED, "--task", f"crewai {name}",
                        "--", "python", program, env=env)
    if done.returncode != 0:
        raise SystemExit(f"recording {program} failed:\n{done.stderr}")


def check_replays(bundle: Path, home: str) -> None:
    done = symtrace("replay", os.path.relpath(bundle, REPO), "--quiet", env=base_env(home))
    if done.returncode != 0:
        raise SystemExit(f"{bundle} does not replay:\n{done.stderr}")


def make_scenario(name: str, home: str) -> None:
    out = REPO / "bundles" / f"crewai-{name}"
    program = "sequential" if name == "openai_host" else name
    record(name, out, f"examples/crewai/{program}.py", home)
    check_replays(out, home)
    print(f"{out.relative_to(REPO)}: {len(load_bundle(out).events)} events")  # noqa: T201


def make_divergent(case: str, name: str, what: str, edit: str, home: str) -> Path:
    """Record app.py unedited into bundles/divergent/<case>, then apply *edit* to it."""
    target = REPO / "bundles" / "divergent" / case
    target.mkdir(parents=True, exist_ok=True)
    app = target / "app.py"
    bundle = target.relative_to(REPO)
    app.write_text(APP.format(what="nothing changed yet", edit="", bundle=bundle))
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "bundle"
        record(name, staged, str(app.relative_to(REPO)), home)
        for item in target.iterdir():
            if item.name != "app.py":
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        for item in staged.iterdir():
            shutil.move(str(item), target / item.name)
    app.write_text(APP.format(what=what, edit=edit, bundle=bundle))
    return target


def expect(target: Path, kind: str, event_id: str, why: str, **check: str) -> None:
    event = load_bundle(target).event(event_id)
    for field, value in check.items():
        actual = event.meta.get(field) if field == "tool" else getattr(event, field)
        if actual != value:
            raise SystemExit(f"{target}: {event_id} has {field}={actual!r}, expected {value!r}")
    expected = {"kind": kind, "event_id": event_id, "lane": event.lane, "why": why}
    (target / "expected_divergence.json").write_text(
        json.dumps(expected, indent=2, sort_keys=True) + "\n")
    print(f"{target.relative_to(REPO)}: must diverge ({kind}) at {event_id}")  # noqa: T201


def make_divergent_cases(home: str) -> None:
    goal = make_divergent(
        "crewai-edited-writer-goal", "sequential", "the writer's goal now asks for long plans",
        'sequential.WRITER_GOAL = "Write long, detailed trip plans"\n', home)
    expect(goal, "request_mismatch", "agent_action_0002", agent="Writer",
           why="app.py changed the Writer's goal (its system prompt) after the recording; the "
               "researcher's calls, its tools and the injected date still match, the writer's "
               "first request is the first that differs")
    host = make_divergent(
        "crewai-endpoint-host", "openai_host",
        "the endpoint moved from api.openai.com to a compatible server",
        'os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"\n', home)
    expect(host, "request_mismatch", "tool_call_0004", tool="http", reason="input_tokens",
           why="recorded against api.openai.com, where CrewAI preflights every completion with "
               "POST /v1/responses/input_tokens; on any other host it estimates locally, so "
               "the researcher's first completion arrives where the recorded preflight was")


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="crewai-home-") as home:
        for name in argv or SCENARIOS:
            make_scenario(name, home)
        if not argv:
            make_divergent_cases(home)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
