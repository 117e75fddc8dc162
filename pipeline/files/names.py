"""The one grammar for names that become paths or identifiers, and writes confined to a folder.

A deployment name becomes a folder (artifacts/<m>/split/<deployment>/), an item name a file
name, an NNEF `graphitem` identifier and part of C identifiers, a model folder name the
artifacts folder. A name read from an input is therefore judged before it is joined to a
path: `../../x` would otherwise make a step write outside its output folder, and a name
with a space or an NNEF keyword would end in a generated file that does not parse.

The grammar (docs/deploy.md, "Names"): an ASCII letter, then up to 63 letters, digits or
underscores; not an NNEF keyword (an item name is written as an NNEF identifier). Dots,
slashes, spaces and non-ASCII letters are all outside it, so a valid name is one path
component that cannot climb out of its parent.

`confined(base, *parts)` is the second line of defence at every writer that joins a name
from an input to a path: the resolved target (symlinks followed) must lie inside the
resolved `base`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pipeline.diagnostics import NOWHERE, Location, PipelineError

MAX_NAME_LENGTH = 64
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}\Z"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")

# The NNEF 1.0.x keywords (Khronos spec section 3.2) plus the extension's `graphitem`: an item
# name is written as an identifier (`graphitem CPU0 ...`), where a keyword would not parse.
NNEF_KEYWORDS = frozenset({
    "version", "extension", "fragment", "graph", "graphitem", "tensor", "integer", "scalar",
    "logical", "string", "true", "false", "for", "in", "if", "else", "yield", "shape_of",
    "length_of", "range_of",
})

CODES: dict[str, str] = {
    "NAME-E001": "a name that becomes a path or an identifier (model folder, deployment, item, label) "
                 "is outside the name grammar",
    "NAME-E002": "a write would land outside the step's output folder (a name climbing out, or a symlink)",
}


def name_problem(name: object, kind: str = "name") -> str | None:
    """Why `name` is not a valid `kind` name (a sentence), or None when it is."""
    if not isinstance(name, str):
        return f"{kind} must be a string, got {type(name).__name__}"
    shown = name if len(name) <= 80 else name[:77] + "..."
    if not _NAME.fullmatch(name):
        if len(name) > MAX_NAME_LENGTH and _NAME.fullmatch(name[:MAX_NAME_LENGTH]):
            return f"{kind} {shown!r} is longer than {MAX_NAME_LENGTH} characters"
        return (f"{kind} {shown!r} is not a name: names start with an ASCII letter followed by letters, "
                f"digits or '_' (at most {MAX_NAME_LENGTH} characters; no '.', '/', space or '-')")
    if name in NNEF_KEYWORDS:
        return f"{kind} {name!r} is an NNEF keyword, which cannot be an identifier"
    return None


def check_name(name: object, kind: str = "name", location: Location = NOWHERE) -> str:
    """`name` when it is in the grammar, else PipelineError NAME-E001 at `location`."""
    problem = name_problem(name, kind)
    if problem is not None:
        raise PipelineError("NAME-E001", problem, location)
    return str(name)


def confined(base: str | os.PathLike[str], *parts: str | os.PathLike[str]) -> Path:
    """`base/parts...`, refused (NAME-E002) unless it resolves inside `base` (symlinks followed).

    The path returned is the joined one (not the resolved one), so that paths written into
    artifacts keep their project-relative spelling.
    """
    root = Path(base)
    target = root.joinpath(*parts)
    real_root = Path(os.path.realpath(root))
    real_target = Path(os.path.realpath(target))
    if real_target != real_root and real_root not in real_target.parents:
        raise PipelineError("NAME-E002", f"refusing to write {target.as_posix()}: it resolves to {real_target.as_posix()}, "
                            f"outside the output folder {root.as_posix()}", Location.in_file(str(target)))
    return target
