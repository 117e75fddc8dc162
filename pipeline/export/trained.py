"""The trained model as the first reference: does the ONNX model compute what the trained model computes?

Every later check compares with the ONNX model or with the NNEF description made from it; nothing
here wrote either, but neither is the trained model: a converter from the training framework can
change what a model computes (a zeroed head, a transposed weight, a missing scale), and such an ONNX
model would then be exported, generated and run faithfully. The only witness of the trained model is
its framework, run when the model was trained. deploy.yaml's `trained_reference` names the inputs and
outputs the framework wrote then (docs/trained-reference.md shows how): one `.npz` holding
`inputs/<ONNX input name>` and `outputs/<ONNX output name>` arrays, or one `.npy` per name, each
[N, *shape] float32, with the framework and its version.

The check `export.trained_model` (HLR-EXP-004) runs onnxruntime on the ONNX model and the reference
semantics on the exported NNEF with those inputs, and compares both with the framework's outputs
element by element against the stated tolerance: onnxruntime's distance says whether the conversion
kept the model, the reference's whether the whole chain's first link did. Without the section it says
`not run` with how to provide the files, never `pass`.

The files are judged before use (docs/conventions.md, "Reading input files"): plain file names beside
deploy.yaml (the deploy schema), opened without following a link out of the model's folder, at most
MAX_REFERENCE_BYTES each, an `.npz`'s members' declared sizes counted before any is decompressed,
read with allow_pickle=False; names, shapes, element type (float32) and vector count must fit the model.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError
from pipeline.files.readguard import InputRefused, read_input
from pipeline.ledger.checks import CheckResult, Verdict, register_check
from pipeline.project.deploy import TrainedReference

CHECK = "export.trained_model"
MAX_REFERENCE_BYTES = 256 * 1024 * 1024
MAX_VECTORS = 10_000
HOW = ("name the training framework's own inputs and outputs in deploy.yaml `trained_reference` (written at "
       "training time: docs/trained-reference.md shows how from PyTorch, Keras and JAX)")

register_check(
    CHECK,
    "Export: the ONNX model computes what the trained model computes (the framework's own outputs)",
    "export",
    ["HLR-EXP-004"],
    "Runs onnxruntime on the ONNX model and the reference semantics on the exported NNEF with the inputs the "
    "training framework wrote (deploy.yaml trained_reference), and compares both with the framework's outputs "
    "element by element against the stated tolerance; 'not run' when deploy.yaml names no such files.",
)


@dataclass(frozen=True)
class TrainedData:
    """The framework's vectors: ONNX name -> [N, *shape] float32."""

    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    files: list[str]

    @property
    def vectors(self) -> int:
        return next(iter(self.inputs.values())).shape[0]


def reference_files(spec: TrainedReference | None) -> list[str]:
    """The file names (beside deploy.yaml) a trained reference reads."""
    if spec is None:
        return []
    return sorted({spec.file} if spec.file else set(spec.inputs.values()) | set(spec.outputs.values()))


def _refused(where: str, message: str) -> ExportError:
    return ExportError("EXPORT-E020", message, Location(element=where))


def _read(folder: Path, name: str) -> bytes:
    try:
        return read_input(name, base=folder, max_bytes=MAX_REFERENCE_BYTES)
    except InputRefused as refused:
        raise _refused(f"trained reference '{name}'", f"'{name}' is refused: {refused.reason}") from None
    except OSError as error:
        raise _refused(f"trained reference '{name}'", f"'{name}' cannot be read: {error.strerror or error}") from None


def _arrays(folder: Path, name: str) -> dict[str, np.ndarray]:
    """The arrays of one .npz (by key) or .npy (key ''), never unpickled, sizes bounded before decompression."""
    blob = _read(folder, name)
    try:
        if name.endswith(".npz"):
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                declared = sum(info.file_size for info in archive.infolist())
                if declared > MAX_REFERENCE_BYTES or len(archive.infolist()) > 1024:
                    raise _refused(f"trained reference '{name}'", f"'{name}' holds {declared} bytes in "
                                   f"{len(archive.infolist())} arrays once decompressed (limit {MAX_REFERENCE_BYTES})")
            with np.load(io.BytesIO(blob), allow_pickle=False) as data:
                return {key: np.asarray(data[key]) for key in data.files}
        return {"": np.load(io.BytesIO(blob), allow_pickle=False)}
    except ExportError:
        raise
    except Exception as error:  # noqa: BLE001 - numpy's and zipfile's own errors on a malformed file
        raise _refused(f"trained reference '{name}'", f"'{name}' is not a NumPy file: "
                       f"{type(error).__name__}: {error}") from None


def load_trained(spec: TrainedReference, folder: Path, inputs: Mapping[str, list[int]],
                 outputs: Mapping[str, list[int]]) -> TrainedData:
    """The framework's vectors, judged against the ONNX model's graph inputs and outputs (EXPORT-E020)."""
    found: dict[str, dict[str, np.ndarray]] = {"inputs": {}, "outputs": {}}
    files: list[str] = []
    if spec.file is not None:
        files.append(spec.file)
        for key, array in _arrays(folder, spec.file).items():
            part, _, tensor = key.partition("/")
            if part in found and tensor:
                found[part][tensor] = array
            elif key not in ("framework", "framework_version"):
                raise _refused(f"trained reference '{spec.file}'", f"'{spec.file}' holds '{key}': every array is "
                               "inputs/<ONNX input name> or outputs/<ONNX output name> (or framework, "
                               "framework_version)")
            elif str(array) != getattr(spec, key):
                raise _refused(f"trained reference '{spec.file}'", f"'{spec.file}' says {key} {str(array)!r}, "
                               f"deploy.yaml says {getattr(spec, key)!r}")
    else:
        for part, mapping in (("inputs", spec.inputs), ("outputs", spec.outputs)):
            for tensor, file in sorted(mapping.items()):
                files.append(file)
                found[part][tensor] = _arrays(folder, file)[""]
    count: int | None = None
    for part, expected in (("inputs", inputs), ("outputs", outputs)):
        if set(found[part]) != set(expected):
            raise _refused(f"trained_reference.{part}", f"the trained reference's {part} are "
                           f"{sorted(found[part]) or 'none'}; the ONNX model's are {sorted(expected)}")
        for tensor, array in sorted(found[part].items()):
            where = f"trained_reference.{part}.{tensor}"
            if array.dtype != np.float32:
                raise _refused(where, f"'{tensor}' is {array.dtype}; write float32 (as the model computes)")
            if list(array.shape[1:]) != list(expected[tensor]) or array.ndim < 1:
                raise _refused(where, f"'{tensor}' has shape {list(array.shape)}; expected [N] + "
                               f"{list(expected[tensor])} (N vectors)")
            if count is None:
                count = array.shape[0]
            if array.shape[0] != count or not 1 <= count <= MAX_VECTORS:
                raise _refused(where, f"'{tensor}' holds {array.shape[0]} vectors; every array the same number, "
                               f"1 to {MAX_VECTORS}")
            if part == "inputs" and not np.isfinite(array).all():
                raise _refused(where, f"input '{tensor}' holds a NaN or an infinity")
    return TrainedData(found["inputs"], found["outputs"], sorted(set(files)))


def _distance(got: np.ndarray, expected: np.ndarray) -> tuple[float, float, tuple[int, ...]]:
    """(max abs error, max rel error where expected != 0, index of the worst element) over every vector."""
    a, b = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    diff = np.where(np.isnan(a) != np.isnan(b), np.inf, np.where(np.isnan(a), 0.0, np.abs(a - b)))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)) if diff.size else ()
    nonzero = b != 0
    rel = float((diff[nonzero] / np.abs(b[nonzero])).max()) if nonzero.any() else 0.0
    return float(diff.max(initial=0.0)), rel, worst


def _onnxruntime(onnx_path: Path, data: TrainedData) -> dict[str, np.ndarray]:
    from pipeline.numerics.onnx_runner import reference_runner

    runner = reference_runner(onnx.load(str(onnx_path)))
    runs = [runner.run({k: a[v] for k, a in data.inputs.items()}) for v in range(data.vectors)]
    return {name: np.stack([np.asarray(r[name], np.float32) for r in runs]) for name in data.outputs}


def _reference(export_dir: Path, names_in: Mapping[str, str], names_out: Mapping[str, str],
               data: TrainedData) -> dict[str, np.ndarray]:
    from pipeline.nnef.checker import check_paths
    from pipeline.semantics import interpret_batch, load_variables

    graph = check_paths([export_dir / "graph.nnef"], tensors=False).graphs[0]
    vectors = [{names_in[k]: a[v] for k, a in data.inputs.items()} for v in range(data.vectors)]
    results = interpret_batch(graph, vectors, load_variables(graph, export_dir))
    return {onnx_name: np.stack([r[nnef] for r in results]) for onnx_name, nnef in names_out.items()}


def trained_result(model: str, spec: TrainedReference | None, folder: Path, onnx_path: Path, export_dir: Path,
                   names_in: Mapping[str, str], names_out: Mapping[str, str], shapes_in: Mapping[str, list[int]],
                   shapes_out: Mapping[str, list[int]], read: list[str]) -> CheckResult:
    """export.trained_model: onnxruntime and the reference semantics against the framework's outputs.
    `names_in`/`names_out`: ONNX -> NNEF names; `shapes_*`: ONNX name -> shape; `folder`: the model's."""
    if spec is None:
        return CheckResult(CHECK, model, Verdict.NOT_RUN, f"no trained model's outputs to compare with: {HOW}",
                           {}, read)
    measured: dict[str, Any] = {"framework": spec.framework, "framework_version": spec.framework_version,
                                "max_abs_error": spec.max_abs_error, "max_rel_error": spec.max_rel_error}
    try:
        data = load_trained(spec, folder, shapes_in, shapes_out)
    except ExportError as error:
        return CheckResult(CHECK, model, Verdict.FAIL, f"{error.code}: {error.message}", measured, read)
    measured["vectors"] = data.vectors
    sides = {"onnxruntime": _onnxruntime(onnx_path, data), "reference": _reference(export_dir, names_in, names_out, data)}
    failures = []
    for side, outputs in sides.items():
        for name in sorted(data.outputs):
            abs_error, rel_error, worst = _distance(outputs[name], data.outputs[name])
            measured[f"{side}.{name}.max_abs_error"] = abs_error
            measured[f"{side}.{name}.max_rel_error"] = rel_error
            over = abs_error > spec.max_abs_error or (spec.max_rel_error is not None and rel_error > spec.max_rel_error)
            if over:
                failures.append(f"{side} differs from {spec.framework} {spec.framework_version}'s output '{name}' by "
                                f"{abs_error:.3g} (relative {rel_error:.3g}) at vector {worst[0] if worst else 0}, "
                                f"index {list(worst[1:])}")
    limit = f"max_abs_error {spec.max_abs_error:g}" + ("" if spec.max_rel_error is None else
                                                       f", max_rel_error {spec.max_rel_error:g}")
    if failures:
        what = ("the ONNX model does not compute what the trained model computes (a converter defect, or files that "
                "are not this model's)" if any(f.startswith("onnxruntime") for f in failures) else
                "the exported description does not compute what the trained model computes")
        return CheckResult(CHECK, model, Verdict.FAIL, f"{what}: {'; '.join(failures)} ({limit}, "
                           f"{data.vectors} vectors)", measured, read)
    return CheckResult(CHECK, model, Verdict.PASS, f"onnxruntime and the reference semantics within {limit} of "
                       f"{spec.framework} {spec.framework_version}'s outputs on its {data.vectors} vectors",
                       measured, read)
