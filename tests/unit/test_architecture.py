"""The import direction of docs/architecture.md, enforced.

Every module of `symtrace/` and `adapters/` is parsed with `ast`; every import in it — at
module level and inside functions — is checked against the layer table below: a module may
import its own layer and the layers its row allows, nothing above. Runtime imports must not
form a cycle. `if TYPE_CHECKING:` imports never run; they follow the same table, except the
pairs named in TYPE_CHECKING_EXCEPTIONS.

The table is the authority; docs/architecture.md draws it and lists every module of
symtrace/ once in its module map (a module missing there, or listed twice, fails the test). A
new package under symtrace/ must be placed in a layer here (an unplaced module fails the test).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# module or package prefix -> layer (longest prefix wins; "symtrace" alone is the facade)
LAYER_OF = {
    "symtrace._version": "foundation",
    "symtrace.errors": "foundation",
    "symtrace.patching": "foundation",
    "symtrace.lazy_exports": "foundation",
    "symtrace.model": "model",
    "symtrace.bundle": "bundle",
    "symtrace.stub": "devservers",
    "symtrace.localllm": "devservers",
    "symtrace.session": "session",
    "symtrace.boundaries": "boundaries",
    "symtrace.record": "record",
    "symtrace.replay": "replay",
    "symtrace.frameworks": "frameworks",
    "symtrace.options": "options",
    "symtrace": "facade",
    "symtrace.api": "facade",
    "symtrace.process": "process",
    "symtrace.diagnosis": "diagnosis",
    "symtrace.export": "export",
    "symtrace.testing": "testing",
    "symtrace.viewer": "viewer",
    "symtrace.cli": "cli",
    "symtrace.__main__": "cli",
    "symtrace_ag2": "adapters",
    "symtrace_ag2v1": "adapters",
    "symtrace_crewai": "adapters",
    "symtrace_autogen_agentchat": "adapters",
}

_CORE = ("boundaries", "session", "bundle", "model", "foundation")
_RUN = ("record", "replay", "frameworks", *_CORE)
_ENTRY = ("options", *_RUN)  # what the entry points (facade, process) build on
_ANALYSIS = ("diagnosis", "process", "facade", "devservers", *_ENTRY)

# layer -> the other layers it may import (its own layer is always allowed)
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "foundation": (),
    "model": ("foundation",),
    "bundle": ("model", "foundation"),
    "devservers": ("model", "foundation"),
    "session": ("bundle", "model", "foundation"),
    "boundaries": ("session", "bundle", "model", "foundation"),
    # the recorder and the replayer are sessions the boundaries call: neither imports them
    "record": ("session", "bundle", "model", "foundation"),
    "replay": ("session", "bundle", "model", "foundation"),
    "frameworks": _CORE,
    # adapters see the contract (symtrace.frameworks.contract re-exports what they need from
    # session and boundaries) and the pure layers: never the facade, which pulls the replayer
    "adapters": ("frameworks", "model", "foundation"),
    "options": _RUN,
    "facade": _ENTRY,
    "process": _ENTRY,
    "diagnosis": ("process", "facade", *_ENTRY),
    "export": _ANALYSIS,
    "testing": _ANALYSIS,
    "viewer": ("export", "testing", *_ANALYSIS),
    "cli": ("viewer", "export", "testing", *_ANALYSIS, "adapters"),
}

# (importer, imported) pairs allowed under `if TYPE_CHECKING:` only
TYPE_CHECKING_EXCEPTIONS = {
    # the error tree is the bottom layer, yet ReplayDivergence carries a DivergenceReport;
    # the annotation needs the name, the runtime never imports it
    ("symtrace.errors", "symtrace.model.divergence"),
}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    type_checking: bool


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for symtrace/ and the adapter packages under adapters/."""
    found: dict[str, Path] = {}
    for base, pattern in ((root, "symtrace/**/*.py"), (root / "adapters", "symtrace_*/**/*.py")):
        for path in base.glob(pattern):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Every import of a known module in *path*, wherever it sits in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, guarded: bool) -> Iterator[Import]:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, True)
            for child in node.orelse:
                yield from visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _known(name, alias.name, node.lineno, guarded, known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                target = submodule if submodule in known else base
                yield from _known(name, target, node.lineno, guarded, known)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, guarded)

    yield from visit(tree, False)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _known(source: str, target: str, line: int, guarded: bool, known: set[str]
           ) -> Iterator[Import]:
    # `import symtrace.model.events` names a module; a dotted name past a module (an
    # attribute) is cut back to the module that defines it
    while target and target not in known:
        target = target.rpartition(".")[0]
    if target:
        yield Import(source, target, line, guarded)


def layer_of(name: str) -> str | None:
    # "symtrace" names the package __init__ only, not everything below it
    best = max((p for p in LAYER_OF
                if name == p or (p != "symtrace" and name.startswith(p + "."))),
               key=len, default=None)
    return LAYER_OF[best] if best is not None else None


def _adapter_package(name: str) -> str | None:
    return name.split(".")[0] if layer_of(name) == "adapters" else None


def violations(root: Path) -> list[str]:
    """Upward imports, unplaced modules and runtime import cycles, as readable lines."""
    found = modules(root)
    known = set(found)
    problems = [f"{name}: not placed in a layer (add it to LAYER_OF)"
                for name in sorted(found) if layer_of(name) is None]
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name in sorted(found):
        for imp in imports(name, found[name], known):
            if imp.target == name:
                continue
            if not imp.type_checking:
                graph[name].add(imp.target)
            problem = _check(imp)
            if problem:
                problems.append(problem)
    problems.extend(f"import cycle among: {', '.join(cycle)}" for cycle in cycles(graph))
    return problems


def _check(imp: Import) -> str | None:
    source, target = layer_of(imp.source), layer_of(imp.target)
    if source is None or target is None:
        return None  # reported once as unplaced
    if imp.type_checking and (imp.source, imp.target) in TYPE_CHECKING_EXCEPTIONS:
        return None
    if source == "adapters" and target == "adapters":
        if _adapter_package(imp.source) == _adapter_package(imp.target):
            return None
        return f"{imp.source}:{imp.line} imports another adapter, {imp.target}"
    if source == target or target in MAY_IMPORT[source]:
        return None
    how = "under TYPE_CHECKING " if imp.type_checking else ""
    return (f"{imp.source}:{imp.line} ({source}) imports {imp.target} ({target}) {how}"
            f"— {source} may import only {', '.join(MAY_IMPORT[source]) or 'nothing'}")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_package_imports_only_downward_without_cycles():
    problems = violations(REPO)
    assert not problems, "\n".join(["layering violations (docs/architecture.md):", *problems])


def test_every_layer_in_the_table_is_known():
    assert set(LAYER_OF.values()) == set(MAY_IMPORT)
    for allowed in MAY_IMPORT.values():
        assert set(allowed) <= set(MAY_IMPORT)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def toy(tmp_path: Path) -> dict[str, str]:
    """A miniature symtrace that follows the rules."""
    return {
        "symtrace/__init__.py": "from symtrace.api import record\n",
        "symtrace/api.py": "from symtrace.replay.replayer import Replayer\n",
        "symtrace/errors.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from symtrace.model.divergence import Report\n",
        "symtrace/model/__init__.py": "",
        "symtrace/model/divergence.py": "from symtrace.errors import Error\n",
        "symtrace/replay/__init__.py": "",
        "symtrace/replay/replayer.py": "from symtrace.model import divergence\n",
        "adapters/symtrace_crewai/__init__.py": "from symtrace.model.divergence import Report\n",
    }


def test_a_tree_that_follows_the_rules_passes(tmp_path: Path, toy: dict[str, str]):
    assert violations(_tree(tmp_path, toy)) == []


def test_an_upward_import_inside_a_function_fails(tmp_path: Path, toy: dict[str, str]):
    toy["symtrace/model/divergence.py"] += "def f():\n    from symtrace.replay import replayer\n"
    problems = violations(_tree(tmp_path, toy))
    assert problems and "symtrace.model.divergence:3 (model) imports symtrace.replay.replayer" \
        in problems[0]


def test_an_adapter_importing_the_facade_fails(tmp_path: Path, toy: dict[str, str]):
    toy["adapters/symtrace_crewai/__init__.py"] = "from symtrace.api import record\n"
    problems = violations(_tree(tmp_path, toy))
    assert any("symtrace_crewai:1 (adapters) imports symtrace.api (facade)" in p
               for p in problems)


def test_a_type_checking_import_outside_the_exceptions_fails(tmp_path: Path,
                                                             toy: dict[str, str]):
    toy["symtrace/model/divergence.py"] += (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from symtrace.api import x\n")
    problems = violations(_tree(tmp_path, toy))
    assert any("under TYPE_CHECKING" in p for p in problems)


def test_a_cycle_within_one_layer_fails(tmp_path: Path, toy: dict[str, str]):
    toy["symtrace/model/a.py"] = "from symtrace.model import b\n"
    toy["symtrace/model/b.py"] = "def f():\n    import symtrace.model.a\n"
    problems = violations(_tree(tmp_path, toy))
    assert problems == ["import cycle among: symtrace.model.a, symtrace.model.b"]


def test_an_unplaced_package_fails(tmp_path: Path, toy: dict[str, str]):
    toy["symtrace/misc/__init__.py"] = ""
    assert violations(_tree(tmp_path, toy)) == [
        "symtrace.misc: not placed in a layer (add it to LAYER_OF)"
    ]


ARCHITECTURE_DOC = REPO / "docs" / "architecture.md"


def unmapped(root: Path, doc: str) -> list[str]:
    """Modules of symtrace/ the doc's module map does not list exactly once (as a table row
    `| `symtrace/<path>` |`), and rows naming no module."""
    files = {p.relative_to(root).as_posix() for p in (root / "symtrace").rglob("*.py")}
    rows = [line.split("`")[1] for line in doc.splitlines()
            if line.startswith("| `symtrace/") and line.split("`")[1].endswith(".py")]
    problems = [f"{f}: not in the module map of docs/architecture.md"
                for f in sorted(files - set(rows))]
    problems += [f"{r}: listed {rows.count(r)} times" for r in sorted(set(rows))
                 if rows.count(r) > 1]
    problems += [f"{r}: in the module map, but no such module" for r in sorted(set(rows) - files)]
    return problems


def test_every_module_is_in_the_architecture_map_once():
    problems = unmapped(REPO, ARCHITECTURE_DOC.read_text())
    assert not problems, "\n".join(problems)


def test_a_module_missing_from_the_map_fails(tmp_path: Path, toy: dict[str, str]):
    root = _tree(tmp_path, toy)
    doc = ("| `symtrace/api.py` | facade |\n| `symtrace/api.py` | again |\n"
           "| `symtrace/gone.py` | x |\n")
    problems = unmapped(root, doc)
    assert "symtrace/errors.py: not in the module map of docs/architecture.md" in problems
    assert "symtrace/api.py: listed 2 times" in problems
    assert "symtrace/gone.py: in the module map, but no such module" in problems
