"""Re-record the AG2 reference bundles (run from anywhere; needs `symtrace[ag2-classic]`).

    python bundles/make_ag2.py            # every scenario, then the divergent case
    python bundles/make_ag2.py cache      # one scenario (or `divergent`)

Each scenario `examples/ag2/<name>.py` is recorded with `symtrace record` from the repo root
(relative paths, so the bundle replays from any checkout) against the embedded endpoint in
scripted mode (`examples/ag2/stub_scripts.json`), with a fixed seed and hash seed, into
`bundles/ag2-<name>/`, and then strictly replayed once to check it.

The divergent case `bundles/divergent/ag2-edited-writer-prompt/` is `groupchat_auto` run
through a small `app.py` that is edited after the recording (the writer's prompt changes), so
a strict replay must fail at the writer's call; `expected_divergence.json` states where.
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
SCRIPTS = json.loads((REPO / "examples" / "ag2" / "stub_scripts.json").read_text())
SCENARIOS = ("two_agent", "two_agent_async", "groupchat_auto", "groupchat_random",
             "tool_error", "cache", "nested_chats", "chat_sequence", "chats_async",
             "groupchat_async")
DIVERGENT = REPO / "bundles" / "divergent" / "ag2-edited-writer-prompt"
SEED = "1"

APP = '''"""groupchat_auto as it was recorded, then edited: {what}.

bundles/divergent/ag2-edited-writer-prompt holds the recording; replaying it runs this file.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "ag2"))
import groupchat_auto  # noqa: E402

{edit}sys.exit(groupchat_auto.main())
'''
EDITED_PROMPT = "You are the writer. Write the note in French, then say TERMINATE."


def symtrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "symtrace", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)


def record(script: dict, out: Path, program: str, task: str) -> None:
    with StubLLM(script=script) as stub:
        env = {**os.environ, "OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test",
               "PYTHONHASHSEED": "0"}
        done = symtrace("record", "-o", os.path.relpath(out, REPO), "--force", "--quiet",
                        "--adapter", "ag2", "--seed", SEED, "--task", task, "--",
                        "python", program, env=env)
    if done.returncode != 0:
        raise SystemExit(f"recording {program} failed:\n{done.stderr}")


def check_replays(bundle: Path) -> None:
    done = symtrace("replay", os.path.relpath(bundle, REPO), "--quiet", env=dict(os.environ))
    if done.returncode != 0:
        raise SystemExit(f"{bundle} does not replay:\n{done.stderr}")


def make_scenario(name: str) -> None:
    out = REPO / "bundles" / f"ag2-{name}"
    record(SCRIPTS[name], out, f"examples/ag2/{name}.py", f"ag2 scenario {name}")
    check_replays(out)
    sys.stdout.write(f"{out.relative_to(REPO)}: {len(load_bundle(out).events)} events\n")


def make_divergent() -> None:
    app = DIVERGENT / "app.py"
    DIVERGENT.mkdir(parents=True, exist_ok=True)
    app.write_text(APP.format(what="nothing changed yet", edit=""))
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "bundle"
        record(SCRIPTS["groupchat_auto"], staged, str(app.relative_to(REPO)),
               "ag2 divergent case: the writer's prompt is edited after recording")
        for item in DIVERGENT.iterdir():
            if item.name not in ("app.py",):
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        for item in staged.iterdir():
            shutil.move(str(item), DIVERGENT / item.name)
    app.write_text(APP.format(
        what="the writer's prompt now asks for French",
        edit=f"groupchat_auto.WRITER_PROMPT = {EDITED_PROMPT!r}\n",
    ))
    writer = next(e for e in load_bundle(DIVERGENT).events if e.is_llm and e.agent == "writer")
    expected = {
        "kind": "request_mismatch",
        "event_id": writer.id,
        "lane": "writer",
        "path": "/body/messages/0/content",
        "why": "app.py changed the writer's system prompt after the recording; the speaker "
               "selections, the planner, the researcher and its tool call still match, the "
               "writer's request is the first that differs",
    }
    (DIVERGENT / "expected_divergence.json").write_text(
        json.dumps(expected, indent=2, sort_keys=True) + "\n")
    sys.stdout.write(f"{DIVERGENT.relative_to(REPO)}: must diverge at {writer.id}\n")


def main(argv: list[str]) -> int:
    for name in argv or [*SCENARIOS, "divergent"]:
        if name == "divergent":
            make_divergent()
        elif name in SCENARIOS:
            make_scenario(name)
        else:
            raise SystemExit(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)}, "
                             "divergent)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
