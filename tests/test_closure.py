"""A step's code as files (pipeline/project/closure.py): the walker against an oracle, data files, tools.

The walker reads syntax trees; tests/closure_oracle.py reads compiled bytecode and answers the
by-name imports by importing for real. They must agree on the closure of every module the
doit tasks start from. Data files: every file under pipeline/ that is not Python is read by
some module the walker sees reading it. Tools: every module that starts a program declares
the programs it runs. Each rule is also shown to fail on a planted defect.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.project import closure
from tests.closure_oracle import oracle_closure
from tests.projects import ROOT

STEPS = ("export", "check", "split", "petri", "codegen", "execute", "compare", "evidence")
# Files under pipeline/ that no code of the package reads, with the reason.
NOT_READ = {
    "pipeline/codegen/nvdla/loadable.fbs": "the loadable's schema as a document: writer.py and reader.py spell its "
                                           "tables by hand, tests/codegen check them against flatc's reading of it",
}
# Modules that start programs without declaring TOOLS, with the reason.
UNDECLARED = {
    "pipeline.toolchain.process": "the bounded runner: it runs the program its caller names, which the caller declares",
    "pipeline.execute.nvdla.server": "runs the NVDLA emulator a user built outside the repository (its path comes from "
                                     "the environment); issue 35 owns the module",
}
ROOTS = tuple(f"pipeline.{step}.tasks" for step in STEPS) + ("pipeline.project.tasking",)


@pytest.mark.parametrize("root", ROOTS)
def test_the_walker_and_the_oracle_find_the_same_modules(root: str) -> None:
    walked = set(closure.closure([root], root=None).modules)
    assert walked == set(oracle_closure(root)), (sorted(walked - oracle_closure(root)),
                                                 sorted(oracle_closure(root) - walked))


def test_every_module_of_the_package_is_walked_without_a_file_use_it_cannot_name() -> None:
    everything = closure.closure(closure.module_names(), root=None)
    assert set(everything.modules) == set(closure.module_names())
    assert everything.missing == ()
    unresolved = {name: facts.unresolved for name in closure.module_names()
                  if (facts := closure.read_facts(name, closure.module_file(name))).unresolved}   # type: ignore[arg-type]
    assert unresolved == {}, "a `__file__` use that names no file: spell the path from it or declare DATA_FILES"


def _data_files(package: Path) -> set[str]:
    return {p.relative_to(package.parent).as_posix() for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


def unread_data_files() -> list[str]:
    """The non-Python files of the package that no module is seen reading (and NOT_READ does not explain)."""
    read = {p.relative_to(ROOT).as_posix() for p in closure.closure(closure.module_names(), root=None).data}
    return sorted(_data_files(closure.PACKAGE_DIR) - read - set(NOT_READ))


def test_every_data_file_is_read_by_a_module_that_says_so() -> None:
    assert unread_data_files() == []
    assert all((ROOT / path).is_file() for path in NOT_READ)
    grammar = closure.closure(["pipeline.nnef.parser"], root=None)
    assert closure.PACKAGE_DIR / "nnef" / "grammar.lark" in grammar.data
    runtime = closure.closure(["pipeline.codegen.c"], root=None)
    assert {p.name for p in runtime.data} >= {"nnef_runtime.h", "nnef_runtime.c", "nnef_main.c"}


def _scratch_package(tmp_path: Path) -> Path:
    shutil.copytree(closure.PACKAGE_DIR, tmp_path / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _in_copy(project: Path, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_data_file_read_in_a_way_the_walker_cannot_see_or_gone_is_caught(tmp_path: Path) -> None:
    project = _scratch_package(tmp_path)
    parser = project / "pipeline" / "nnef" / "parser.py"
    text = parser.read_text(encoding="utf-8")
    parser.write_text(text.replace('Path(__file__).with_name("grammar.lark")',
                                   'Path(str(__file__)[:-len("parser.py")] + "grammar.lark")'), encoding="utf-8")
    catalogue = project / "pipeline" / "nnef" / "catalogue.py"
    (project / "pipeline" / "nnef" / "stdlib.nnef").unlink()
    code = ("from pipeline.project import closure as c; every = c.closure(c.module_names(), root=None); "
            "print(sorted(p.name for p in every.data)); print(every.missing); "
            "print({n: f.unresolved for n in c.module_names() if (f := c.read_facts(n, c.module_file(n))).unresolved})")
    data, missing, unresolved = _in_copy(project, code).splitlines()
    assert "grammar.lark" not in data                     # the planted read is not seen as data ...
    assert "pipeline.nnef.parser" in unresolved          # ... but as a `__file__` use naming no file
    assert "nnef/stdlib.nnef" in missing                 # a data file gone: named as missing
    assert catalogue.is_file()


def test_declared_data_files_count_and_a_missing_one_is_named(tmp_path: Path) -> None:
    project = _scratch_package(tmp_path)
    module = project / "pipeline" / "nnef" / "printer.py"
    module.write_text(module.read_text(encoding="utf-8") + '\nDATA_FILES = ("grammar.lark", "absent.txt")\n',
                      encoding="utf-8")
    code = ("from pipeline.project import closure as c; r = c.closure(['pipeline.nnef.printer'], root=None); "
            "print(sorted(p.name for p in r.data)); print(r.missing)")
    data, missing = _in_copy(project, code).splitlines()
    assert "grammar.lark" in data and "nnef/absent.txt" in missing


def _starts_programs(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "subprocess" \
                and node.attr in ("run", "Popen", "call", "check_call", "check_output"):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in ("system", "popen", "execv", "execvp", "spawnv"):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "process" \
                and node.attr in ("run", "text"):
            return True   # pipeline/toolchain/process.py, the bounded runner
    return False


def modules_starting_programs_without_tools(package: Path) -> list[str]:
    missing = []
    for name in closure.module_names():
        file = package.parent.joinpath(*name.split(".")).with_suffix(".py")
        if not file.is_file():
            file = package.parent.joinpath(*name.split("."), "__init__.py")
        tree = ast.parse(file.read_text(encoding="utf-8"))
        declared = any(isinstance(n, (ast.Assign, ast.AnnAssign)) and "TOOLS" in ast.unparse(n).split("=")[0]
                       for n in tree.body)
        if _starts_programs(tree) and not declared and name not in UNDECLARED:
            missing.append(name)
    return missing


def test_every_module_that_starts_a_program_declares_the_programs_it_runs(tmp_path: Path) -> None:
    assert modules_starting_programs_without_tools(closure.PACKAGE_DIR) == []
    project = _scratch_package(tmp_path)
    dot = project / "pipeline" / "petri" / "dot.py"
    dot.write_text("\n".join(line for line in dot.read_text(encoding="utf-8").splitlines()
                             if not line.startswith("TOOLS")), encoding="utf-8")
    assert modules_starting_programs_without_tools(project / "pipeline") == ["pipeline.petri.dot"]


def test_the_walker_reads_tools_as_the_modules_hold_them() -> None:
    for name in closure.module_names():
        facts = closure.read_facts(name, closure.module_file(name))   # type: ignore[arg-type]
        if facts.tools:
            assert tuple(importlib.import_module(name).TOOLS) == facts.tools, name
    codegen = closure.closure(["pipeline.codegen.tasks"], root=None)
    assert {"${CC:-gcc}", "aarch64-linux-gnu-gcc", "nvcc", "cuobjdump", "@platforms"} <= set(codegen.tools)
    assert {"numpy", "lark"} <= set(codegen.libraries)
    check = closure.closure(["pipeline.check.tasks"], root=None)
    assert "nvcc" not in check.tools and "onnxruntime" not in check.libraries


def test_function_level_relative_lazy_and_by_name_imports(tmp_path: Path) -> None:
    package = tmp_path / "pipeline" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "pipeline" / "__init__.py").write_text("")
    (package / "__init__.py").write_text('_PUBLIC = {"thing": "pipeline.pkg.lazy"}\n'
                                         "def __getattr__(name):\n    import importlib\n"
                                         "    return getattr(importlib.import_module(_PUBLIC[name]), name)\n")
    (package / "a.py").write_text("def f():\n    from . import b\n    from .c import x\n"
                                  "    from pipeline.pkg import thing\n")
    (package / "table.py").write_text('NAMES = ("pipeline.pkg.named",)\n')
    (package / "loader.py").write_text("import importlib\nfrom pipeline.pkg import table\n"
                                       "def load():\n    for n in table.NAMES:\n        importlib.import_module(n)\n")
    for name in ("b", "c", "lazy", "named", "unused"):
        (package / f"{name}.py").write_text("x = 1\nthing = 2\n")
    code = ("from pipeline.project import closure as c; "
            "print(sorted(c.closure(['pipeline.pkg.a'], root=None).modules)); "
            "print(sorted(c.closure(['pipeline.pkg.loader'], root=None).modules))")
    (tmp_path / "pipeline" / "project").mkdir()
    (tmp_path / "pipeline" / "project" / "__init__.py").write_text("")
    shutil.copy(closure.PACKAGE_DIR / "project" / "closure.py", tmp_path / "pipeline" / "project" / "closure.py")
    first, second = _in_copy(tmp_path, code).splitlines()
    assert eval(first) == ["pipeline", "pipeline.pkg", "pipeline.pkg.a", "pipeline.pkg.b", "pipeline.pkg.c",
                           "pipeline.pkg.lazy"]
    assert eval(second) == ["pipeline", "pipeline.pkg", "pipeline.pkg.loader", "pipeline.pkg.named",
                            "pipeline.pkg.table"]
