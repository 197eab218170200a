"""The runtime configuration c: interpreter, platform and package versions.

Recorded in every bundle. At replay a different version is a SymtraceWarning and is repeated
in any divergence report, because a new SDK or framework version is a common reason for a
request to change shape.
"""

from __future__ import annotations

import functools
import platform
import sys

TRACKED_PACKAGES = (
    "symtrace",
    "openai",
    "httpx",
    "ag2",
    "crewai",
    "autogen-agentchat",
    "autogen-ext",
    "autogen-core",
)


def versions() -> dict[str, str]:
    """Installed versions of the tracked packages (a copy: callers put it in manifests)."""
    return dict(_versions())


@functools.cache
def _versions() -> dict[str, str]:
    # Read once per process: each lookup scans the installed distributions' metadata (ms
    # per session), and the versions of packages a process already imported do not change.
    # importlib.metadata is imported here, not at the top: the instrumented child imports this
    # module (version warnings) and asks only when it replays.
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def runtime_config() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": sys.platform,
        "versions": versions(),
    }


def version_warnings(recorded: dict[str, str]) -> list[str]:
    """One line per package whose installed version differs from the recorded one."""
    now = versions()
    out = []
    for name in sorted(set(recorded) | set(now)):
        if name == "symtrace":
            continue
        before, after = recorded.get(name), now.get(name)
        if before != after and before is not None:
            out.append(f"{name} was {before} when recorded, is {after or 'not installed'} now")
    return out
