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

import json
import posixpath
from typing import Callable, Mapping

from pipeline.project.layout import ARTIFACTS_DIR, RECORD_FILE
from pipeline.ledger.freshness import FAILED_FILE
from pipeline.ledger.records import StepRecord

MAX_RECORD_BYTES = 64 * 1024 * 1024
E_RECORDS = "EVID-E063"


def _is_record(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 4 and parts[0] == ARTIFACTS_DIR and parts[3] == RECORD_FILE


def record_problems(subjects: Mapping[str, str], sizes: Mapping[str, int],
                    read: Callable[[str, int], bytes]) -> list[tuple[str, str]]:
    """(entry, problem) for each disagreement between the package's entries and its records.

    `subjects`: entry -> SHA-256 from the manifest (the entries were checked against it);
    `sizes`: entry -> size; `read(name, limit)`: the bytes of an entry (at most `limit`).
    """
    problems: list[tuple[str, str]] = []
    recorded: set[str] = set()
    recorded_folders: set[str] = set()
    for name in sorted(n for n in subjects if _is_record(n)):
        folder = posixpath.dirname(name)
        recorded_folders.add(folder)
        try:
            record = StepRecord.from_json(json.loads(read(name, MAX_RECORD_BYTES).decode("utf-8")))
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
