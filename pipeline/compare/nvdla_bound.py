"""HLR-NUM-004's judgement of NVDLA outputs: within the network's FP16 error bound of its exact value.

Per vector, the enclosure of the network's exact real-number result (pipeline.numerics.enclosure) and
the error bound of the item's arithmetic (pipeline.numerics.sensitivity with `nvdla_fp16`: FP16
storage of inputs, weights and every written tensor, float32 sums, the SDP's lookup tables for sigmoid
and tanh as pipeline/numerics/nvdla_lut.py programs them) computed from the ONNX model alone, never from
the loadable or the emulator. In a deployment with CPU items next to the DLA items, the operations of the
CPU items keep the reference semantics' float32 arithmetic and a tensor crossing into a DLA item is
rounded to FP16 there. Every element must lie within its bound. Where the bound is unavailable (no rule:
its code and message), or an output's bound does not discriminate (not below the output's spread across
the vectors: a constant output would pass it; or more than DISCRIMINATION_RATIO times the largest
measured error), the requirement's absolute parameter applies instead, against the same exact value,
and the judgement says which applied to each output and why (docs/compare.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.compare import nvdla_fp16
from pipeline.compare.reference import onnx_names, read_inputs
from pipeline.numerics.arithmetic import REFERENCE, Arithmetic, Table, nvdla_fp16 as fp16_arithmetic
from pipeline.numerics.enclosure import Enclosure, EnclosureUnavailable
from pipeline.numerics.sensitivity import BoundUnavailable, Sensitivity
from pipeline.numerics.tolerance import DISCRIMINATION_RATIO, discriminating, spread
from pipeline.project.layout import model_dir, step_dir

BOUND, ABSOLUTE = "computed bound", "absolute tolerance"
NVDLA = "nvdla"


@lru_cache(maxsize=1)
def tables() -> dict[str, Table]:
    """The SDP's sigmoid and tanh tables, read from the code generator's own table builder."""
    from pipeline.numerics.nvdla_lut import ACTIVATIONS, activation_lut

    found = {}
    for fn, (_function, start, frac_bits) in ACTIVATIONS.items():
        lut = activation_lut(fn)
        samples = np.array(lut["linear_only_table"], dtype=np.int16).view(np.float16).astype(np.float64)
        found[fn] = Table(fn, float(start), 2.0 ** frac_bits, tuple(float(v) for v in samples))
    return found


def arithmetic() -> Arithmetic:
    """NVDLA FP16 with the code generator's lookup tables."""
    return fp16_arithmetic(tables())


@dataclass
class BoundJudgement:
    """What the FP16 rule measured over every vector and element."""

    basis: str
    absolute: float
    why: str = ""
    vectors: int = 0
    max_abs_error: float = 0.0
    max_bound: float = 0.0
    max_ratio: float = 0.0
    beyond: int = 0
    first_beyond: dict[str, Any] | None = None
    arithmetic: dict[str, object] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    requirement: dict[str, Any] | None = None  # the deployment's stated FP16 requirement (nvdla_fp16), judged
    requirement_ok: bool = True
    requirement_clause: str = ""
    placement: list[str] | None = None
    decisions: dict[str, Any] = field(default_factory=dict)
    measure: str = "the enclosure"  # what the errors are measured against

    @property
    def passed(self) -> bool:
        return self.beyond == 0 and self.vectors > 0 and self.requirement_ok

    def to_json(self) -> dict[str, Any]:
        bounded = any(o["basis"] == BOUND for o in self.outputs.values()) or (not self.outputs and self.basis == BOUND)
        return {"basis": self.basis, "why": self.why, "vectors": self.vectors, "arithmetic": self.arithmetic,
                "absolute_max_abs_error": self.absolute, "max_abs_error_to_exact": self.max_abs_error,
                "max_bound": self.max_bound if bounded else None,
                "max_error_to_bound": self.max_ratio if bounded else None,
                "elements_beyond": self.beyond, "first_beyond": self.first_beyond,
                "nvdla_operations": self.placement, "decisions": self.decisions, "measure": self.measure,
                "outputs": {name: dict(sorted(o.items())) for name, o in sorted(self.outputs.items())},
                "deployment_requirement": self.requirement}


def _bases(names: list[str], exact: list[dict[str, np.ndarray]], errors: list[dict[str, np.ndarray]],
           bounds: list[dict[str, np.ndarray]] | None, why: str, unit: float) -> dict[str, dict[str, Any]]:
    """Per output: the bound, unless it is unavailable or does not discriminate (not below the output's spread
    across the vectors, or more than DISCRIMINATION_RATIO times the largest measured error, counted as at least
    one rounding `unit` of the output's largest magnitude): then the absolute."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        values = np.stack([np.asarray(e[name], np.float64) for e in exact])
        entry: dict[str, Any] = {"spread": spread(values)}
        if bounds is None:
            out[name] = {**entry, "basis": ABSOLUTE, "why": why}
            continue
        largest = max(float(np.max(b[name], initial=0.0)) for b in bounds)
        measured = max(float(np.max(e[name], initial=0.0)) for e in errors)
        measured = max(measured, unit * float(np.abs(values).max(initial=0.0)), 2.0 ** -149)
        entry.update({"max_bound": largest, "max_error": measured, "bound_to_error": largest / measured})
        reasons = []
        if len(exact) >= 2:
            useful, reason = discriminating(entry["spread"], largest)
            if not useful:
                reasons.append(reason)
        if largest > DISCRIMINATION_RATIO * measured:
            reasons.append(f"the bound {largest:.3e} is {largest / measured:.3g} times the largest measured error "
                           f"{measured:.3e} (more than {DISCRIMINATION_RATIO:g} times)")
        out[name] = {**entry, "basis": ABSOLUTE if reasons else BOUND,
                     "why": "" if not reasons else f"the computed bound does not discriminate: {'; '.join(reasons)}"}
    return out


class _Float64:
    """The float64 yardstick (onnx.reference) as zero-radius balls, where the enclosure has no rule."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from pipeline.numerics.yardstick import Yardstick

        self.yardstick = Yardstick(model)

    def run(self, vector: Mapping[str, np.ndarray]) -> dict[str, Any]:
        from pipeline.numerics.doubled import exact

        return {name: exact(value) for name, value in self.yardstick.run(vector).items()}


def judge(onnx_model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray],
          absolute: float, fp16: Arithmetic | None = None, requirement: Mapping[str, float | None] | None = None,
          on_nvdla: set[str] | None = None) -> BoundJudgement:
    """`inputs`/`outputs`: ONNX names -> [N, ...]; every vector judged against the bound (or `absolute`), and
    against the deployment's stated FP16 `requirement` when there is one (pipeline.compare.nvdla_fp16: justified
    by an independent FP16 evaluation on the same vectors). `on_nvdla`: the ONNX nodes of the deployment's DLA
    items (None: all of them)."""
    fp16 = fp16 or arithmetic()
    why, measure = "", "the enclosure"
    try:
        enclosure: Any = Enclosure(onnx_model)
    except EnclosureUnavailable as error:  # the float64 yardstick instead, and why
        enclosure, measure = _Float64(onnx_model), f"the float64 yardstick (no enclosure: {error.code}: {error})"
    try:
        if on_nvdla is None:
            bound: Sensitivity | None = Sensitivity(onnx_model, [fp16])
        else:
            nodes = set(on_nvdla)
            bound = Sensitivity(onnx_model, [REFERENCE], placement=lambda op: NVDLA if op.origin in nodes else None,
                                placed={NVDLA: fp16})
    except BoundUnavailable as error:
        bound, why = None, f"{error.code}: {error}"
    count = next(iter(inputs.values())).shape[0]
    exact: list[dict[str, np.ndarray]] = []
    balls: list[dict[str, Any]] = []
    bounds: list[dict[str, np.ndarray]] | None = [] if bound is not None else None
    decisions: dict[str, Any] = {"count": 0, "within_spread": {}}
    for v in range(count):
        vector = {name: array[v] for name, array in inputs.items()}
        try:
            balls.append(enclosure.run(vector))
        except EnclosureUnavailable as error:  # not finite (deeper than double-word balls carry): the yardstick
            enclosure = _Float64(onnx_model)
            measure = f"the float64 yardstick from vector {v} (no enclosure: {error.code}: {error})"
            balls.append(enclosure.run(vector))
        exact.append({name: b.mid() for name, b in balls[-1].items()})
        if bounds is not None and bound is not None:
            try:
                results, reports = bound.run(vector)
                name_of = next(iter(results))
                bounds.append({name: b.probabilistic for name, b in results[name_of].items()})
                report = reports[name_of]
                decisions["count"] += report.decisions
                for origin, near in report.undecided.items():
                    decisions["within_spread"][origin] = decisions["within_spread"].get(origin, 0) + near
            except BoundUnavailable as error:  # data-dependent or overflow: no bound on any vector
                bounds, why = None, f"{error.code}: {error}"
    errors = []
    for v in range(count):
        errs = {}
        for name in sorted(outputs):
            got = np.asarray(outputs[name][v], np.float64).reshape(np.shape(exact[v][name]))
            _, upper = balls[v][name].distance(got)
            errs[name] = np.where(np.isnan(got), np.inf, upper)
        errors.append(errs)
    unit = fp16.storage.u if fp16.storage is not None else 2.0 ** -24
    bases = _bases(sorted(outputs), exact, errors, bounds, why, unit)
    kinds = {o["basis"] for o in bases.values()}
    basis = kinds.pop() if len(kinds) == 1 else "computed bound and absolute tolerance"
    result = BoundJudgement(basis, absolute, "; ".join(sorted({o["why"] for o in bases.values() if o["why"]})),
                            count, arithmetic=fp16.to_json(), outputs=bases, measure=measure,
                            placement=None if on_nvdla is None else sorted(on_nvdla),
                            decisions={"count": decisions["count"],
                                       "within_spread": dict(sorted(decisions["within_spread"].items()))})
    for v in range(count):
        for name in sorted(outputs):
            y = exact[v][name]
            got = np.asarray(outputs[name][v], np.float64).reshape(y.shape)
            lower, upper = balls[v][name].distance(got)
            err = np.where(np.isnan(got), np.inf, upper)
            certain = np.where(np.isnan(got), np.inf, lower)
            by_bound = bases[name]["basis"] == BOUND and bounds is not None
            limit = bounds[v][name] if by_bound else np.full(y.shape, absolute)
            result.max_abs_error = max(result.max_abs_error, float(err.max(initial=0.0)))
            if bounds is not None:
                b = bounds[v][name]
                result.max_bound = max(result.max_bound, float(b.max(initial=0.0)))
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(err == 0, 0.0, err / b)
                result.max_ratio = max(result.max_ratio, float(np.nan_to_num(ratio, nan=np.inf).max(initial=0.0)))
            over = certain > limit
            result.beyond += int(over.sum())
            if result.first_beyond is None and over.any():
                index = tuple(int(i) for i in np.argwhere(over)[0])
                result.first_beyond = {"output": name, "vector": v, "index": list(index), "value": float(got[index]),
                                       "exact": float(y[index]), "error": float(err[index]),
                                       "bound" if by_bound else "tolerance": float(limit[index])}
    if requirement:
        independent = nvdla_fp16.independent_fp16(onnx_model, inputs)
        mine = nvdla_fp16.measure(outputs, exact)
        theirs = nvdla_fp16.measure({name: independent[name] for name in outputs}, exact)
        result.requirement_ok, result.requirement_clause, result.requirement = nvdla_fp16.judge(requirement, mine,
                                                                                              theirs)
    return result


def nvdla_nodes(model: str, deployment: str, items: list[str], root: Path) -> set[str] | None:
    """The ONNX nodes of a deployment's DLA items: the lines of their legalization documents (split step) traced to
    the ONNX model by the export's provenance.json; None where a document is missing."""
    provenance_path = step_dir(model, "export", root) / "provenance.json"
    if not provenance_path.is_file():
        return None
    provenance = json.loads(provenance_path.read_text(encoding="utf-8"))
    by_line = {item["line"]: item["node"]["name"] for item in provenance["lines"] if item.get("node")}
    found: set[str] = set()
    for item in items:
        path = step_dir(model, "split", root) / deployment / f"{item}.nvdla-legalization.json"
        if not path.is_file():
            return None
        document = json.loads(path.read_text(encoding="utf-8"))
        for operation in document.get("operations", []):
            node = by_line.get(operation.get("nnef_line"))
            if node:
                found.add(node)
    return found


def judge_run(model: str, root: Path, outputs: Mapping[str, np.ndarray], absolute: float,
              requirement: Mapping[str, float | None] | None = None, deployment: str | None = None,
              items: list[str] | None = None, whole: bool = True) -> BoundJudgement:
    """`judge` on a model's execute-step input vectors; `outputs` by NNEF name, the judgement's by ONNX name.
    `whole`: every operation on the DLA; otherwise those of `items` of `deployment` (its legalization documents)."""
    to_onnx, to_nnef = onnx_names(model, root)
    from_nnef = {nnef: name for name, nnef in to_nnef.items()}
    inputs = {to_onnx.get(name, name): array for name, array in read_inputs(model, root).items()}
    renamed = {from_nnef.get(name, name): array for name, array in outputs.items()}
    on_nvdla = None
    if not whole and deployment and items:
        on_nvdla = nvdla_nodes(model, deployment, items, root)
    result = judge(onnx.load(str(model_dir(model, root) / "model.onnx")), inputs, renamed, absolute,
                   requirement=requirement, on_nvdla=on_nvdla)
    if result.first_beyond is not None:
        result.first_beyond["output"] = to_nnef.get(result.first_beyond["output"], result.first_beyond["output"])
    result.outputs = {to_nnef.get(name, name): o for name, o in result.outputs.items()}
    return result


def describe(result: BoundJudgement) -> str:
    """One clause for a check's reason."""
    parts = []
    for name, o in sorted(result.outputs.items()):
        if o["basis"] == BOUND:
            parts.append(f"{name}: within the computed FP16 bound of the exact value")
        else:
            parts.append(f"{name}: absolute tolerance {result.absolute:g} against the exact value ({o['why']})")
    text = "; ".join(parts) + f" (max |error| {result.max_abs_error:.3g}"
    if result.basis != ABSOLUTE or result.max_bound:
        text += f", max bound {result.max_bound:.3g}, tightest error/bound {result.max_ratio:.3g}"
    text += ")"
    if result.requirement_clause:
        text += f"; {result.requirement_clause}"
    if result.first_beyond is not None:
        f = result.first_beyond
        limit = f.get("bound", f.get("tolerance"))
        text += (f"; {result.beyond} element(s) beyond, first: {f['output']} vector {f['vector']} index {f['index']}: "
                 f"{f['value']:.6g} against {f['exact']:.6g}, error {f['error']:.3g} > {limit:.3g}")
    return text
