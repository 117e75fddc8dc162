"""What a tool is, in one string: a library's distribution and version, a program's version and digest.

A step's verdicts depend on the programs it runs (gcc, the cross gcc, qemu, nvcc, valgrind,
...) and the libraries its code imports (numpy, onnxruntime, ...): when one changes, the step
must run again. A program's identity is its version line and the SHA-256 of its binary (for a
gcc-like driver, of the compiler proper it runs too: `-print-prog-name=cc1`), so a rebuilt
package of the same version counts as a change; a library's is its installed distribution and
version (`importlib.metadata`); the interpreter's its implementation and version.

A no-op `doit verify` must stay cheap: identities are computed once per process, and across
runs they are kept in `.doit-tools.json` beside doit's state, a program's keyed by the path,
size, modification and change time and inode of its binary, the libraries' by the names and
times of the installed distributions' metadata folders. No absolute path, host or time enters
an identity (records hold them).

A name is what a module declares in `TOOLS` (pipeline/project/closure.py): a command on the
PATH (`nvcc`), a command from an environment variable with a default (`${CC:-gcc}`), `python`,
or `@host`, the build host's architecture and widest vector ISA (the host platform's lanes and
flags come from it); a library is named by its top-level import name (`yaml`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

TOOLS: tuple[str, ...] = ()   # the programs it runs for verdicts: none (it asks programs their versions)

CACHE_FILE = ".doit-tools.json"
CACHE_VERSION = 1
NOT_INSTALLED = "not installed"
PYTHON = "python"
HOST = "@host"
# Commands whose version is not printed by `--version`.
VERSION_OPTIONS = {"dot": "-V", "ssh": "-V"}
# gcc-like drivers: the compiler proper they run is part of their identity.
DRIVER = re.compile(r"^(.*-)?(gcc|cc|g\+\+|c\+\+)(-[0-9.]+)?$")
ENVIRONMENT = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]+)\}$")
VERSION_TIMEOUT_S = 30
VERSION_BYTES = 1 << 20   # what a version query may print
VERSION = re.compile(r"\d+\.\d+")


def command_of(name: str) -> str:
    """The command a tool name stands for now (`${CC:-gcc}`: $CC when set, else gcc)."""
    match = ENVIRONMENT.match(name)
    if match:
        return os.environ.get(match.group(1)) or match.group(2)
    return name


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _first_line(argv: list[str]) -> str:
    """The version line a program prints (bounded: pipeline/toolchain/process.py), or 'version unknown'."""
    from pipeline.diagnostics import PipelineError
    from pipeline.toolchain import process

    try:
        done = process.run(argv, timeout=VERSION_TIMEOUT_S, max_output=VERSION_BYTES, max_errors=VERSION_BYTES)
    except PipelineError:
        return "version unknown"
    for text in (done.out, done.err):
        lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
        if lines:   # the first line with a version number (nvcc names itself first), else the first
            return next((line for line in lines if VERSION.search(line)), lines[0])
    return "version unknown"


_VERSION: list[str] = []


def _cache_version() -> str:
    """CACHE_VERSION and the SHA-256 of this module's source: its code decides what an identity holds."""
    if not _VERSION:
        _VERSION.append(f"{CACHE_VERSION}-{hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}")
    return _VERSION[0]


class _Cache:
    """Identities computed in this process, backed by the cache file of the project root."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.programs: dict[str, Any] = {}
        self.libraries: dict[str, Any] = {}
        self.changed = False
        self.known: dict[str, str] = {}
        self.fingerprint = ""
        self.owners: Mapping[str, list[str]] | None = None

    def use_root(self, root: Path | str | None) -> None:
        """Use the cache file of the project folder `root` (None: none); a file written by another
        version of this module is ignored (what an identity holds may have changed)."""
        path = None if root is None else Path(root) / CACHE_FILE
        if path == self.path:
            return
        self.programs, self.libraries, self.changed, self.known, self.fingerprint = {}, {}, False, {}, ""
        self.owners = None
        self.path = path
        if path is None:
            return
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(document, dict) and document.get("version") == _cache_version():
            self.programs = document.get("programs") if isinstance(document.get("programs"), dict) else {}
            self.libraries = document.get("libraries") if isinstance(document.get("libraries"), dict) else {}

    def save(self) -> None:
        """Best effort: a cache that cannot be written costs time, never correctness."""
        if self.path is None or not self.changed:
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"version": _cache_version(), "programs": self.programs,
                                       "libraries": self.libraries}, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
            self.changed = False
        except OSError:
            tmp.unlink(missing_ok=True)

    def digest(self, path: Path, extra: str = "") -> tuple[str, dict[str, Any]]:
        """(sha256, cache entry) of the binary at `path` (resolved), from the cache when its stat is unchanged."""
        key = _stat_key(path)
        entry = self.programs.get(str(path))
        if not isinstance(entry, dict) or entry.get("stat") != key:
            entry = {"stat": key, "sha256": _sha256(path)}
            self.programs[str(path)] = entry
            self.changed = True
        return str(entry["sha256"]), entry


_CACHE = _Cache()


def _program(command: str) -> str:
    found = shutil.which(command)
    if found is None:
        return NOT_INSTALLED
    binary = Path(found).resolve()
    digest, entry = _CACHE.digest(binary)
    if "version" not in entry:
        option = VERSION_OPTIONS.get(Path(command).name, "--version")
        entry["version"] = _first_line([found, option])
        if DRIVER.match(Path(command).name):
            proper = "cc1plus" if "++" in Path(command).name else "cc1"
            said = _first_line([found, f"-print-prog-name={proper}"])
            entry["proper"] = said if os.path.isabs(said) else ""
        _CACHE.changed = True
    parts = [str(entry["version"]), f"sha256 {digest[:16]}"]
    proper_path = entry.get("proper") or ""
    if proper_path and os.path.isfile(proper_path):
        proper_digest, _ = _CACHE.digest(Path(proper_path).resolve())
        parts.append(f"{Path(proper_path).name} sha256 {proper_digest[:16]}")
    return "; ".join(parts)


def _distributions_fingerprint() -> str:
    """The installed distributions' metadata folders (names and times) on sys.path: changes on any install."""
    folders = {}
    for entry in sys.path:   # the same folders however Python was started ('' or the dodo folder first)
        folder = os.path.realpath(entry or ".")
        if folder in folders:
            continue
        try:
            with os.scandir(folder) as scan:
                folders[folder] = sorted((e.name, e.stat().st_mtime_ns) for e in scan
                                         if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    found = sorted((folder, names) for folder, names in folders.items() if names)
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()


def _libraries(names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    if not _CACHE.fingerprint:
        _CACHE.fingerprint = _distributions_fingerprint()
    fingerprint = _CACHE.fingerprint
    cached = _CACHE.libraries
    if cached.get("fingerprint") != fingerprint or not isinstance(cached.get("names"), dict):
        cached = {"fingerprint": fingerprint, "names": {}}
        _CACHE.libraries = cached
        _CACHE.changed = True
    table: dict[str, str] = cached["names"]
    wanted = [n for n in names if n not in table]
    if wanted:
        if _CACHE.owners is None:
            _CACHE.owners = metadata.packages_distributions()   # about 0.1 s: once per process at most
        owners = _CACHE.owners
        for name in wanted:
            dists = sorted(set(owners.get(name, ())), key=str.lower)
            versions = []
            for dist in dists:
                try:
                    versions.append(f"{dist} {metadata.version(dist)}")
                except metadata.PackageNotFoundError:
                    continue
            table[name] = ", ".join(versions) if versions else NOT_INSTALLED
        _CACHE.changed = True
    return {name: table[name] for name in names}


def identities(tools: Iterable[str], libraries: Iterable[str] = (), root: Path | str | None = ".") -> dict[str, str]:
    """Tool name -> identity for `tools` (TOOLS names, `python`) and `libraries` (top-level import names).

    `root`: the project folder whose cache file is used (None: none).
    """
    _CACHE.use_root(root)
    out: dict[str, str] = {}
    for name in sorted(set(tools)):
        if name == PYTHON:
            out[name] = f"{platform.python_implementation()} {platform.python_version()}"
            continue
        if name == HOST:
            from pipeline.toolchain.platforms import host_architecture, host_isa

            out[name] = f"{host_architecture()}, vector ISA {host_isa()}"
            continue
        command = command_of(name)
        key = f"{name}={command}" if command != name else name
        if key not in _CACHE.known:
            _CACHE.known[key] = _program(command)
        # the command by its name only (a $CC may be a path): the digest tells two binaries apart
        out[name] = f"{Path(command).name}: {_CACHE.known[key]}" if command != name else _CACHE.known[key]
    libs = sorted(set(libraries))
    for name, identity in _libraries(libs).items():
        out[name] = identity
    _CACHE.save()
    return dict(sorted(out.items()))


def forget() -> None:
    """Drop what this process computed (tests that change a tool between two checks)."""
    global _CACHE
    _CACHE = _Cache()
