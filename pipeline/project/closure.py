"""A module's code as files: its import closure, read from the source without importing it.

doit re-runs a step when a file its task depends on changes, so a step's task must depend on
every file its code is made of: the modules its tasks module imports, at module level or
inside a function, through every package reached, and the data files that code reads. This
module computes that set, so that no list of sources is kept by hand (docs/conventions.md
"A step's code and tools").

What counts as an edge from a module:

- every `import` and `from ... import` statement anywhere in it (module level, functions,
  classes, `try` blocks), absolute or relative; `from P import x` where `x` is a sub-module
  takes that module; importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py`, which
  count too;
- `from P import x` where P defines `__getattr__` (PEP 562) and a module-level dict maps `"x"`
  to a module name: that module (the lazy public names of `pipeline.export`);
- in a module that imports by name (calls `importlib.import_module` or `__import__`): every
  string constant in it that is exactly the dotted name of a module of the package (its own
  tables: `KERNEL_MODULES`, cli.py's command table), and every module named by a module-level
  tuple of such names that it refers to in another module (`checks.CHECK_MODULES`).

Data files: a path built from `__file__` that ends in a literal name
(`Path(__file__).with_name("grammar.lark")`, `Path(__file__).parent / "runtime"`,
`Path(__file__).resolve().parents[1] / "schemas"`, also through a module-level name bound to
such a path), a folder standing for every file under it; and the globs of a module-level
`DATA_FILES` tuple (relative to the module's folder) for a file read in a way not spelled so.
Tools: the names of a module-level `TOOLS` tuple (the programs the module runs;
pipeline.ledger.tools resolves them). Libraries: the top-level names of the modules imported
that are neither the package's nor the standard library's.

The facts read from each file are kept in `.doit-closure.json` beside doit's state, keyed by
the file's size, modification and change time and inode, so a no-op `doit verify` parses no
file; a change of this module makes the whole cache stale.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator

PACKAGE_DIR = Path(__file__).resolve().parents[1]   # pipeline/
PACKAGE = PACKAGE_DIR.name
CACHE_FILE = ".doit-closure.json"
FACTS_VERSION = 1
DATA_NAME = "DATA_FILES"
TOOLS_NAME = "TOOLS"
# Names under which a module reaches files beside it other than through `__file__`: a use of one
# of them must be declared in DATA_FILES (tests/test_closure.py holds every module to it).
RESOURCE_NAMES = ("importlib.resources", "pkgutil.get_data", "pkg_resources")


@dataclass(frozen=True)
class Facts:
    """What one source file says about its dependencies (module docstring), read without importing it."""

    imports: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (absolute module, names imported from it)
    dynamic: bool = False             # whether it imports modules by name
    names: tuple[str, ...] = ()       # string constants that look like dotted module names of the package
    tables: tuple[tuple[str, tuple[str, ...]], ...] = ()     # module-level NAME = (module names...)
    refs: tuple[tuple[str, str], ...] = ()                   # (module, NAME) it refers to: alias.NAME, imported NAME
    lazy: tuple[tuple[str, str], ...] = ()   # PEP 562 public name -> module
    data: tuple[str, ...] = ()        # package-relative paths or globs of data files and folders
    tools: tuple[str, ...] = ()
    unresolved: tuple[int, ...] = ()  # lines of a `__file__` use that names no file the walker can see

    def to_json(self) -> dict[str, Any]:
        return {"imports": [[m, list(n)] for m, n in self.imports], "dynamic": self.dynamic, "names": list(self.names),
                "tables": [[t, list(n)] for t, n in self.tables], "refs": [list(r) for r in self.refs],
                "lazy": [list(p) for p in self.lazy], "data": list(self.data), "tools": list(self.tools),
                "unresolved": list(self.unresolved)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Facts":
        return cls(tuple((str(m), tuple(str(x) for x in n)) for m, n in data["imports"]), bool(data["dynamic"]),
                   tuple(str(x) for x in data["names"]),
                   tuple((str(t), tuple(str(x) for x in n)) for t, n in data["tables"]),
                   tuple((str(a), str(b)) for a, b in data["refs"]), tuple((str(a), str(b)) for a, b in data["lazy"]),
                   tuple(str(x) for x in data["data"]), tuple(str(x) for x in data["tools"]),
                   tuple(int(x) for x in data["unresolved"]))


@dataclass(frozen=True)
class Closure:
    """The files a module's code is made of, and what it runs and imports from outside the package."""

    modules: tuple[str, ...]          # dotted names, sorted
    files: tuple[Path, ...]           # the modules' source files and the data files, sorted
    data: tuple[Path, ...]            # the data files alone
    missing: tuple[str, ...]          # declared data paths that name no file (a test fails on any)
    libraries: tuple[str, ...]        # top-level names of third-party modules imported
    tools: tuple[str, ...]            # TOOLS of the modules, sorted


# ------------------------------------------------------------------------------------ the package's modules

@dataclass
class _Index:
    modules: dict[str, Path] = field(default_factory=dict)   # dotted name -> file
    packages: set[str] = field(default_factory=set)


_INDEX: list[_Index] = []


def _index() -> _Index:
    """Every module of the package by dotted name (walked once per process)."""
    if not _INDEX:
        index = _Index()
        for dirpath, dirnames, filenames in os.walk(PACKAGE_DIR):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            if "__init__.py" not in filenames:
                dirnames[:] = []
                continue
            parts = (PACKAGE, *Path(dirpath).relative_to(PACKAGE_DIR).parts)
            index.packages.add(".".join(parts))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    dotted = ".".join(parts) if name == "__init__.py" else ".".join((*parts, name[:-3]))
                    index.modules[dotted] = Path(dirpath) / name
        _INDEX.append(index)
    return _INDEX[0]


def module_names() -> list[str]:
    """Every module of the package, sorted."""
    return sorted(_index().modules)


def module_file(name: str) -> Path | None:
    return _index().modules.get(name)


def module_of_file(path: Path) -> str | None:
    """The dotted name of the package's module at `path`, or None."""
    wanted = path.resolve()
    for name, file in _index().modules.items():
        if file == wanted:
            return name
    return None


# ------------------------------------------------------------------------------------ reading one file

class _Reader(ast.NodeVisitor):
    """Collects the Facts of one module (its dotted name and whether it is a package's __init__)."""

    def __init__(self, name: str, file: Path, is_package: bool) -> None:
        self.name, self.file, self.is_package = name, file, is_package
        self.imports: list[tuple[str, tuple[str, ...]]] = []
        self.names: set[str] = set()
        self.data: set[str] = set()
        self.paths: dict[str, Path] = {}          # module-level names bound to a file-based path
        self.understood: set[int] = set()         # ids of `__file__` nodes inside an evaluated path
        self.file_nodes: list[ast.Name] = []
        self.lazy_strings: set[str] = set()       # the module names of a PEP 562 table (edges only when named)
        self.aliases: dict[str, str] = {}         # local name -> the dotted name it was imported as
        self.imported: dict[str, tuple[str, str]] = {}   # local name -> (module, name) of `from module import name`
        self.refs: set[tuple[str, str]] = set()
        self.dynamic = False

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports.append((alias.name, ()))
            if alias.asname:
                self.aliases[alias.asname] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.name if self.is_package else self.name.rpartition(".")[0]
            parts = package.split(".")
            if node.level - 1 > len(parts) - 1:
                return   # beyond the top-level package: an error Python reports itself
            anchor = ".".join(parts[:len(parts) - (node.level - 1)])
            base = f"{anchor}.{base}" if base else anchor
        self.imports.append((base, tuple(a.name for a in node.names if a.name != "*")))
        for alias in node.names:
            # `from P import m` binds a module or a name of P: both kept, the closure tells them apart
            self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
            self.imported[alias.asname or alias.name] = (base, alias.name)

    def visit_Call(self, node: ast.Call) -> None:
        called = _dotted(node.func)
        if called in ("importlib.import_module", "import_module", "__import__"):
            self.dynamic = True
        elif called.endswith("find_spec") and node.args and _module_like(_literal(node.args[0])):
            # finding a module imports its parent packages (not the module itself)
            self.imports.append((str(_literal(node.args[0])).rpartition(".")[0], ()))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            self.refs.add((self.aliases[node.value.id], node.attr))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _module_like(node.value):
            self.names.add(node.value)

    # data files
    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__file__":
            self.file_nodes.append(node)
        elif node.id in self.imported:
            self.refs.add(self.imported[node.id])

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)):
            path = self._evaluate(node)
            if path is not None:
                return   # a maximal path expression: its parts are read
        super().generic_visit(node)

    def _evaluate(self, node: ast.expr) -> Path | None:
        """The path `node` names when it is a data file's (ends in a literal name), recorded; else None."""
        value = self._path(node)
        if value is None:
            return None
        path, named = value
        if named:
            self._record(path)
        return path

    def _record(self, path: Path) -> None:
        try:
            self.data.add(path.resolve().relative_to(PACKAGE_DIR).as_posix())
        except ValueError:
            self.data.add(path.resolve().as_posix())

    def _mark(self, node: ast.AST) -> None:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id == "__file__":
                self.understood.add(id(child))

    def _path(self, node: ast.expr) -> tuple[Path, bool] | None:
        """(path, whether its last step is a literal name) of a path expression built from __file__."""
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                self._mark(node)
                return self.file, False
            if node.id in self.paths:
                return self.paths[node.id], False
            return None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, (ast.Name, ast.Attribute)) and _dotted(func) in ("Path", "pathlib.Path", "PurePath",
                                                                               "os.path.abspath", "os.path.realpath"):
                if len(node.args) == 1 and not node.keywords:
                    inner = self._path(node.args[0])
                    if inner is not None:
                        self._mark(node)
                    return inner
                return None
            if _dotted(func) == "os.path.dirname" and len(node.args) == 1:
                inner = self._path(node.args[0])
                return None if inner is None else (inner[0].parent, False)
            if _dotted(func) == "os.path.join" and node.args:
                inner = self._path(node.args[0])
                rest = [_literal(a) for a in node.args[1:]]
                if inner is None or not rest or any(r is None for r in rest):
                    return None
                return inner[0].joinpath(*rest), True   # type: ignore[arg-type]
            if isinstance(func, ast.Attribute):
                inner = self._path(func.value)
                if inner is None:
                    return None
                if func.attr in ("resolve", "absolute") and not node.args:
                    return inner
                if func.attr == "with_name" and len(node.args) == 1 and _literal(node.args[0]) is not None:
                    return inner[0].with_name(_literal(node.args[0])), True   # type: ignore[arg-type]
                if func.attr == "joinpath" and node.args and all(_literal(a) is not None for a in node.args):
                    return inner[0].joinpath(*[_literal(a) for a in node.args]), True   # type: ignore[misc]
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self._path(node.value)
            return None if inner is None else (inner[0].parent, False)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            inner = self._path(node.value.value)
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if inner is None or not isinstance(index, int):
                return None
            return inner[0].parents[index], False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            inner = self._path(node.left)
            name = _literal(node.right)
            if inner is None or name is None:
                return None
            return inner[0] / name, True
        return None

    def read(self, tree: ast.Module) -> Facts:
        # module-level names bound to a path built from __file__ (e.g. HERE = Path(__file__).parent)
        lazy: dict[str, str] = {}
        getattr_defined = any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)
        tools: tuple[str, ...] = ()
        tables: dict[str, tuple[str, ...]] = {}
        for statement in tree.body:
            target, value = _assignment(statement)
            if target is None or value is None:
                continue
            bound = self._path(value)
            if bound is not None:
                self.paths[target] = bound[0]
            if target == DATA_NAME:
                for glob in _strings(value, DATA_NAME, self.file):
                    self._record_glob(glob)
            if target == TOOLS_NAME:
                tools = tuple(_strings(value, TOOLS_NAME, self.file))
            if isinstance(value, (ast.Tuple, ast.List)) and value.elts and all(
                    _module_like(_literal(e)) for e in value.elts):
                tables[target] = tuple(_literal(e) for e in value.elts)   # type: ignore[misc]
            if getattr_defined and isinstance(value, ast.Dict):
                pairs = [(_literal(k), _literal(v)) for k, v in zip(value.keys, value.values) if k is not None]
                if pairs and all(k and v and v.startswith(PACKAGE + ".") for k, v in pairs):
                    lazy.update({k: v for k, v in pairs})   # type: ignore[misc]
                    self._skip_strings(value)
        self.visit(tree)
        unresolved = sorted({n.lineno for n in self.file_nodes if id(n) not in self.understood})
        names = sorted(self.names - self.lazy_strings) if self.dynamic else []
        refs = sorted(self.refs) if self.dynamic else []
        return Facts(tuple(self.imports), self.dynamic, tuple(names), tuple(sorted(tables.items())), tuple(refs),
                     tuple(sorted(lazy.items())), tuple(sorted(self.data)), tools, tuple(unresolved))

    def _skip_strings(self, node: ast.AST) -> None:
        self.lazy_strings |= {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}

    def _record_glob(self, glob: str) -> None:
        base = self.file.parent
        try:
            self.data.add(PurePosixPath(base.relative_to(PACKAGE_DIR).as_posix(), glob).as_posix())
        except ValueError:
            self.data.add((base / glob).as_posix())


def _module_like(text: str | None) -> bool:
    return bool(text) and text.startswith(PACKAGE + ".") and all(p.isidentifier() for p in text.split("."))   # type: ignore[union-attr]


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _assignment(statement: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id, statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id, statement.value
    return None, None


def _strings(node: ast.expr, what: str, file: Path) -> list[str]:
    """The strings of a literal tuple or list; ValueError for anything else (a declaration is a literal)."""
    if isinstance(node, (ast.Tuple, ast.List)) and all(_literal(e) is not None for e in node.elts):
        return [_literal(e) for e in node.elts]   # type: ignore[misc]
    raise ValueError(f"{file}:{node.lineno}: {what} must be a literal tuple of strings")


def read_facts(name: str, file: Path) -> Facts:
    """The Facts of the module `name` whose source is `file`."""
    tree = ast.parse(file.read_bytes(), filename=str(file))
    return _Reader(name, file, file.name == "__init__.py").read(tree)


# ------------------------------------------------------------------------------------ the cache

def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


_CACHE_KEY: list[str] = []


def _cache_key() -> str:
    """What makes every cached fact stale: this module's own source and the package's location."""
    if not _CACHE_KEY:
        digest = hashlib.sha256(f"{FACTS_VERSION}\0{PACKAGE_DIR}\0".encode())
        digest.update(Path(__file__).read_bytes())
        _CACHE_KEY.append(digest.hexdigest())
    return _CACHE_KEY[0]


class _Store:
    """The facts of every file read in this process, backed by the cache file of the project root."""

    def __init__(self) -> None:
        self.facts: dict[str, Facts] = {}
        self.cache_path: Path | None = None
        self.cached: dict[str, Any] = {}
        self.changed = False

    def use_root(self, root: Path | str | None) -> None:
        path = None if root is None else Path(root) / CACHE_FILE
        if path == self.cache_path:
            return
        self.cache_path, self.cached, self.changed = path, {}, False
        if path is not None:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                document = {}
            if isinstance(document, dict) and document.get("key") == _cache_key() and isinstance(document.get("files"), dict):
                self.cached = document["files"]

    def get(self, name: str, file: Path) -> Facts:
        known = self.facts.get(name)
        if known is not None:
            return known
        key = _stat_key(file)
        entry = self.cached.get(name)
        facts = None
        if isinstance(entry, dict) and entry.get("stat") == key:
            try:
                facts = Facts.from_json(entry["facts"])
            except (KeyError, TypeError, ValueError):
                facts = None
        if facts is None:
            facts = read_facts(name, file)
            self.cached[name] = {"stat": key, "facts": facts.to_json()}
            self.changed = True
        self.facts[name] = facts
        return facts

    def save(self) -> None:
        """Best effort: a cache that cannot be written costs time, never correctness."""
        if self.cache_path is None or not self.changed:
            return
        tmp = self.cache_path.with_name(f"{self.cache_path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"key": _cache_key(), "files": self.cached}, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.cache_path)
            self.changed = False
        except OSError:
            tmp.unlink(missing_ok=True)


_STORE = _Store()
_CLOSURES: dict[tuple[str, ...], Closure] = {}


# ------------------------------------------------------------------------------------ the closure

def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def _expand(pattern: str) -> tuple[list[Path], bool]:
    """The files a data path names (a folder: every file under it; a glob: its matches) and whether any."""
    base = Path(pattern) if Path(pattern).is_absolute() else PACKAGE_DIR / pattern
    if any(c in pattern for c in "*?["):
        anchor = Path(pattern).anchor
        found = sorted(p for p in (Path(anchor).glob(pattern[len(anchor):]) if anchor else PACKAGE_DIR.glob(pattern))
                       if p.is_file())
        return found, bool(found)
    if base.is_dir():
        found = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        return found, True
    return ([base], True) if base.is_file() else ([], False)


@dataclass(frozen=True)
class _Edges:
    """What one module adds to a closure: the modules it reaches directly (its parent packages
    included), the third-party libraries it imports, its data paths and tools."""

    modules: tuple[str, ...]
    libraries: tuple[str, ...]
    data: tuple[str, ...]
    tools: tuple[str, ...]


_EDGES: dict[str, _Edges] = {}


def _edges(name: str) -> _Edges:
    """The edges of module `name` (module docstring), resolved once per process."""
    known = _EDGES.get(name)
    if known is not None:
        return known
    index = _index()
    file = index.modules.get(name)
    if file is None:
        raise ValueError(f"{name} is not a module of {PACKAGE}")
    facts = _STORE.get(name, file)
    reached: set[str] = set()
    libraries: set[str] = set()

    def reach(target: str) -> None:
        reached.update(c for c in (*_parents(target), target) if c in index.modules)

    reach(name)
    for module, imported in facts.imports:
        top = module.split(".")[0]
        if top != PACKAGE:
            if top and top not in sys.stdlib_module_names:
                libraries.add(top)
            continue
        reach(module)
        lazy = dict(_STORE.get(module, index.modules[module]).lazy) if module in index.modules else {}
        for item in imported:
            if f"{module}.{item}" in index.modules:
                reach(f"{module}.{item}")
            elif item in lazy:
                reach(lazy[item])
    for named in facts.names:
        if named in index.modules:
            reach(named)
    for module, table in facts.refs:
        if module in index.modules:
            for named in dict(_STORE.get(module, index.modules[module]).tables).get(table, ()):
                if named in index.modules:
                    reach(named)
    reached.discard(name)
    result = _Edges(tuple(sorted(reached)), tuple(sorted(libraries)), facts.data, facts.tools)
    _EDGES[name] = result
    return result


def closure(roots: Iterable[str], root: Path | str | None = ".") -> Closure:
    """The import closure of the modules `roots` (dotted names of the package), its data files,
    third-party libraries and tools. `root`: the project folder whose cache file is used (None: none)."""
    key = tuple(sorted(set(roots)))
    known = _CLOSURES.get(key)
    if known is not None:
        return known
    _STORE.use_root(root)
    index = _index()
    for name in key:
        if name not in index.modules:
            raise ValueError(f"{name} is not a module of {PACKAGE}")
    seen: set[str] = set()
    todo = [m for name in key for m in (*_parents(name), name) if m in index.modules]
    seen.update(todo)
    data: set[str] = set()
    libraries: set[str] = set()
    tools: set[str] = set()
    while todo:
        edges = _edges(todo.pop())
        data.update(edges.data)
        tools.update(edges.tools)
        libraries.update(edges.libraries)
        for module in edges.modules:
            if module not in seen:
                seen.add(module)
                todo.append(module)
    _STORE.save()
    files: set[Path] = {index.modules[m] for m in seen}
    found: set[Path] = set()
    missing = []
    for pattern in sorted(data):
        paths, exists = _expand(pattern)
        found.update(paths)
        if not exists:
            missing.append(pattern)
    result = Closure(tuple(sorted(seen)), tuple(sorted(files | found)), tuple(sorted(found)), tuple(missing),
                     tuple(sorted(libraries)), tuple(sorted(tools)))
    _CLOSURES[key] = result
    return result


def project_paths(files: Iterable[Path], root: Path | str = ".") -> list[str]:
    """`files` as doit file_dep strings: relative to the project folder `root` when inside it, else absolute."""
    base = str(Path(root).resolve())
    prefix = base.rstrip("/") + "/"
    return sorted(str(p)[len(prefix):] if str(p).startswith(prefix) else Path(p).as_posix() for p in files)


def forget() -> None:
    """Drop what this process computed (tests that edit sources in a scratch copy)."""
    global _STORE
    _INDEX.clear()
    _CLOSURES.clear()
    _EDGES.clear()
    _STORE = _Store()
