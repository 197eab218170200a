"""20 strict replays (endpoint stopped) and a selective replay at every LLM call, through the
CLI, for one "one agent, concurrent turns" program (tests/stress/turn_programs):

    PY tests/stress/turn_heldout.py tests/stress/turn_programs/agent_gather.py OUT
    .nox/next/bin/python tests/stress/turn_heldout.py tests/stress/turn_programs/ag2v1_desk.py OUT

Records against the seeded stochastic stub; each selective replay's live suffix goes to the
stub, then, with the stub stopped, the bundle is replayed 20 times and every child once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from symtrace.bundle.reader import load_bundle
from symtrace.stub import StubLLM


def main(program: Path, out: Path) -> int:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cli = str(Path(sys.executable).parent / "symtrace")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONHASHSEED": "0"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([cli, *args], env=env, capture_output=True, text=True)

    with StubLLM(mode="stochastic", seed=11, tool_probability=0.0) as stub:
        env["OPENAI_BASE_URL"] = stub.url
        recorded = run("record", "-o", str(out / "b"), "--quiet", "--", sys.executable,
                       str(program))
        if recorded.returncode:
            print(recorded.stderr[-2000:])
            return 1
        anchors = [e.id for e in load_bundle(out / "b").events if e.is_llm]
        selective = {a: run("replay", str(out / "b"), "--anchor", a, "--guidance", "Be brief.",
                            "-o", str(out / f"child-{a}"), "--quiet") for a in anchors}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # the endpoint is stopped
    codes = [run("replay", str(out / "b"), "--quiet").returncode for _ in range(20)]
    print(f"{program.stem}: strict replays exit 0: {codes.count(0)} / 20 {sorted(set(codes))}")
    failed = codes.count(0) != 20
    for anchor, done in selective.items():
        child = run("replay", str(out / f"child-{anchor}"), "--quiet") if not done.returncode \
            else None
        print(f"  selective at {anchor}: exit {done.returncode}; child strict replay exit "
              f"{child.returncode if child else '-'}")
        failed |= done.returncode != 0 or child is None or child.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2])))
