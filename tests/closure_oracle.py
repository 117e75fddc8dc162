"""An import closure computed a second way, to judge pipeline/project/closure.py by.

The walker reads each module's syntax tree; this oracle reads the bytecode Python compiled
(the standard library's `modulefinder`, which scans the import instructions of a module and of
every function and class body in it) and answers the by-name imports by importing the modules
for real and reading their values:

- `from P import x` where `x` is not a sub-module: `getattr(P, x)` (PEP 562 `__getattr__`
  included) names the module that defines `x`;
- a module whose code calls `import_module` or `__import__` (other than in a PEP 562
  `__getattr__`): every string constant of its code that names a module, and every global it
  reads whose value (in any module found) is a tuple, list or dict of module names;
- a module whose code calls `find_spec` on a module name: the parent packages of that name.

Nothing here shares code with the walker; both follow the rules of docs/conventions.md.
"""

from __future__ import annotations

import dis
import importlib
import modulefinder
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from tests.projects import ROOT

PACKAGE = "pipeline"


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


@lru_cache(maxsize=None)
def _compiled(path: str) -> types.CodeType:
    return compile(Path(path).read_bytes(), path, "exec")


@lru_cache(maxsize=None)
def _assigned(path: str) -> frozenset[str]:
    """The names a module's own top-level code binds."""
    return frozenset(i.argval for i in dis.get_instructions(_compiled(path)) if i.opname in ("STORE_NAME", "STORE_GLOBAL"))


def _module_names(value: Any) -> list[str]:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return [v for v in items if isinstance(v, str) and v.startswith(PACKAGE + ".")]


def _real(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a module that cannot be imported here adds no edge
        return None


class _Finder(modulefinder.ModuleFinder):
    def __init__(self) -> None:
        super().__init__(path=[str(ROOT)])
        self.by_name: list[tuple[Any, set[str]]] = []

    def ensure_fromlist(self, m: Any, fromlist: Any, recursive: int = 0) -> None:
        for sub in fromlist:
            try:
                super().ensure_fromlist(m, [sub], recursive)
            except ImportError:
                # not a sub-module: the name the package gives (PEP 562 __getattr__ included) tells its module
                package = _real(m.__name__) if m.__name__.startswith(PACKAGE) else None
                module = getattr(getattr(package, sub, None), "__module__", None)
                if not (isinstance(module, str) and module.startswith(PACKAGE)):
                    raise
                if module != m.__name__:
                    self._hook(module, m)

    def load_module(self, fqname: str, fp: Any, pathname: str, file_info: Any) -> Any:
        if file_info[2] != modulefinder._PY_SOURCE:   # type: ignore[attr-defined]
            return super().load_module(fqname, fp, pathname, file_info)
        code = _compiled(pathname)
        m = self.add_module(fqname)
        m.__file__ = pathname
        m.__code__ = code
        self.scan_code(code, m)
        return m

    def _hook(self, name: str, caller: Any) -> None:
        try:
            self.import_hook(name, caller)
        except ImportError:
            pass

    def scan_code(self, co: types.CodeType, m: Any) -> None:
        super().scan_code(co, m)
        if co is not getattr(m, "__code__", None):
            return   # once per module, over all its code objects
        codes = list(_codes(co))
        importing = [c for c in codes if "import_module" in c.co_names or "__import__" in c.co_names]
        strings = [k for c in codes for k in c.co_consts if isinstance(k, str) and k.startswith(PACKAGE + ".")]
        # a module that imports by name only in a PEP 562 __getattr__ exports names lazily: import_hook's
        # getattr answers those where they are imported
        if importing and any(c.co_name != "__getattr__" for c in importing):
            for name in strings:
                self._hook(name, m)
            read = {i.argval for c in codes for i in dis.get_instructions(c)
                    if i.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD")}
            self.by_name.append((m, read))
        if any("find_spec" in c.co_names for c in codes):
            for name in strings:
                self._hook(name.rpartition(".")[0], m)

    def tables(self) -> None:
        """The by-name imports through globals of other modules, until no module is added."""
        done: set[tuple[str, str]] = set()
        before = -1
        while before != len(self.modules):
            before = len(self.modules)
            for m, read in list(self.by_name):
                for owner in [o for n, o in list(self.modules.items()) if n.startswith(PACKAGE) and o.__file__]:
                    if (m.__name__, owner.__name__) in done:
                        continue
                    done.add((m.__name__, owner.__name__))
                    names = read & _assigned(owner.__file__)
                    value = _real(owner.__name__) if names else None
                    for name in names:
                        for module in _module_names(getattr(value, name, None)):
                            self._hook(module, m)


@lru_cache(maxsize=None)
def oracle_closure(module: str) -> frozenset[str]:
    """The modules of the package that the code of `module` imports, by the oracle's rules."""
    finder = _Finder()
    finder.import_hook(module)
    finder.tables()
    return frozenset(n for n in finder.modules if n == PACKAGE or n.startswith(PACKAGE + "."))


def module_path(name: str) -> Path:
    """The source file of the package's module `name` under the repository."""
    base = ROOT.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
