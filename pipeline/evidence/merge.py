"""Merging the evidence of shards: one CI job per model, one job that builds the whole trace.

A shard is a project checkout where the chain ran for some models (`doit
evidence:<m>` and the tasks before it), leaving artifacts/<m>/ and reports/<m>/. The merge
copies those trees of every shard into one project (the merge job's checkout, the same
commit: models/ and requirements/ are its own), refusing a model that two shards bring or a
shard that brings a model the project does not ship, then builds the packages, the trace
matrix and the JUnit XML exactly as a single run does. Nothing is trusted from the shards'
reports: the merged reports are built from the artifacts, whose every file is re-hashed.
The evidence of a merged run therefore equals that of one machine running every model
(tests/evidence/test_evidence_merge.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from pipeline.diagnostics import Location, PipelineError
from pipeline.layout import ARTIFACTS_DIR, REPORTS_DIR, model_names

E_MERGE = "EVID-E070"


def shard_models(shard: Path) -> list[str]:
    """The models a shard ran: the folders under its artifacts/."""
    base = shard / ARTIFACTS_DIR
    if not base.is_dir():
        raise PipelineError(E_MERGE, "not a shard: it has no artifacts/ folder", Location.in_file(shard))
    return sorted(p.name for p in base.iterdir() if p.is_dir())


def merge_shards(shards: Iterable[str | Path], root: str | Path = ".") -> dict[str, str]:
    """Copy every shard's artifacts/<m>/ and reports/<m>/ into `root`; model -> shard it came from.

    Raises PipelineError (EVID-E070) before copying anything when a model comes from two
    shards, is not shipped by `root`, or is already present in `root`.
    """
    base = Path(root)
    shipped = set(model_names(base))
    origin: dict[str, str] = {}
    for shard in (Path(s) for s in shards):
        for model in shard_models(shard):
            if model not in shipped:
                raise PipelineError(E_MERGE, f"shard brings model '{model}', which this project does not ship "
                                    f"(models: {', '.join(sorted(shipped)) or 'none'})", Location.in_file(shard))
            if model in origin:
                raise PipelineError(E_MERGE, f"model '{model}' comes from two shards: {origin[model]} and {shard}",
                                    Location.in_file(shard))
            if (base / ARTIFACTS_DIR / model).exists():
                raise PipelineError(E_MERGE, f"artifacts/{model} already exists in the merge project; merge into a "
                                    "clean checkout", Location.in_file(base / ARTIFACTS_DIR / model))
            origin[model] = str(shard)
    for model, shard in sorted(origin.items()):
        for folder in (ARTIFACTS_DIR, REPORTS_DIR):
            source = Path(shard) / folder / model
            if source.is_dir():
                shutil.copytree(source, base / folder / model, symlinks=False)
    return origin
