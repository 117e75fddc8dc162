"""A package judged against the step records it carries: every recorded output present, nothing unrecorded.

The manifest lists what the package holds, and `evidence verify` re-hashes every entry
against it; but a file added together with its manifest line would verify. The step
records (artifacts/<m>/<step>/record.json, written by each step when it ran;
pipeline/ledger/records.py) say independently what each step wrote. So every output a
record lists must be in the package with the recorded SHA-256 and size, and every entry
under artifacts/ must be a record, an output some record lists, or the `failed.json` of a
step folder that holds no record (a failed step, docs/conventions.md "Stale outputs").
Whoever edits an artifact must then edit its record and the manifest too, which only the
signature (pipeline/evidence/signing.py) can catch.
"""

from __future__ import annotations

import posixpath
from typing import Callable, Mapping

from pipeline.evidence.signing import ENVELOPE
from pipeline.files.treeguard import loads_json
from pipeline.project.layout import ARTIFACTS_DIR, MODELS_DIR, RECORD_FILE, REQUIREMENTS_DIR
from pipeline.ledger.freshness import FAILED_FILE
from pipeline.ledger.records import StepRecord

MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_RECORD_DEPTH = 64
MAX_RECORD_NODES = 8_000_000
E_RECORDS = "EVID-E063"
MANIFEST = "manifest.json"            # the in-toto statement (pipeline/evidence/package.py)
AREAS = (ARTIFACTS_DIR, "evidence", MODELS_DIR, REQUIREMENTS_DIR)


def _is_record(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 4 and parts[0] == ARTIFACTS_DIR and parts[3] == RECORD_FILE


def area_problem(name: str, model: str | None) -> str | None:
    """Why `name` is no entry of the package of `model`, or None: a package holds the manifest and
    its envelope, the generated evidence/, and the model's own artifacts/<m>/ and models/<m>/ with
    the requirements/ they were judged against; nothing else, and no other model's files."""
    parts = name.split("/")
    if len(parts) == 1:
        return None if name in (MANIFEST, ENVELOPE) else "not a file a package holds at its top"
    if parts[0] not in AREAS:
        return f"outside the folders a package holds ({', '.join(AREAS)})"
    if parts[0] in (ARTIFACTS_DIR, MODELS_DIR) and model is not None and parts[1] != model:
        return f"a file of model {parts[1]!r} in the package of model {model!r}"
    return None


def record_problems(subjects: Mapping[str, str], sizes: Mapping[str, int],
                    read: Callable[[str, int], bytes], model: str | None = None) -> list[tuple[str, str]]:
    """(entry, problem) for each disagreement between the package's entries and its records, and for
    every entry outside what a package of `model` holds (`area_problem`): every entry is judged.

    `subjects`: entry -> SHA-256 from the manifest (the entries were checked against it);
    `sizes`: entry -> size; `read(name, limit)`: the bytes of an entry (at most `limit`).
    """
    problems: list[tuple[str, str]] = []
    for name in sorted(subjects):
        problem = area_problem(name, model)
        if problem is not None:
            problems.append((name, problem))
    recorded: set[str] = set()
    recorded_folders: set[str] = set()
    for name in sorted(n for n in subjects if _is_record(n)):
        folder = posixpath.dirname(name)
        recorded_folders.add(folder)
        try:
            record = StepRecord.from_json(loads_json(read(name, MAX_RECORD_BYTES), MAX_RECORD_DEPTH, MAX_RECORD_NODES))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError) as exc:
            problems.append((name, f"the step record cannot be read: {exc}"))
            continue
        for output in record.outputs:
            recorded.add(output.path)
            if output.path not in subjects:
                problems.append((output.path, f"recorded by {name} but not in the package"))
            elif subjects[output.path] != output.sha256.lower() or sizes.get(output.path) != output.size:
                problems.append((output.path, f"differs from {name}: recorded sha256 {output.sha256} ({output.size} "
                                              f"bytes), packed {subjects[output.path]} ({sizes.get(output.path)} bytes)"))
    for name in sorted(subjects):
        if not name.startswith(f"{ARTIFACTS_DIR}/") or name in recorded or _is_record(name):
            continue
        folder = posixpath.dirname(name)
        if posixpath.basename(name) == FAILED_FILE and folder.count("/") == 2 and folder not in recorded_folders:
            continue
        problems.append((name, "in the package, but no step record lists it (an artifact no step wrote)"))
    return problems
