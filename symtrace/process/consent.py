"""What a bundle may make a replay run, and the user's consent to it (docs/security.md).

A bundle names a command line, a working directory and environment variables. They are data:

* **Environment** (`bundle_env`): only variables recording captures for the program's behaviour
  (ENV_PREFIXES, what record_run captures, plus the names recorded with `record --env`) are
  applied, and never interpreter or loader paths (`PYTHON*`, `LD_*`, `DYLD_*`, shell start-up
  files), proxies or TLS trust settings, symtrace's own `SYMTRACE_*` controls, an endpoint
  (a value holding a URL, a `*_BASE_URL`/`*_ENDPOINT`/`*_HOST` name: live calls go to the
  user's endpoint), or a value naming a file inside the bundle directory. What is left out
  is listed with why.
* **Consent** (`require_consent`): before the program starts, the command, directory and
  applied environment are shown. They run without asking when this user recorded them on this
  machine (recording approves them) or approved them before, when the user gave the command
  (`replay B -- CMD`) and runs it in their own directory, or with `trust=True` (`--trust`);
  otherwise a terminal asks, and without a terminal the replay is refused
  (ReplayNotApproved, exit 97) with nothing run.

Approvals are kept per user in `$XDG_STATE_HOME/symtrace/approved.jsonl` (default
`~/.local/state/symtrace/`), one line per approval, keyed by the sha256 of the canonical JSON of
{argv, cwd, env} as applied.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from symtrace.errors import ReplayNotApproved

# What recording captures for the program's behaviour (symtrace.process.record_run imports it).
ENV_PREFIXES = (
    "OPENAI_",
    "SYMTRACE_",
    "CREWAI_",
    "OTEL_",
    "AUTOGEN",
    "AG2",
    "PYTHONHASHSEED",
    "TZ",
    "LANG",
    "LC_",
    "TIKTOKEN_",
)
# Never applied from a bundle, whoever recorded it: they choose what code runs, where traffic
# goes or whom TLS trusts.
_NEVER = re.compile(
    r"^(PYTHON.*|LD_.*|DYLD_.*|SYMTRACE_.*|.*PROXY.*|PATH|HOME|SHELL|ENV|BASH_ENV|IFS|"
    r"PERL5LIB|PERL5OPT|RUBYLIB|RUBYOPT|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|GCONV_PATH|"
    r"OPENSSL_.*|SSL_CERT_.*|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|.*_CA_BUNDLE|GIT_.*|TMPDIR|"
    r"MALLOC_.*|GLIBC_TUNABLES)$",
    re.IGNORECASE,
)
_ENDPOINT_NAME = re.compile(r"(BASE_URL|API_BASE|ENDPOINT|_URL|_URI|_HOST|_ADDRESS)$",
                            re.IGNORECASE)
ENDPOINT_ENV = "OPENAI_BASE_URL"  # what --endpoint sets
# Why a variable is withheld, for the two kinds every recording has (not worth a note once
# the command is approved): the others are said whenever a replay runs.
ENDPOINT = ("an endpoint: applied to a strict replay only (no call goes live); a live suffix "
            "uses your environment's (or --endpoint)")
OWN = "symtrace's own setting: this process's is used"


@dataclass(frozen=True)
class BundleEnv:
    """The variables a bundle asks for: *applied*, and *withheld* (name → why not).

    *endpoints* are the withheld endpoint variables a strict replay still applies: programs
    branch on them (CrewAI counts input tokens only against api.openai.com), and a strict
    replay sends nothing (every call is served or refused; the network namespace and the
    egress guard stop the rest), so they cannot carry the user's key anywhere."""

    applied: dict[str, str]
    withheld: dict[str, str] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)

    def for_run(self, *, live: bool) -> dict[str, str]:
        """The variables a replay sets: with the endpoints unless calls may go *live*."""
        return dict(self.applied) if live else {**self.applied, **self.endpoints}


def bundle_env(recorded: Any, *, kept: Sequence[str] = (), bundle_dir: Path) -> BundleEnv:
    """Sort the recorded environment into what a replay applies and what it withholds."""
    if not isinstance(recorded, Mapping):
        return BundleEnv({})
    inside = _bundle_paths(bundle_dir)
    applied: dict[str, str] = {}
    withheld: dict[str, str] = {}
    endpoints: dict[str, str] = {}
    for name, value in sorted(recorded.items()):
        if not isinstance(name, str) or not isinstance(value, str):
            withheld[str(name)] = "not a string"
        elif name.startswith("SYMTRACE_"):
            withheld[name] = OWN
        elif _NEVER.match(name):
            withheld[name] = "chooses code, traffic or trust: never taken from a bundle"
        elif not name.startswith(ENV_PREFIXES) and name not in kept:
            withheld[name] = "not a variable recording captures"
        elif any(path in value for path in inside):
            withheld[name] = "names a file inside the bundle"
        elif "://" in value or _ENDPOINT_NAME.search(name):
            withheld[name] = ENDPOINT
            endpoints[name] = value
        else:
            applied[name] = value
    return BundleEnv(applied, withheld, endpoints)


def _bundle_paths(bundle_dir: Path) -> set[str]:
    paths = {str(bundle_dir.absolute())}
    with contextlib.suppress(OSError):
        paths.add(str(bundle_dir.resolve()))
    return {p.rstrip("/") for p in paths if p.rstrip("/")}


# -- the digest and the approvals store ------------------------------------------------------
def launch_digest(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> str:
    """sha256 of what a replay applies from a bundle (canonical JSON, sorted keys)."""
    data = orjson.dumps({"argv": list(argv), "cwd": cwd, "env": dict(env)},
                        option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def approvals_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "symtrace" / "approved.jsonl"


def is_approved(digest: str) -> bool:
    try:
        data = approvals_path().read_bytes()
    except OSError:
        return False
    for line in data.splitlines():
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            if orjson.loads(line).get("digest") == digest:
                return True
    return False


def approve(digest: str, argv: Sequence[str], cwd: str, how: str) -> None:
    """Keep an approval (best effort: a store that cannot be written asks again next time)."""
    if is_approved(digest):
        return
    path = approvals_path()
    line = orjson.dumps({"digest": digest, "how": how, "argv": list(argv), "cwd": cwd},
                        option=orjson.OPT_SORT_KEYS) + b"\n"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def approve_recorded(manifest: Mapping[str, Any], bundle_dir: Path) -> None:
    """A recording approves its own command: replaying it on this machine does not ask."""
    command = (manifest.get("config") or {}).get("command") or {}
    argv, cwd = command.get("argv"), command.get("cwd")
    if not isinstance(argv, list) or not isinstance(cwd, str):
        return
    env = bundle_env(command.get("env"), kept=command.get("env_keep") or (),
                     bundle_dir=bundle_dir)
    approve(launch_digest(argv, cwd, env.applied), argv, cwd, "recorded here")


# -- asking ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchPlan:
    """What a replay is about to run, and where each part comes from."""

    argv: list[str]
    cwd: str
    env: BundleEnv
    argv_from_user: bool
    cwd_from_user: bool

    @property
    def digest(self) -> str:
        return launch_digest(self.argv, self.cwd, self.env.applied)

    def describe(self) -> str:
        lines = [
            f"  command: {_shell_words(self.argv)}"
            + ("   (yours, after --)" if self.argv_from_user else "   (from the bundle)"),
            f"  in:      {_inert(self.cwd)}"
            + ("   (yours)" if self.cwd_from_user else "   (from the bundle)"),
        ]
        for name, value in self.env.applied.items():
            lines.append(f"  env:     {_inert(name)}={_inert(value)}")
        for name, why in self.env.withheld.items():
            lines.append(f"  not applied: {_inert(name)} ({why})")
        return "\n".join(lines)


def require_consent(plan: LaunchPlan, *, trust: bool, say: Any = None) -> str:
    """Return how the launch was consented to, or raise ReplayNotApproved (exit 97)."""
    say = say or _to_stderr
    if trust:
        say("symtrace: replaying (--trust):\n" + plan.describe())
        return "trusted"
    if (plan.argv_from_user and plan.cwd_from_user) or is_approved(plan.digest):
        unusual = {n: why for n, why in plan.env.withheld.items() if why not in (ENDPOINT, OWN)}
        if unusual:
            say("symtrace: note: the bundle's environment, in part not applied:\n" + "\n".join(
                f"  not applied: {_inert(n)} ({why})" for n, why in unusual.items()))
        return "yours" if plan.argv_from_user and plan.cwd_from_user else "approved"
    say("symtrace: this bundle asks to run, on this machine:\n" + plan.describe())
    if _interactive():
        sys.stderr.write("symtrace: run it? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer in ("y", "yes"):
            approve(plan.digest, plan.argv, plan.cwd, "confirmed")
            return "confirmed"
    raise ReplayNotApproved(
        "not run: this command was not recorded or approved by you on this machine. Check it "
        "above, then confirm at a terminal, pass --trust (scripts, CI), or replay against your "
        "own checkout: symtrace replay BUNDLE -- python your_program.py")


def _to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _inert(text: str) -> str:
    """Control characters shown escaped: a bundle's text must not drive the terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _shell_words(argv: Sequence[str]) -> str:
    import shlex

    return _inert(shlex.join(str(a) for a in argv))
