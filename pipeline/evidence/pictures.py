"""The pictures of a model's report page, found in what the checks measured and wrote.

* numeric error against what is allowed: one row per deployment and comparison, from the
  `measured` figures of the numeric checks (export.numeric, compare.onnxruntime,
  compare.reference, compare.cuda_reference, compare.nvdla_reference);
* the MET histograms the compare step drew (the files met.budget wrote);
* the Petri net pictures the petri step drew with Graphviz (absent where `dot` is not
  installed: the page says so).

Nothing is judged here: the verdicts are the checks'; the pictures show their margins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from pipeline.compare.svg import ErrorRow
from pipeline.evidence.matrix import TraceMatrix
from pipeline.project.layout import step_dir

MET_CHECK = "met.budget"
HISTOGRAM = "met-histogram.svg"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _g(value: float) -> str:
    return f"{value:.3g}"


def _deployment(subject: str) -> str:
    return subject.split("/", 1)[1] if "/" in subject else "whole model"


def _exact_row(label: str, figures: Mapping[str, Any], emulated: bool) -> ErrorRow:
    exact = figures.get("bit_identical") is True
    ulp = _number(figures.get("max_ulp"))
    text = "bit-identical (0 ULP required)" if exact else f"max {ulp:.0f} ULP (0 required)" if ulp is not None else "differs"
    return ErrorRow(label + (" (emulated)" if emulated else ""), None, exact, text)


def _ratio_row(label: str, error: float, allowed: float, basis: str, emulated: bool) -> ErrorRow:
    return ErrorRow(label + (" (emulated)" if emulated else ""), error / allowed, False,
                    f"{_g(error)} of {_g(allowed)} ({basis})")


def _rows_of(check_id: str, subject: str, measured: Mapping[str, Any], emulated: bool) -> Iterator[ErrorRow]:
    where = _deployment(subject)
    if check_id == "compare.reference" and "bit_identical" in measured:
        yield _exact_row(f"{where}: C vs reference", measured, emulated)
    elif check_id == "compare.cuda_reference":
        for name, figures in sorted(measured.items()):
            if isinstance(figures, dict) and "bit_identical" in figures:
                yield _exact_row(f"{where}: CUDA {name.split(' (')[0]} vs reference", figures, emulated)
    elif check_id == "compare.nvdla_reference":
        ratio = _number(measured.get("max_error_to_bound"))
        tolerance = _number(measured.get("tolerance_max_abs_error"))
        error = _number(measured.get("max_abs_error_to_float64", measured.get("max_abs_error")))
        if measured.get("tolerance_basis") == "computed bound" and ratio is not None:
            yield ErrorRow(f"{where}: NVDLA vs float64" + (" (emulated)" if emulated else ""), ratio, False,
                           f"error/bound {_g(ratio)} (FP16 bound)")
        elif error is not None and tolerance:
            yield _ratio_row(f"{where}: NVDLA vs float64", error, tolerance, "absolute tolerance", emulated)
    elif check_id == "compare.onnxruntime":
        error, tolerance = _number(measured.get("max_abs_error")), _number(measured.get("tolerance_max_abs_error"))
        if error is not None and tolerance:
            yield _ratio_row(f"{where}: C vs onnxruntime", error, tolerance, "tolerance", emulated)
    elif check_id == "export.numeric":
        for key in sorted(measured):
            if key.endswith(".max_abs_error"):
                output = key[: -len(".max_abs_error")]
                error, allowed = _number(measured[key]), _number(measured.get(f"{output}.effective_max_abs_error"))
                if error is not None and allowed:
                    yield _ratio_row(f"export {output}: NNEF vs onnxruntime", error, allowed, "tolerance", emulated)


NUMERIC_CHECKS = ("export.numeric", "compare.reference", "compare.onnxruntime", "compare.cuda_reference",
                  "compare.nvdla_reference")


def error_rows(matrix: TraceMatrix, model: str) -> list[ErrorRow]:
    """Every measured numeric comparison of `model`, in check then deployment order."""
    rows: list[ErrorRow] = []
    for check_id in NUMERIC_CHECKS:
        outcome = matrix.outcomes.get((model, check_id))
        if outcome is None:
            continue
        for stored in outcome.results:
            result = stored.result
            if result.verdict.value == "not run":
                continue
            rows.extend(_rows_of(check_id, result.subject, result.measured, result.verdict.value == "emulated"))
    return rows


@dataclass(frozen=True)
class Picture:
    """A picture file an artifact of the model holds, with its caption."""

    path: str
    caption: str


def met_pictures(matrix: TraceMatrix, model: str) -> list[Picture]:
    """The MET histograms of `model`, with the figures measured (and where they are not a verdict, why)."""
    outcome = matrix.outcomes.get((model, MET_CHECK))
    pictures = []
    for stored in outcome.results if outcome else []:
        result = stored.result
        for path in sorted(result.written):
            if not path.endswith(HISTOGRAM):
                continue
            m = result.measured
            figures = ", ".join(f"{name} {m[key]} us" for name, key in
                                (("median", "median_us"), ("p99", "p99_us"), ("max", "max_us"), ("budget", "budget_us"))
                                if _number(m.get(key)) is not None)
            why = f" {result.verdict.value}: {result.reason}" if result.reason else f" {result.verdict.value}"
            pictures.append(Picture(path, f"{result.subject}: {figures}.{why}"))
    return pictures


def petri_pictures(matrix: TraceMatrix, model: str) -> list[Picture]:
    """The Petri net pictures of `model` (one per description: the original and each deployment's split)."""
    prefix = step_dir(model, "petri", "").as_posix() + "/"
    return [Picture(path, f"Petri net of {path[len(prefix):-4]}")
            for path, info in sorted(matrix.artifacts.items())
            if info.model == model and path.startswith(prefix) and path.endswith(".svg")]
