"""The README's compatibility matrix is generated from docs/compatibility.toml and checked
against the repository, so it cannot drift from what CI installs and what the tests prove.

    python tests/unit/test_compatibility_matrix.py --write   # regenerate the README block
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "compatibility.toml"
README = ROOT / "README.md"
BEGIN = "<!-- compatibility-matrix: generated from docs/compatibility.toml, do not edit -->"
END = "<!-- /compatibility-matrix -->"
CONSTRAINTS = {"main": ROOT / "constraints.txt", "next": ROOT / "constraints-next.txt"}
ENVIRONMENTS = {"main": "main (`.venv`, openai 2)", "next": "next (`nox -s next`, openai 3)"}
COLUMNS = ("framework (module)", "tested version", "install", "CI environment", "recorded",
           "replayed (strict: 0 requests)", "refused")


def rows() -> list[dict[str, Any]]:
    return tomllib.loads(DATA.read_text())["row"]


def render(data: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in data:
        install = f"`symtrace[{row['extra']}]`" if row.get("extra") else "`symtrace`"
        adapter = f"adapter `{row['adapter']}`: {row['supports']}" if row["adapter"] else (
            row["supports"])
        cells = (
            f"{row['framework']} (`{row['module']}`)",
            f"{row['distribution']} {row['version']} ({adapter})",
            install,
            ENVIRONMENTS[row["environment"]],
            row["recorded"],
            row["replayed"],
            row["refused"],
        )
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def readme_block(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip()


@cache
def pins(environment: str) -> dict[str, str]:
    out = {}
    for line in CONSTRAINTS[environment].read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[_normal(name)] = version.strip()
    return out


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


@cache
def functions_defined(path: str) -> frozenset[str]:
    """Test functions a module defines, or imports to run them on its own stack."""
    tree = ast.parse((ROOT / path).read_text())
    defined = {node.name for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    imported = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    return frozenset(defined | {name for name in imported if name.startswith("test_")})


def test_the_readme_shows_the_generated_matrix() -> None:
    assert readme_block(README.read_text()) == render(rows()), (
        "README matrix differs from docs/compatibility.toml: run "
        "`python tests/unit/test_compatibility_matrix.py --write`")


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["framework"])
def test_the_version_is_the_one_ci_installs(row: dict[str, Any]) -> None:
    assert pins(row["environment"]).get(_normal(row["distribution"])) == row["version"]
    if row.get("extra"):
        wanted = f"{row['distribution']}=={row['version']}"
        assert any(re.sub(r"\[[^]]*\]", "", spec) == wanted
                   for spec in extras()[row["extra"]]), (row["extra"], wanted)


@pytest.mark.parametrize("row", [r for r in rows() if r["adapter"]],
                         ids=lambda row: row["framework"])
def test_the_adapter_supports_the_version_it_is_listed_with(row: dict[str, Any]) -> None:
    entry = {ep.name: ep for ep in metadata.entry_points(group="symtrace.adapters")}
    adapter = entry[row["adapter"]].load()
    assert adapter.module == row["module"]
    assert adapter.requires == row["supports"]
    assert adapter.supported(row["version"])


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["framework"])
def test_every_claim_names_tests_that_exist_in_its_environment(row: dict[str, Any]) -> None:
    assert row["tests"], "a row without tests is hand-written prose"
    for node in row["tests"]:
        path, _, name = node.partition("::")
        assert (ROOT / path).is_file(), node
        assert name in functions_defined(path), node
        assert path.startswith("tests/next_stack/") == (row["environment"] == "next"), node


def write() -> None:
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + "\n" + render(rows()) + "\n" + text[end:])


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/unit/test_compatibility_matrix.py --write")
    write()
