"""What the steps' doit task modules share: a spec's deployments, doit's file check.

Task modules are imported to list tasks, so this module stays light (no step imported): a
no-op `doit verify` must not pay for onnx, lark, NumPy or jsonschema. The part of a
deployment spec that decides which tasks and targets exist (its *outline*) is therefore
kept in a cache beside doit's own state, keyed by the SHA-256 of the spec and of the code
that loads it (the import closure of this module, pipeline.project.closure); a spec or loader
that changes in any byte is loaded (and validated) again. The cache only shapes the task list
and names the programs of the spec's own platforms (`platform_tools`): every step loads and
validates the spec itself. A step's code as dependencies: pipeline.ledger.dependencies.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pipeline.diagnostics import Location, PipelineError
from pipeline.project.layout import MODELS_DIR, model_dir, model_names, refused_models

OUTLINE_CACHE = ".doit-outline.json"
OUTLINE_VERSION = 4
_MAX_SPEC_READ = 16 << 20   # above any spec the loader accepts (pipeline.project.deploy.MAX_SPEC_BYTES, configurable)


@dataclass(frozen=True)
class DeploymentOutline:
    """What the task list needs from one deployment: its items' targets and the item files split writes."""

    targets: tuple[str, ...]      # the target of each declared item, in the spec's order
    item_files: tuple[str, ...]   # the items split writes an NNEF file for, sorted
    rewritten: bool               # whether the deployment has rewrites (split writes rewritten.nnef)


def _outline_of_spec(path: Path) -> tuple[dict[str, DeploymentOutline], list[str]] | PipelineError:
    """The outline of the spec at `path` and the programs of its own platforms, or the first problem
    that makes it invalid."""
    from pipeline.project.deploy import DeployError, load_deploy

    try:
        spec = load_deploy(path)
    except DeployError as error:
        return PipelineError(error.code, error.message, error.location)
    tools = set()
    for platform in spec.platforms.values():
        tools.add(platform.cc())
        if platform.runner.kind == "emulator" and platform.runner.command:
            tools.add(platform.runner.command[0])
        if platform.runner.kind == "ssh":
            tools.add("ssh")
    outline = {}
    for name, deployment in spec.deployments.items():
        items = {deployment.default_item, *deployment.allocation}
        declared = {item.name for item in deployment.items}
        for rewrite in deployment.rewrites:
            if isinstance(rewrite, dict) and isinstance(rewrite.get("items"), list):
                # declared items only (names in the grammar): a target is also what `doit clean` deletes
                items.update(str(i) for i in rewrite["items"] if str(i) in declared)
        outline[name] = DeploymentOutline(tuple(item.target for item in deployment.items), tuple(sorted(items)),
                                          bool(deployment.rewrites))
    return outline, sorted(tools)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_LOADER_DIGEST: list[str] = []


def _loader_digest(root: Path | str = ".") -> str:
    """The SHA-256 of the code that loads a spec: this module's import closure (its data files included)."""
    if not _LOADER_DIGEST:
        from pipeline.project.closure import PACKAGE_DIR, closure

        digest = hashlib.sha256(str(OUTLINE_VERSION).encode())
        for path in closure([__name__], root=root).files:
            rel = path.relative_to(PACKAGE_DIR).as_posix() if path.is_relative_to(PACKAGE_DIR) else path.as_posix()
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
        _LOADER_DIGEST.append(digest.hexdigest())
    return _LOADER_DIGEST[0]


_READ: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def _read_cache(path: Path) -> dict[str, Any]:
    """The cache document at `path` when written for this loader ({} otherwise); read again only when the file changed."""
    try:
        st = path.stat()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        known = _READ.get(str(path))
        if known is not None and known[0] == key:
            return known[1]
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = document if isinstance(document, dict) and document.get("loader") == _loader_digest(path.parent) else {}
    _READ[str(path)] = (key, found)
    return found


def _write_cache(path: Path, document: dict[str, Any]) -> None:
    """Best effort: a cache that cannot be written costs time, never correctness."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _spec_problem(model: str, root: Path | str) -> tuple[Path, str | PipelineError]:
    """models/<m>/deploy.yaml and the SHA-256 of its bytes, or the problem that keeps it from being read."""
    spec_path = model_dir(model, root) / "deploy.yaml"
    where = Location.in_file(spec_path.as_posix())
    try:
        if not spec_path.exists():
            return spec_path, PipelineError("DEPLOY-E001", "no deploy.yaml", where)
        if not spec_path.is_file():
            return spec_path, PipelineError("DEPLOY-E012", "not a regular file", where)
        if spec_path.stat().st_size > _MAX_SPEC_READ:
            # a FIFO, a device or a huge file is never read here
            return spec_path, PipelineError("DEPLOY-E012", "larger than the size limit", where)
        return spec_path, _sha256(spec_path.read_bytes())
    except OSError as exc:
        return spec_path, PipelineError("DEPLOY-E001", f"cannot read the file: {exc.strerror or exc}", where)


def _cached_entry(model: str, root: Path | str) -> tuple[Path, dict[str, Any]] | PipelineError:
    """models/<m>/deploy.yaml and its cache entry (computed and stored when not current), or why it cannot be read."""
    spec_path, key = _spec_problem(model, root)
    if isinstance(key, PipelineError):
        return key
    cache_path = Path(root) / OUTLINE_CACHE
    cache = _read_cache(cache_path)
    entry = cache.get("models", {}).get(model)
    if isinstance(entry, dict) and entry.get("spec") == key:
        return spec_path, entry
    computed = _outline_of_spec(spec_path)
    models = dict(cache.get("models", {}))
    if isinstance(computed, PipelineError):
        where = computed.location
        entry = {"spec": key, "outline": None, "problem": {
            "code": computed.code, "message": computed.message, "file": where.file or spec_path.as_posix(),
            "line": where.line, "column": where.column, "key_path": where.key_path}}
    else:
        outline, tools = computed
        entry = {"spec": key, "tools": tools, "outline": [  # a list: the spec's order
            {"name": name, "targets": list(d.targets), "item_files": list(d.item_files), "rewritten": d.rewritten}
            for name, d in outline.items()]}
    models[model] = entry
    _write_cache(cache_path, {"loader": _loader_digest(root), "models": models})
    return spec_path, entry


def _cached_outline(model: str, root: Path | str) -> dict[str, DeploymentOutline] | PipelineError:
    """The outline of models/<m>/deploy.yaml, or the problem that makes it unusable (from the cache when current)."""
    found = _cached_entry(model, root)
    if isinstance(found, PipelineError):
        return found
    spec_path, entry = found
    outline = entry.get("outline")
    if outline is None:
        problem = entry.get("problem") or {}
        return PipelineError(str(problem.get("code", "DEPLOY-E001")), str(problem.get("message", "invalid spec")),
                             Location(str(problem.get("file", spec_path.as_posix())), int(problem.get("line", 0)),
                                      int(problem.get("column", 0)), key_path=str(problem.get("key_path", ""))))
    return {d["name"]: DeploymentOutline(tuple(d["targets"]), tuple(d["item_files"]), bool(d["rewritten"]))
            for d in outline}


def platform_tools(model: str, root: Path | str = ".") -> list[str]:
    """The programs the platforms declared in models/<m>/deploy.yaml name: compilers, emulators, ssh
    for a board ([] for a spec without its own platforms or one that cannot be read)."""
    found = _cached_entry(model, root)
    if isinstance(found, PipelineError):
        return []
    return [str(tool) for tool in found[1].get("tools") or ()]


def deploy_outline(model: str, root: Path | str = ".") -> dict[str, DeploymentOutline] | None:
    """The outline of models/<m>/deploy.yaml (None if the spec is missing, unreadable or invalid).

    An invalid spec yields no sub-targets; `model_refusals` names the problem and the model
    gets no tasks (`runnable_models`).
    """
    outline = _cached_outline(model, root)
    return None if isinstance(outline, PipelineError) else outline


def spec_deployments(model: str, root: Path | str = ".") -> dict[str, tuple[str, ...]]:
    """Deployment name -> the targets of its items, from models/<m>/deploy.yaml ({} if unreadable)."""
    outline = deploy_outline(model, root)
    return {} if outline is None else {name: d.targets for name, d in outline.items()}


class ContentChecker:
    """doit's file-dependency check (DOIT_CONFIG `check_file_uptodate`), extended with the change time.

    doit's default checker takes a file whose modification time is unchanged as unchanged, so
    an in-place edit that keeps the size and restores the mtime (`touch -r`, `os.utime`, a
    copy tool preserving times) would not re-run the steps that read it. The kernel sets the
    change time (ctime) on every such edit and user space cannot set it back: the state here
    is (mtime, size, MD5, ctime ns, inode), a file is unchanged when mtime, ctime and inode
    are, and otherwise its MD5 decides, as in doit.
    """

    CheckerError = OSError

    def exists(self, file_path: str) -> bool:
        return os.path.exists(file_path)

    def info(self, file_path: str) -> os.stat_result:
        return os.stat(file_path)

    def check_modified(self, file_path: str, file_stat: os.stat_result, state: Any) -> bool:
        if not isinstance(state, (list, tuple)) or len(state) != 5:
            return True  # a state saved by another checker (doit's md5): judge afresh
        mtime, size, md5, ctime_ns, inode = state
        if file_stat.st_mtime == mtime and file_stat.st_ctime_ns == ctime_ns and file_stat.st_ino == inode:
            return False
        if file_stat.st_size != size:
            return True
        return md5 != _file_md5(file_path)

    def get_state(self, dep: str, current_state: Any) -> tuple[float, int, str, int, int] | None:
        st = os.stat(dep)
        if (isinstance(current_state, (list, tuple)) and len(current_state) == 5
                and current_state[0] == st.st_mtime and current_state[3] == st.st_ctime_ns
                and current_state[4] == st.st_ino):
            return None  # unchanged: doit keeps the saved state
        return st.st_mtime, st.st_size, _file_md5(dep), st.st_ctime_ns, st.st_ino


def _file_md5(path: str) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


SPEC_HINT = "docs/deploy.md; for an example, see models/lenet5/deploy.yaml"


def refusals_by_model(root: Path | str = ".") -> dict[str, PipelineError]:
    """Every model folder `doit` will not run, by folder name, each with one line saying what to do.

    A folder under models/ holding model.onnx is refused when its name is outside the name
    grammar (NAME-E001), when it has no deploy.yaml (DEPLOY-E001) or when its deploy.yaml does
    not validate (the spec's own first problem). The other models run; `doit verify` lists the
    refusals in its summary and fails (docs/evidence.md, "doit").
    """
    refused = {Path(error.location.file).name: error for error in refused_models(root)}
    for model in model_names(root):
        outline = _cached_outline(model, root)
        if not isinstance(outline, PipelineError):
            continue
        folder = (Path(MODELS_DIR) / model).as_posix()
        if outline.code == "DEPLOY-E001" and outline.message == "no deploy.yaml":
            message = f"has model.onnx but no deploy.yaml; write one ({SPEC_HINT})"
            refused[model] = PipelineError(outline.code, message, Location.in_file(folder))
        else:
            refused[model] = PipelineError(outline.code, f"{outline.message}; fix the spec ({SPEC_HINT})",
                                           outline.location)
    return dict(sorted(refused.items()))


def runnable_models(root: Path | str = ".") -> list[str]:
    """The models `doit` runs: every shipped model (layout.model_names) that is not refused (above)."""
    refused = refusals_by_model(root)
    return [model for model in model_names(root) if model not in refused]


def refusal_line(error: PipelineError, with_code: bool = True) -> str:
    """A refusal on one line: `models/x/deploy.yaml:3:5: deployments.a.sync: DEPLOY-E004: ...`."""
    where = f"{error.location}: " if error.location else ""
    return f"{where}{error.code}: {error.message}" if with_code else f"{where}{error.message}"


def announce_refusals(root: Path | str = ".", stream: Any = None) -> list[str]:
    """Write one `refused: ...` line per refused model folder (dodo.py calls this when tasks are listed)."""
    import sys

    from pipeline.project.oneline import shorten

    lines = [shorten(f"refused: {refusal_line(error)}") for error in refusals_by_model(root).values()]
    out = stream if stream is not None else sys.stderr
    for line in lines:
        out.write(line + "\n")
    return lines
