"""One deployment's run as the compare step judges it: its names and folders computed once.

Every part of the step (numbers, traces, MET, the GPU, the NVDLA and the other platforms) judges
one run of one deployment; they all need the same subject, the run's run.json, the folders the
execute and split steps wrote and the one the comparison writes, and the normative parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.files.names import confined
from pipeline.ledger.requirements import load_requirements
from pipeline.project.deploy import DeploySpec
from pipeline.project.layout import step_dir

STEP = "compare"


def parameters(root: Path) -> dict[str, float]:
    """Normative values read from the requirements (not copied)."""
    requirements = load_requirements(root)
    return {"max_ulp": int(requirements.parameter("HLR-NUM-001", "max_ulp")),
            "max_jitter_ratio": float(requirements.parameter("HLR-MET-002", "max_jitter_ratio")),
            "max_drift_ratio": float(requirements.parameter("HLR-MET-002", "max_drift_ratio"))}


@dataclass(frozen=True)
class Run:
    """A deployment's run: `doc` is the execute step's run.json; `folder` is where its judgements go."""

    model: str
    name: str
    spec: DeploySpec
    doc: dict[str, Any]
    params: dict[str, float]
    root: Path
    subject: str
    folder: Path      # artifacts/<m>/compare/<deployment>/
    run_dir: Path     # artifacts/<m>/execute/<deployment>/
    split_dir: Path   # artifacts/<m>/split/<deployment>/

    @classmethod
    def of(cls, model: str, name: str, spec: DeploySpec, doc: dict[str, Any], params: dict[str, float],
           root: Path) -> Run:
        return cls(model, name, spec, doc, params, root, f"{model}/{name}", confined(step_dir(model, STEP, root), name),
                   step_dir(model, "execute", root) / name, step_dir(model, "split", root) / name)
