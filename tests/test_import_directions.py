"""The packages depend downward along the data path, never back up, and never in a loop.

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
}


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
