"""The runtime configuration c: interpreter, platform and package versions.

Recorded in every bundle. At replay a different version is a SymtraceWarning and is repeated
in any divergence report, because a new SDK or framework version is a common reason for a
request to change shape.
"""

from __future__ import annotations

import functools
import os
import re
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
    # Read once per process: the versions of packages a process already imported do not change.
    out = {"python": _python()}
    installed = distributions()
    for name in TRACKED_PACKAGES:
        found = installed.get(_normalize(name))
        version = found and _metadata_field(found, "Version")
        if version:
            out[name] = version
    return out


# -- installed distributions, read as importlib.metadata's path finder reads them --------------
# importlib.metadata costs a fifth of a second a run here (its import, then a Distribution
# object per installed package, dedupe, e-mail parsing). What symtrace needs, a few versions
# and one entry-point group, is a directory listing per sys.path entry and a file or two.
def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def distributions() -> dict[str, str]:
    """Normalized project name -> its `*.dist-info`/`*.egg-info` path, the first on sys.path
    winning, as importlib.metadata resolves a name."""
    out: dict[str, str] = {}
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:
            continue
        for child in children:
            stem, _, suffix = child.lower().rpartition(".")
            if suffix in ("dist-info", "egg-info"):
                out.setdefault(_normalize(stem.partition("-")[0]), os.path.join(entry, child))
    return out


def _read(info: str, *names: str) -> str | None:
    for name in names:  # an .egg-info may be the PKG-INFO file itself ("")
        try:
            with open(os.path.join(info, name) if name else info, encoding="utf-8") as file:
                return file.read()
        except (OSError, UnicodeDecodeError):
            continue
    return None


def _metadata_field(info: str, field: str) -> str | None:
    for line in (_read(info, "METADATA", "PKG-INFO", "") or "").splitlines():
        if not line:  # the headers end at the first blank line
            break
        key, _, value = line.partition(":")
        if key == field:
            return value.strip()
    return None


def entry_points(group: str) -> list[tuple[str, str]]:
    """(name, value) of every entry point in *group*, distribution by distribution."""
    out = []
    for info in distributions().values():
        section = None
        for raw in (_read(info, "entry_points.txt") or "").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
            elif section == group:
                name, _, value = line.partition("=")
                out.append((name.strip(), value.strip()))
    return out


def _python() -> str:
    import platform  # here: the instrumented child asks only when it replays

    return platform.python_version()


def runtime_config() -> dict[str, object]:
    return {
        "python": _python(),
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
