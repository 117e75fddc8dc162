"""Export validation: the NNEF computes what the ONNX model computes (HLR-EXP-001).

The validator does not trust the exporter: it reads the files the export wrote
(graph.nnef with our checker, the .dat tensors, provenance.json only for the ONNX ->
NNEF names of inputs and outputs), runs the reference interpreter on them, runs the
ONNX model with onnxruntime (pipeline.numerics.onnx_runner), both on the same seeded vectors
(pipeline.numerics.vectors), and compares every output with pipeline.numerics.metrics against the
tolerance of pipeline.numerics.tolerance's rule. On the first vectors it also encloses the exact
real-number result and computes the error bounds of both float32 evaluations (pipeline.export.bounds),
and records per output each side's distance to the exact result against its bound and the output's
spread across the vectors (docs/export.md, docs/compare.md). The result is validation.json:

    schema_version, model, onnx {file, sha256}, nnef {file, sha256},
    reference {runtime, version, settings}, vectors {count, seed, rule, inputs},
    tolerance {max_abs_error, max_rel_error}, enclosure {method, vectors, bound, unavailable, ...},
    outputs [per output: onnx, nnef, shape, the measures of metrics.ErrorStats, tolerance
    (pipeline.numerics.tolerance.EffectiveTolerance), enclosure {reference, onnxruntime: distances and
    bounds}, spread, discriminating, verdict, reason], verdict
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import onnx

from pipeline.project.layout import EXPORT_VALIDATION_FILE
from pipeline.numerics.metrics import ErrorAccumulator, ErrorStats, within_tolerance
from pipeline.project.deploy import DeploySpec, Tolerance, check_inputs_match
from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError
from pipeline.export.exporter import GRAPH_FILE, PROVENANCE_FILE
from pipeline.numerics.onnx_runner import ReferenceRunner, reference_runner
from pipeline.nnef.checker import check_paths
from pipeline.semantics import interpret_batch, load_variables
from pipeline.numerics.tolerance import EffectiveTolerance, discriminating, spread
from pipeline.numerics.vectors import RULE, Distribution, InputSpec, iter_vectors
from pipeline.export.bounds import ENCLOSURE_VECTORS, BoundRun

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
VALIDATION_FILE = EXPORT_VALIDATION_FILE
DEFAULT_VECTORS = 100
DEFAULT_SEED = 0
# HLR-EXP-001's parameter: the tolerance when no deployment spec gives one.
DEFAULT_TOLERANCE = Tolerance(max_abs_error=1.0e-5, max_rel_error=None)
DEFAULT_DISTRIBUTION = Distribution("uniform", 0.0, 1.0)


@dataclass(frozen=True)
class ValidationSettings:
    """The inputs and their distribution, the number of vectors, the seed and the tolerance."""

    inputs: dict[str, InputSpec]
    vectors: int
    seed: int
    tolerance: Tolerance
    source: str


def settings_from_spec(spec: DeploySpec, vectors: int | None = None, seed: int | None = None) -> ValidationSettings:
    """Settings from a deployment spec (`vectors`/`seed` override the spec's when given)."""
    return ValidationSettings(
        inputs=dict(spec.inputs),
        vectors=spec.validation.vectors if vectors is None else vectors,
        seed=spec.validation.seed if seed is None else seed,
        tolerance=spec.validation.tolerance,
        source=spec.path,
    )


def default_settings(graph_inputs: Mapping[str, Sequence[int]], vectors: int | None = None,
                     seed: int | None = None) -> ValidationSettings:
    """Settings without a deployment spec: uniform [0, 1) inputs, 100 vectors, seed 0, tolerance 1e-5."""
    inputs = {name: InputSpec(name, tuple(shape), DEFAULT_DISTRIBUTION) for name, shape in graph_inputs.items()}
    return ValidationSettings(inputs, DEFAULT_VECTORS if vectors is None else vectors,
                              DEFAULT_SEED if seed is None else seed, DEFAULT_TOLERANCE, "defaults")


@dataclass
class OutputResult:
    onnx_name: str
    nnef_name: str
    shape: list[int]
    stats: ErrorStats
    passed: bool
    reason: str
    tolerance: EffectiveTolerance | None = None
    enclosure: dict[str, Any] = field(default_factory=dict)
    spread: float = 0.0
    discriminating: bool = True
    discriminating_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"onnx": self.onnx_name, "nnef": self.nnef_name, "shape": self.shape, **self.stats.to_json(),
                "tolerance": None if self.tolerance is None else self.tolerance.to_json(),
                "enclosure": self.enclosure, "spread": self.spread, "discriminating": self.discriminating,
                "verdict": "pass" if self.passed else "fail", "reason": self.reason}


@dataclass
class ValidationReport:
    model: str
    settings: ValidationSettings
    reference: dict[str, Any]
    outputs: list[OutputResult]
    onnx_file: dict[str, str]
    nnef_file: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)
    enclosure: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def to_json(self) -> dict[str, Any]:
        """The validation.json document (no timings: they are not reproducible)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "onnx": self.onnx_file,
            "nnef": self.nnef_file,
            "reference": self.reference,
            "vectors": {
                "count": self.settings.vectors,
                "seed": self.settings.seed,
                "rule": RULE,
                "source": self.settings.source,
                "inputs": [spec.to_json() for _, spec in sorted(self.settings.inputs.items())],
            },
            "tolerance": self.settings.tolerance.to_json(),
            "enclosure": self.enclosure,
            "outputs": [o.to_json() for o in self.outputs],
            "verdict": "pass" if self.passed else "fail",
        }

    def table(self) -> str:
        """A plain-text summary: one row per output."""
        tol = self.settings.tolerance
        header = ["output", "shape", "max abs", "max ULP", "mean abs", "max rel", "tolerance", "verdict"]
        rows = [header]
        for o in self.outputs:
            used = o.tolerance.effective if o.tolerance is not None else tol.max_abs_error
            limit = f"{used:.1e}" + (f" / rel {tol.max_rel_error:.1e}" if tol.max_rel_error is not None else "")
            rows.append([o.onnx_name, "x".join(map(str, o.shape)) or "scalar", f"{o.stats.max_abs_error:.3e}",
                         str(o.stats.max_ulp), f"{o.stats.mean_abs_error:.3e}", f"{o.stats.max_rel_error:.3e}",
                         limit, "pass" if o.passed else "FAIL"])
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
        ref = self.reference
        lines.append(f"{self.settings.vectors} vectors (seed {self.settings.seed}, {self.settings.source}); "
                     f"reference {ref['runtime']} {ref['version']}; "
                     f"verdict: {'pass' if self.passed else 'FAIL'}")
        return "\n".join(lines)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def validate_export(onnx_path: str | os.PathLike[str], export_dir: str | os.PathLike[str],
                    settings: ValidationSettings, model_name: str | None = None,
                    runner: ReferenceRunner | None = None) -> ValidationReport:
    """Run ONNX and the exported NNEF on the same vectors and compare every output."""
    export = Path(export_dir)
    onnx_file = Path(onnx_path)
    report = check_paths([export], profile="standard")
    errors = [f for f in report.findings if f.is_error]
    if errors or not report.graphs:
        first = "; ".join(f"{f.code}: {f.message}" for f in errors[:3]) or "no graph"
        raise ExportError("EXPORT-E011", f"the exported NNEF does not pass the checker: {first}", Location.in_file(export))
    graph = report.graphs[0]
    variables = load_variables(graph, export)
    provenance = json.loads((export / PROVENANCE_FILE).read_text(encoding="utf-8"))
    input_names = {item["onnx"]: item["nnef"] for item in provenance["inputs"]}
    output_names = {item["onnx"]: item["nnef"] for item in provenance["outputs"]}
    model = onnx.load(str(onnx_file))
    graph_inputs = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in model.graph.input if v.name not in {t.name for t in model.graph.initializer}
    }
    check_inputs_match(settings.inputs, graph_inputs, settings.source)
    runner = runner or reference_runner(model)
    accumulators = {name: ErrorAccumulator() for name in output_names}
    shapes: dict[str, list[int]] = {}
    seen: dict[str, list[np.ndarray]] = {name: [] for name in output_names}
    yard = BoundRun(model, output_names)
    vectors = list(iter_vectors(settings.inputs, settings.vectors, settings.seed))
    for index, (vector, actual) in enumerate(zip(vectors, _interpreted(graph, vectors, input_names, variables))):
        expected = runner.run(vector)
        for onnx_name, nnef_name in output_names.items():
            shapes[onnx_name] = list(np.shape(expected[onnx_name]))
            accumulators[onnx_name].add(actual[nnef_name], np.asarray(expected[onnx_name], dtype=np.float32), index)
            seen[onnx_name].append(np.asarray(actual[nnef_name], dtype=np.float32))
        if index < ENCLOSURE_VECTORS:
            yard.add(vector, {o: actual[n] for o, n in output_names.items()}, expected)
    outputs = []
    tolerance = settings.tolerance
    for onnx_name, nnef_name in output_names.items():
        stats = accumulators[onnx_name].stats()
        rule = yard.tolerance(onnx_name, tolerance.max_abs_error)
        passed, reason = within_tolerance(stats, rule.effective, tolerance.max_rel_error)
        if not passed:
            reason = f"output '{onnx_name}': {reason} ({rule.basis}: {rule.reason})"
        width = spread(np.stack(seen[onnx_name])) if seen[onnx_name] else 0.0
        telling, why = discriminating(width, rule.effective)
        outputs.append(OutputResult(onnx_name, nnef_name, shapes.get(onnx_name, []), stats, passed, reason, rule,
                                    yard.summary(onnx_name), width, telling, why and f"output '{onnx_name}': {why}"))
    log.info("validated %s on %d vectors: %s", onnx_file, settings.vectors,
             "pass" if all(o.passed for o in outputs) else "fail")
    return ValidationReport(
        model=model_name or onnx_file.stem,
        settings=settings,
        reference=runner.describe(),
        outputs=outputs,
        onnx_file={"file": onnx_file.name, "sha256": _sha256(onnx_file)},
        nnef_file={"file": GRAPH_FILE, "sha256": _sha256(export / GRAPH_FILE)},
        enclosure=yard.describe(),
    )



# interpret_batch holds every activation of the vectors it runs together: at most this many at once
# (efficientnet_b0 at 224x224: 1.9 GB for 100 vectors, a tenth of it for 10; the same bits either way).
BATCH_VECTORS = 10


def _interpreted(graph: Any, vectors: Sequence[Mapping[str, np.ndarray]], input_names: Mapping[str, str],
                 variables: Mapping[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
    """The reference's outputs of each vector: interpret's bits, BATCH_VECTORS vectors per interpret_batch
    (the convolutions of a batch run once on its stack)."""
    for start in range(0, len(vectors), BATCH_VECTORS):
        chunk = [{input_names[n]: v for n, v in vector.items()} for vector in vectors[start:start + BATCH_VECTORS]]
        yield from interpret_batch(graph, chunk, variables)
