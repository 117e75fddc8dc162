"""The packages depend downward along the data path, never back up, and never in a loop; inside
every package its files and sub-packages import each other without a loop too, and codegen's item
emitters (c/, cuda/, nvdla/) share only through codegen/shared/ (docs/codegen.md "Layout").

Every `import` and `from ... import` in pipeline/, at module level or inside a function,
is read with `ast`; each module has a level (below), and no module may import a module of
a higher level. The generators and their validators are kept apart: no module under
pipeline/codegen imports pipeline.semantics except the deliberate sharing named in
docs/codegen.md ("What the generator shares with the reference").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"

# Below every step, in layers: a foundation module imports only its own layer and the layers
# before it, never a step. The diagnostics; files and their guards; the numerics and the compiler
# drivers; the project folder and its doit run; the ledger (checks, records, requirements); the
# command line's rendering.
FOUNDATION_LAYERS: list[set[str]] = [
    {"pipeline", "pipeline.diagnostics"},
    {"pipeline.files"},
    {"pipeline.numerics", "pipeline.toolchain"},
    {"pipeline.project"},
    {"pipeline.ledger"},
    {"pipeline.terminal"},
]
FOUNDATION = set().union(*FOUNDATION_LAYERS)
# At most this many modules directly in pipeline/ (issue 31): the rest is grouped by idea.
TOP_LEVEL_MODULES = 8
# The data path: format, semantics, then the steps in chain order, then the evidence step and the CLI.
DATA_PATH = ["nnef", "semantics", "export", "check", "split", "petri", "codegen", "execute", "compare", "evidence", "operations",
             "cli", "__main__"]
# Deliberate sharing between a generator and the reference (docs/codegen.md names each and its check).
SHARED_WITH_REFERENCE = {
    ("pipeline.codegen.c.programs", "pipeline.semantics.transcendental"),
    ("pipeline.codegen.c.mathcheck", "pipeline.semantics.transcendental"),
    ("pipeline.codegen.cuda.programs", "pipeline.semantics.transcendental"),
    ("pipeline.codegen.shared.programs", "pipeline.semantics.transcendental"),
}
# Inside every package, its files and sub-packages import each other without a loop (imports inside
# functions counted). The loops that exist today outside codegen/ are listed with their package, each
# as the set of its package's children it runs through; a loop that is broken must leave the list
# (the list only shrinks), any other fails.
KNOWN_CYCLES: dict[str, set[frozenset[str]]] = {
    "pipeline.nnef": {frozenset({"fragments", "lowering"})},        # lowering/invocations.py asks fragments.py
    "pipeline.toolchain": {frozenset({"runners", "ssh"})},           # runners.session opens an SshSession
}
# codegen/'s item emitters (docs/codegen.md "Layout"): none imports another or the deployment program
# above them; what they share lives in codegen/shared, which imports none of them nor the program.
EMITTERS = ("c", "cuda", "nvdla")
SHARED_PIECE = "shared"
PROGRAM = "program"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def level(module: str) -> int:
    """A negative number for the foundation (its layer, counted back from -1), else the index
    of the module's package on the data path."""
    for prefix in sorted(FOUNDATION, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + ".") and prefix != "pipeline":
            return next(index for index, layer in enumerate(FOUNDATION_LAYERS) if prefix in layer) - len(FOUNDATION_LAYERS)
    parts = module.split(".")
    if len(parts) < 2:
        return -1
    if parts[1] not in DATA_PATH:
        raise AssertionError(f"{module}: not on the data path and not a foundation module; add it to the test")
    return DATA_PATH.index(parts[1])


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import of pipeline modules in `path`, functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name == "pipeline" or name.startswith("pipeline."):
                found.append((node.lineno, _existing_module(name)))
    return found


def _existing_module(name: str) -> str:
    """`name` itself if it is a module or package, else its parent (`from m import attr`)."""
    parts = name.split(".")
    while len(parts) > 1:
        base = PACKAGE.parent.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return "pipeline"


SOURCES = sorted(PACKAGE.rglob("*.py"))


def violations(path: Path, module: str) -> list[str]:
    """Every import of `path` (as module `module`) against the data path."""
    own = level(module)
    wrong = []
    for line, imported in imports(path):
        theirs = level(imported)
        if theirs > own or (own < 0 and theirs >= 0):
            what = "a later step" if theirs >= 0 else "a later foundation layer"
            wrong.append(f"{path}:{line}: {module} imports {imported} ({what})")
        if module.startswith("pipeline.codegen") and imported.startswith("pipeline.semantics") \
                and (module, imported) not in SHARED_WITH_REFERENCE:
            wrong.append(f"{path}:{line}: generator module {module} imports the reference {imported}")
    return wrong


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(p) for p in SOURCES])
def test_imports_go_down_the_data_path(path: Path) -> None:
    wrong = violations(path, module_name(path))
    assert not wrong, "\n".join(wrong)


def test_no_loop_between_packages() -> None:
    """The package graph is acyclic (implied by the levels; stated for the reader)."""
    edges: dict[str, set[str]] = {}
    for path in SOURCES:
        source = ".".join(module_name(path).split(".")[:2])
        for _, imported in imports(path):
            target = ".".join(imported.split(".")[:2])
            if target != source:
                edges.setdefault(source, set()).add(target)
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in done:
            return
        assert node not in visiting, "import loop: " + " -> ".join(trail + [node])
        visiting.add(node)
        for nxt in sorted(edges.get(node, ())):
            visit(nxt, trail + [node])
        visiting.discard(node)
        done.add(node)

    for node in sorted(edges):
        visit(node, [])


Edge = tuple[str, str, str]   # (importing module, imported module, "file:line")


def edges_of(sources: dict[str, Path]) -> list[Edge]:
    """Every import between pipeline modules in `sources` (module name -> file), functions included."""
    root = PACKAGE.parent
    return [(module, imported, f"{path.relative_to(root) if path.is_relative_to(root) else path}:{line}")
            for module, path in sources.items() for line, imported in imports(path)]


def children_graph(package: str, edges: list[Edge]) -> dict[str, dict[str, list[str]]]:
    """child -> imported child -> where, between the direct children (files, sub-packages) of `package`."""
    prefix = package + "."
    graph: dict[str, dict[str, list[str]]] = {}
    for source, target, where in edges:
        if source.startswith(prefix) and target.startswith(prefix):
            a, b = source[len(prefix):].split(".")[0], target[len(prefix):].split(".")[0]
            if a != b:
                graph.setdefault(a, {}).setdefault(b, []).append(f"{where} ({source} -> {target})")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def describe(component: frozenset[str], graph: dict[str, dict[str, list[str]]]) -> str:
    return "; ".join(f"{a} -> {b}: {graph[a][b][0]}" for a in sorted(component) for b in sorted(graph.get(a, ()))
                     if b in component)


MODULES = {module_name(path): path for path in SOURCES}
EDGES = edges_of(MODULES)
PACKAGES = sorted(module for module, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package: str) -> None:
    graph = children_graph(package, EDGES)
    found = cycles(graph)
    known = KNOWN_CYCLES.get(package, set())
    new = sorted(found - known, key=sorted)
    assert not new, "\n".join(f"import loop in {package} through {sorted(c)}: {describe(c, graph)}" for c in new)
    assert not known - found, f"{package}: {sorted(map(sorted, known - found))} is no loop any more: take it out of KNOWN_CYCLES"


def codegen_part(module: str) -> str | None:
    """The child of pipeline.codegen `module` belongs to (a sub-package or a file), or None outside codegen."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["pipeline", "codegen"] else None


def emitter_violations(edges: list[Edge]) -> list[str]:
    """Imports from one item emitter into another or into the program, and from the shared piece into either."""
    wrong = []
    for source, target, where in edges:
        mine, theirs = codegen_part(source), codegen_part(target)
        if mine in EMITTERS and theirs != mine and theirs in EMITTERS + (PROGRAM,):
            wrong.append(f"{where}: item emitter {source} imports {target} (share through codegen/{SHARED_PIECE})")
        if mine == SHARED_PIECE and theirs in EMITTERS + (PROGRAM,):
            wrong.append(f"{where}: the shared piece {source} imports {target}")
    return list(dict.fromkeys(wrong))   # one line per import statement, not per name


def test_the_item_emitters_share_only_through_the_shared_piece() -> None:
    assert not emitter_violations(EDGES), "\n".join(emitter_violations(EDGES))


def test_the_cycle_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """The tests can fail: a loop closed by an import inside a function is found between two sub-packages
    and between two files, and an item emitter importing another is named."""
    late = tmp_path / "late.py"
    late.write_text("def f():\n    from pipeline.codegen.cuda.linked import linked_item\n", encoding="utf-8")
    early = tmp_path / "early.py"
    early.write_text("from pipeline.codegen.c.item import ItemEmitter\n", encoding="utf-8")
    planted = edges_of({"pipeline.codegen.c.late": late, "pipeline.codegen.cuda.early": early})
    graph = children_graph("pipeline.codegen", EDGES + planted)
    assert frozenset({"c", "cuda"}) in cycles(graph)
    assert "late.py:2 (pipeline.codegen.c.late -> pipeline.codegen.cuda.linked)" in describe(frozenset({"c", "cuda"}), graph)
    assert len(emitter_violations(planted)) == 2
    again = tmp_path / "again.py"   # the loop cuda/generate.py and cuda/linked.py had
    again.write_text("def tail():\n    from pipeline.codegen.cuda.linked import linked_tail\n", encoding="utf-8")
    graph = children_graph("pipeline.codegen.cuda", EDGES + edges_of({"pipeline.codegen.cuda.emitter": again}))
    assert cycles(graph) == {frozenset({"emitter", "linked"})}
    assert cycles({"x": {"y": ["1"]}, "y": {"z": ["2"]}, "z": {"x": ["3"]}, "w": {"x": ["4"]}}) == {frozenset("xyz")}
    assert cycles({"x": {"y": ["1"]}, "y": {"z": ["2"]}, "w": {"x": ["3"]}}) == set()


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """The test can fail: imports inside functions against the data path are caught."""
    source = tmp_path / "module.py"
    source.write_text("import pipeline.files.atomic\n\ndef f():\n    from pipeline.compare import numeric\n"
                      "    from pipeline.semantics.windows import resolve\n", encoding="utf-8")
    found = violations(source, "pipeline.codegen.c.kernels.conv")
    assert len(found) == 2 and "pipeline.compare.numeric (a later step)" in found[0] and "reference" in found[1]
    assert violations(source, "pipeline.evidence.matrix") == []
    assert violations(source, "pipeline.numerics.metrics")  # the foundation imports no step


def test_the_foundation_layers_go_one_way(tmp_path: Path) -> None:
    """Inside the foundation too: the files layer imports neither the project folder nor the ledger."""
    source = tmp_path / "module.py"
    source.write_text("from pipeline.diagnostics import PipelineError\nfrom pipeline.ledger.checks import Verdict\n"
                      "from pipeline.project.layout import STEPS\n", encoding="utf-8")
    found = violations(source, "pipeline.files.atomic")
    assert len(found) == 2 and all("a later foundation layer" in f for f in found)
    assert violations(source, "pipeline.terminal") == []
    assert len(violations(source, "pipeline.project.tasking")) == 1  # the ledger is above the project folder


def test_the_top_level_is_grouped_by_idea() -> None:
    """At most TOP_LEVEL_MODULES modules directly in pipeline/; every one is on the data path or the foundation."""
    top = sorted(path.stem for path in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, top
    for name in top:
        level("pipeline" if name == "__init__" else f"pipeline.{name}")  # raises for a module in neither
