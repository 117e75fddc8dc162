"""Where things live: shipped models, per-step artifact folders, reports.

One place for the paths so that doit tasks, the CLI and the evidence builder agree.
All paths are relative to the project root given (default: the current directory).
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.diagnostics import Location, PipelineError
from pipeline.files.names import name_problem

MODELS_DIR = "models"
ARTIFACTS_DIR = "artifacts"
REPORTS_DIR = "reports"
# The cross-model reports under reports/ (the evidence step writes them; named here so that a
# step about to replace its outputs can remove the reports built from the old ones).
REPORT_FILES = {
    "html": "trace-matrix.html",
    "csv": "trace-matrix.csv",
    "md": "trace-matrix.md",
    "json": "trace.json",
    "junit": "junit.xml",
}
REQUIREMENTS_DIR = "requirements"

# The steps in chain order; each writes artifacts/<model>/<step>/ and a checks.json there.
STEPS: tuple[str, ...] = ("export", "check", "split", "petri", "codegen", "prove", "execute", "compare")

CHECKS_FILE = "checks.json"
RECORD_FILE = "record.json"             # every step's record of what it read and wrote
MET_BASELINE_FILE = "met-baseline.json"  # models/<m>/: the reviewed timing baseline

# Artifact file names the doit task generators need before any step module is imported
# (importing the steps pulls in onnx, lark and the rest: a no-op `doit verify` must stay fast).
EXPORT_GRAPH_FILE = "graph.nnef"
EXPORT_PROVENANCE_FILE = "provenance.json"
EXPORT_VALIDATION_FILE = "validation.json"
CHECK_REPORT_FILE = "report.json"
BUILD_FILE = "build.json"              # codegen/<d>/: what was generated and how to build it (read by execute)


def linked_output_folders(root: Path | str = ".") -> list[str]:
    """The output folders (artifacts/, reports/) of `root` that are symbolic links."""
    return [name for name in (ARTIFACTS_DIR, REPORTS_DIR) if (Path(root) / name).is_symlink()]


def check_output_folders(root: Path | str = ".") -> None:
    """PIPE-E012 when artifacts/ or reports/ of `root` is a symbolic link: decided once, before any step.

    Every step writes under these folders and the evidence reads them back; a link would send
    the writes outside the project (and the steps that confine their writes, `names.confined`,
    would refuse them while the others followed it). So a link is refused before the first
    step runs (dodo.py, and every step action and evidence command), never followed. Use a
    bind mount to put the outputs on another disk.
    """
    linked = linked_output_folders(root)
    if linked:
        where = Path(root) / linked[0]
        raise PipelineError("PIPE-E012", f"{'/, '.join(linked)}/ {'is a symbolic link' if len(linked) == 1 else 'are symbolic links'} "
                            f"(to {os.readlink(where)}); the pipeline writes only inside the project: replace "
                            "it with a folder (or a bind mount)", Location.in_file(where.as_posix()))


def _model_folders(root: Path | str) -> list[str]:
    base = Path(root) / MODELS_DIR
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "model.onnx").is_file())


def model_names(root: Path | str = ".") -> list[str]:
    """Every shipped model: a folder under models/ holding model.onnx, sorted by name.

    Only names in the name grammar (pipeline.files.names): a model name becomes artifacts/<m>/ and
    part of identifiers. The others are not skipped silently: `refused_models` reports them
    and `doit` fails on them (docs/deploy.md, "Names").
    """
    return [name for name in _model_folders(root) if name_problem(name) is None]


def refused_models(root: Path | str = ".") -> list[PipelineError]:
    """NAME-E001 for each folder under models/ holding model.onnx whose name is outside the grammar."""
    return [PipelineError("NAME-E001", f"{problem}; rename the folder",
                          Location.in_file((Path(root) / MODELS_DIR / name).as_posix()))
            for name in _model_folders(root) if (problem := name_problem(name, "model folder name")) is not None]


def model_dir(model: str, root: Path | str = ".") -> Path:
    return Path(root) / MODELS_DIR / model


def step_dir(model: str, step: str, root: Path | str = ".") -> Path:
    """artifacts/<model>/<step>/ (not created here)."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; steps are {', '.join(STEPS)}")
    return Path(root) / ARTIFACTS_DIR / model / step


def checks_path(model: str, step: str, root: Path | str = ".") -> Path:
    """The check-results document a step writes for a model."""
    return step_dir(model, step, root) / CHECKS_FILE


def export_data(model: str, root: Path | str = ".") -> list[Path]:
    """The export's data later steps read: graph.nnef, provenance.json and the tensor files.

    Later steps record these as their inputs, not the export folder: its checks.json,
    record.json and validation.json are the export's verdicts, which a later step neither
    reads nor depends on (doit re-runs it when provenance.json, holding every tensor's hash,
    changes), so recording them would make its record stale whenever only they change.
    (The compare step is the exception: it reads validation.json's tolerance record, the one
    tolerance rule's inputs, and depends on it; docs/compare.md.)
    """
    folder = step_dir(model, "export", root)
    files = [folder / EXPORT_GRAPH_FILE, folder / EXPORT_PROVENANCE_FILE] + sorted(folder.glob("*.dat"))
    return [p for p in files if p.is_file()]


def step_data(folder: Path) -> list[Path]:
    """Every file a step left under `folder` except its verdicts and record (checks.json, record.json).

    What a later step records as read from an earlier step's folder: the data, not the
    earlier step's verdicts, which it neither reads nor re-runs for (see export_data).
    """
    if not folder.is_dir():
        return []
    skip = {folder / CHECKS_FILE, folder / RECORD_FILE}
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in skip)


def project_relative(path: Path | str, root: Path | str = ".") -> str:
    """`path` as written in artifacts: POSIX, relative to the project root when inside it.

    Artifacts must not hold absolute paths (they would differ between checkouts); a path
    outside the root is kept as given.
    """
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def requirement_files(root: str | Path = ".") -> list[Path]:
    """requirements/*.yaml, sorted by name."""
    return sorted((Path(root) / REQUIREMENTS_DIR).glob("*.yaml"))
