"""Run the published-examples corpus through every step a user of symtrace takes.

For each program of `examples/published/` (the frameworks' own published examples, each
changed only as its header says), against the embedded stub with the program's script:

1. `symtrace record` (exit 0);
2. `symtrace replay`, strict, three times (exit 0, no request reaches the endpoint);
3. with `CORPUS_EDIT=1` (the program edits one prompt), a strict replay diverges (exit 90);
4. `symtrace replay --anchor agent_action_0000 --guidance ... -o child` (selective, live
   from the first LLM call), then the child bundle replays strictly (exit 0).

    python examples/published/run_corpus.py            # every program
    python examples/published/run_corpus.py --only crewai/latest_ai_development
    python examples/published/run_corpus.py --list

Each program runs with its directory as working directory and a throwaway HOME (CrewAI and
AG2 write under it). Prints one line per step and exits 1 if any step failed.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUIET_ENV = {  # network side channels of the frameworks, off (not LLM calls)
    "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_VERSION_CHECK": "true", "CREWAI_DISABLE_TRACKING": "1",
    "CREWAI_TRACING_ENABLED": "false", "AUTOGEN_DISABLE_RUNTIME_TRACING": "true",
    "OPENAI_API_KEY": "sk-corpus",
}
GUIDANCE = "Keep the answer to one short paragraph."


@dataclass(frozen=True)
class Program:
    name: str  # framework/stem
    path: Path  # the program file
    script: Path  # its stub script

    @classmethod
    def found(cls) -> list[Program]:
        programs = []
        for script in sorted(HERE.glob("*/**/*.stub.json")):
            program = script.with_name(script.name.removesuffix(".stub.json") + ".py")
            if not program.is_file():
                program = script.parent / "main.py"
            relative = script.relative_to(HERE)
            framework = relative.parts[0]
            stem = script.name.removesuffix(".stub.json")
            name = f"{framework}/{relative.parts[1] if stem == 'main' else stem}"
            programs.append(cls(name, program, script))
        return programs


# frameworks whose programs run in another environment than the driver's (symtrace's CLI
# runs there too: it is an editable install of this checkout in both)
ENVIRONMENTS = {"ag2v1": HERE.parents[1] / ".nox" / "next" / "bin" / "python"}  # AG2 1.x


def interpreter(program: Program, default: str = sys.executable) -> str:
    """The Python of *program*'s framework: AG2 1.x's lives in the `next` nox env."""
    python = ENVIRONMENTS.get(program.name.split("/", 1)[0])
    return str(python) if python is not None else default


def symtrace(*args: str, env: dict[str, str], cwd: Path,
             python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "symtrace", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def run(program: Program, work: Path, python: str | None = None, *, replays: int = 3,
        selective: bool = True) -> list[tuple[str, bool, str]]:
    """Every step of one program: (step, passed, detail). The fast subset the test suite
    runs asks for one strict replay and no selective one. *python* (default: the program's
    framework's interpreter) runs the program and symtrace's CLI."""
    from symtrace.stub import StubLLM

    python = python or interpreter(program)
    cli = functools.partial(symtrace, python=python)

    results: list[tuple[str, bool, str]] = []
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    bundle, child = work / "bundle", work / "child"
    with StubLLM(mode="scripted", script=program.script) as stub:
        env = {**os.environ, **QUIET_ENV, "HOME": str(home), "OPENAI_BASE_URL": stub.url,
               "XDG_DATA_HOME": str(home / ".local" / "share"),
               "XDG_CONFIG_HOME": str(home / ".config"), "NO_COLOR": "1", "COLUMNS": "100"}
        env.pop("CORPUS_EDIT", None)
        cwd = program.path.parent

        def step(name: str, done: subprocess.CompletedProcess[str], want: int) -> bool:
            ok = done.returncode == want
            tail = "" if ok else (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
            results.append((name, ok, f"exit {done.returncode}, wanted {want}. {tail}"))
            return ok

        if not step("record", cli("record", "-o", str(bundle), "--force", "--quiet",
                                       "--", python, program.path.name, env=env, cwd=cwd), 0):
            return results
        served = stub.served
        for i in range(1, replays + 1):
            step(f"strict replay {i}", cli("replay", str(bundle), "--quiet", env=env,
                                                cwd=cwd), 0)
        results.append(("no request on replay", stub.served == served,
                        f"{stub.served - served} requests reached the endpoint"))
        step("edited prompt diverges", cli("replay", str(bundle), "--quiet",
                                                env={**env, "CORPUS_EDIT": "1"}, cwd=cwd), 90)
        if selective and step("selective replay", cli(
                "replay", str(bundle), "--quiet", "--anchor", "agent_action_0000",
                "--guidance", GUIDANCE, "-o", str(child), "--force", env=env, cwd=cwd), 0):
            step("child strict replay", cli("replay", str(child), "--quiet", env=env,
                                                 cwd=cwd), 0)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="framework/name (repeat)")
    parser.add_argument("--list", action="store_true", help="list the programs and exit")
    parser.add_argument("--python", default=None,
                        help="interpreter of the programs and the CLI (default: the "
                             "framework's: AG2 1.x's is .nox/next/bin/python)")
    args = parser.parse_args(argv)
    programs = [p for p in Program.found() if not args.only or p.name in args.only]
    if args.list:
        for program in programs:
            print(program.name)
        return 0
    failed = 0
    for program in programs:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="symtrace-corpus-") as work:
            results = run(program, Path(work), args.python)
        bad = [r for r in results if not r[1]]
        failed += bool(bad)
        print(f"{'FAIL' if bad else 'ok  '} {program.name} ({len(results)} steps, "
              f"{time.monotonic() - started:.0f}s)")
        for name, _, detail in bad:
            print(f"     {name}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
