"""The structure a newcomer reads, checked from the imports themselves.

Every module under core/ and workbench/ is parsed (nothing is imported), and its imports are
resolved to the project's modules. The rules:

- core imports neither Textual nor workbench;
- no module that core.engine imports imports core.engine back (services are handed their
  collaborators; they never reach back into the facade), not even for type checking;
- the app (workbench.app) does not import the other front ends (cli, mcp, bench);
- the app's panes, widgets and screens do not import the app module they live in;
- there is no import cycle between modules. Imports under ``if TYPE_CHECKING:`` do not run,
  so they are left out of the cycle check (but not out of the rules above).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "workbench")


@dataclass
class ModuleImports:
    """What one module imports: at run time, and under ``if TYPE_CHECKING:``."""

    runtime: set[str] = field(default_factory=set)
    typing_only: set[str] = field(default_factory=set)

    @property
    def every(self) -> set[str]:
        return self.runtime | self.typing_only


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """The dotted names an import statement may bind: ``from a.b import c`` names both
    ``a.b`` and ``a.b.c`` (c may be a module or a name in a.b)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    return {origin} | {f"{origin}.{alias.name}" for alias in node.names}


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def read_imports(path: Path, module: str) -> ModuleImports:
    """Every import in a module, wherever it sits (functions included), split by whether it
    runs: a function-level import runs when called, so it counts as run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = ModuleImports()
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            target = found.typing_only if typing_only else found.runtime
            target.update(_imported_names(node, module, is_package))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return found


def project_imports(root: Path = ROOT) -> dict[str, ModuleImports]:
    """Module name -> its imports, restricted to the project's own modules (plus the first
    segment of third-party ones, so "imports textual" can be asked)."""
    paths = {module_name(p, root): p
             for package in PACKAGES for p in (root / package).rglob("*.py")}
    graph: dict[str, ModuleImports] = {}
    for module, path in paths.items():
        raw = read_imports(path, module)

        def keep(names: set[str], module: str = module) -> set[str]:
            own = {n for n in names if n in paths and n != module}
            outside = {n.split(".")[0] for n in names if n.split(".")[0] not in PACKAGES}
            return own | outside

        graph[module] = ModuleImports(keep(raw.runtime), keep(raw.typing_only))
    return graph


def import_cycles(edges: dict[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


GRAPH = project_imports()


def test_core_imports_neither_textual_nor_workbench() -> None:
    offenders = {m: sorted(i.every & {"textual", "workbench"})
                 for m, i in GRAPH.items() if _within(m, "core")}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_nothing_the_engine_composes_imports_the_engine_back() -> None:
    composed = {m for m in GRAPH["core.engine"].every if m in GRAPH}
    back = sorted(m for m in composed if "core.engine" in GRAPH[m].every and m != "core")
    assert back == [], f"imported by core.engine and importing it back: {back}"


def test_the_app_does_not_import_the_other_front_ends() -> None:
    others = ("workbench.cli", "workbench.mcp", "workbench.bench")
    offenders = {m: sorted(t for t in i.every if any(_within(t, o) for o in others))
                 for m, i in GRAPH.items() if _within(m, "workbench.app")}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_panes_widgets_and_screens_do_not_import_the_app_module() -> None:
    app_modules = {"workbench.app", "workbench.app.app"}
    inner = ("workbench.app.panes", "workbench.app.widgets", "workbench.app.screens")
    offenders = {m: sorted(i.every & app_modules)
                 for m, i in GRAPH.items() if any(_within(m, p) for p in inner)}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_no_import_cycles() -> None:
    runtime = {m: {t for t in i.runtime if t in GRAPH} for m, i in GRAPH.items()}
    assert import_cycles(runtime) == []


def test_the_cycle_finder_finds_a_cycle_it_is_shown() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e2"], "e2": ["e"]}
    assert sorted(import_cycles(edges)) == [["a", "b", "c"], ["e", "e2"]]
    assert import_cycles({"a": ["b"], "b": ["c"], "c": []}) == []


def test_the_reader_resolves_relative_and_typing_only_imports(tmp_path: Path) -> None:
    package = tmp_path / "core" / "things"
    package.mkdir(parents=True)
    (tmp_path / "workbench").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from . import one\n")
    (package / "one.py").write_text(
        "from typing import TYPE_CHECKING\nfrom .two import thing\n"
        "if TYPE_CHECKING:\n    from core.engine import Engine\n")
    (package / "two.py").write_text("def f():\n    from core.things import one\n")
    (tmp_path / "core" / "engine.py").write_text("import textual\n")
    graph = project_imports(tmp_path)
    assert graph["core.things"].runtime == {"core.things.one"}
    assert graph["core.things.one"].runtime >= {"core.things.two"}
    assert "core.engine" in graph["core.things.one"].typing_only
    assert "core.things.one" in graph["core.things.two"].runtime
    assert graph["core.engine"].runtime == {"textual"}
    runtime = {m: {t for t in i.runtime if t in graph} for m, i in graph.items()}
    assert import_cycles(runtime) == [["core.things", "core.things.one", "core.things.two"]]
