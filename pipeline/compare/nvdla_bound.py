"""HLR-NUM-004's judgement of NVDLA outputs: within the network's FP16 error bound of the float64 value.

Per vector, the float64 yardstick (pipeline.numerics.yardstick: onnx.reference in double, nobody here wrote
it) gives the network's value and pipeline.numerics.errorbound with the item's arithmetic
(`NVDLA_FP16`: FP16 storage, float32 accumulation) gives a bound computed from the ONNX model
alone, never from the loadable or the emulator. Every element must lie within its bound. Where
the bound is unavailable (no rule for an operator, or a bound reaching FP16's largest value:
errorbound's code and message), or an output's bound does not discriminate (it is not below the
output's spread across the vectors: a constant output would pass it), the requirement's
absolute parameter applies instead, against the same float64 value, and the judgement says
which applied to each output and why (docs/compare.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.compare import nvdla_fp16
from pipeline.compare.reference import onnx_names, read_inputs
from pipeline.numerics.errorbound import NVDLA_FP16, Arithmetic, BoundUnavailable, ErrorBound
from pipeline.project.layout import model_dir
from pipeline.numerics.tolerance import discriminating, spread
from pipeline.numerics.yardstick import Yardstick

BOUND, ABSOLUTE = "computed bound", "absolute tolerance"


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

    @property
    def passed(self) -> bool:
        return self.beyond == 0 and self.vectors > 0 and self.requirement_ok

    def to_json(self) -> dict[str, Any]:
        bounded = any(o["basis"] == BOUND for o in self.outputs.values()) or (not self.outputs and self.basis == BOUND)
        return {"basis": self.basis, "why": self.why, "vectors": self.vectors, "arithmetic": self.arithmetic,
                "absolute_max_abs_error": self.absolute, "max_abs_error_to_float64": self.max_abs_error,
                "max_bound": self.max_bound if bounded else None,
                "max_error_to_bound": self.max_ratio if bounded else None,
                "elements_beyond": self.beyond, "first_beyond": self.first_beyond,
                "outputs": {name: dict(sorted(o.items())) for name, o in sorted(self.outputs.items())},
                "deployment_requirement": self.requirement}


def _bases(names: list[str], exact: list[dict[str, np.ndarray]], bounds: list[dict[str, np.ndarray]] | None,
           why: str) -> dict[str, dict[str, Any]]:
    """Per output: the bound, unless it is unavailable or does not discriminate (not below the output's
    spread across the vectors, pipeline.numerics.tolerance: a constant output would pass it): then the absolute."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        values = np.stack([np.asarray(e[name], np.float64) for e in exact])
        entry: dict[str, Any] = {"spread": spread(values)}
        if bounds is None:
            out[name] = {**entry, "basis": ABSOLUTE, "why": why}
            continue
        largest = max(float(np.max(b[name], initial=0.0)) for b in bounds)
        entry["max_bound"] = largest
        if len(exact) < 2:
            out[name] = {**entry, "basis": BOUND, "why": "discrimination not evaluated (fewer than two vectors)"}
            continue
        useful, reason = discriminating(entry["spread"], largest)
        out[name] = {**entry, "basis": BOUND if useful else ABSOLUTE,
                     "why": "" if useful else f"the computed bound does not discriminate: {reason}"}
    return out


def judge(onnx_model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray],
          absolute: float, arithmetic: Arithmetic = NVDLA_FP16,
          requirement: Mapping[str, float | None] | None = None) -> BoundJudgement:
    """`inputs`/`outputs`: ONNX names -> [N, ...]; every vector judged against bound (or `absolute`), and against
    the deployment's stated FP16 `requirement` when there is one (pipeline.compare.nvdla_fp16: justified by an
    independent FP16 evaluation on the same vectors)."""
    try:
        bound: ErrorBound | None = ErrorBound(onnx_model, arithmetic)
        why = ""
    except BoundUnavailable as error:
        bound, why = None, f"{error.code}: {error}"
    yardstick = Yardstick(onnx_model)
    count = next(iter(inputs.values())).shape[0]
    exact: list[dict[str, np.ndarray]] = []
    bounds: list[dict[str, np.ndarray]] | None = [] if bound is not None else None
    for v in range(count):
        vector = {name: array[v] for name, array in inputs.items()}
        exact.append(yardstick.run(vector))
        if bounds is not None and bound is not None:
            try:
                bounds.append({name: b.e for name, b in bound.run(vector).items()})
            except BoundUnavailable as error:  # data-dependent or overflow: no bound on any vector
                bounds, why = None, f"{error.code}: {error}"
    bases = _bases(sorted(outputs), exact, bounds, why)
    kinds = {o["basis"] for o in bases.values()}
    basis = kinds.pop() if len(kinds) == 1 else "computed bound and absolute tolerance"
    result = BoundJudgement(basis, absolute, "; ".join(sorted({o["why"] for o in bases.values() if o["why"]})),
                            count, arithmetic=arithmetic.to_json(), outputs=bases)
    for v in range(count):
        for name in sorted(outputs):
            y = np.asarray(exact[v][name], np.float64)
            got = np.asarray(outputs[name][v], np.float64).reshape(y.shape)
            err = np.abs(got - y)
            err = np.where(np.isnan(got) | np.isnan(y), np.inf, err)
            by_bound = bases[name]["basis"] == BOUND and bounds is not None
            limit = bounds[v][name] if by_bound else np.full(y.shape, absolute)
            result.max_abs_error = max(result.max_abs_error, float(err.max(initial=0.0)))
            if bounds is not None:
                b = bounds[v][name]
                result.max_bound = max(result.max_bound, float(b.max(initial=0.0)))
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(err == 0, 0.0, err / b)
                result.max_ratio = max(result.max_ratio, float(np.nan_to_num(ratio, nan=np.inf).max(initial=0.0)))
            over = err > limit
            result.beyond += int(over.sum())
            if result.first_beyond is None and over.any():
                index = tuple(int(i) for i in np.argwhere(over)[0])
                result.first_beyond = {"output": name, "vector": v, "index": list(index), "value": float(got[index]),
                                       "float64": float(y[index]), "error": float(err[index]),
                                       "bound" if by_bound else "tolerance": float(limit[index])}
    if requirement:
        independent = nvdla_fp16.independent_fp16(onnx_model, inputs)
        mine = nvdla_fp16.measure(outputs, exact)
        theirs = nvdla_fp16.measure({name: independent[name] for name in outputs}, exact)
        result.requirement_ok, result.requirement_clause, result.requirement = nvdla_fp16.judge(requirement, mine,
                                                                                              theirs)
    return result


def judge_run(model: str, root: Path, outputs: Mapping[str, np.ndarray], absolute: float,
              requirement: Mapping[str, float | None] | None = None) -> BoundJudgement:
    """`judge` on a model's execute-step input vectors; `outputs` by NNEF name, the judgement's by ONNX name."""
    to_onnx, to_nnef = onnx_names(model, root)
    from_nnef = {nnef: name for name, nnef in to_nnef.items()}
    inputs = {to_onnx.get(name, name): array for name, array in read_inputs(model, root).items()}
    renamed = {from_nnef.get(name, name): array for name, array in outputs.items()}
    result = judge(onnx.load(str(model_dir(model, root) / "model.onnx")), inputs, renamed, absolute,
                   requirement=requirement)
    if result.first_beyond is not None:
        result.first_beyond["output"] = to_nnef.get(result.first_beyond["output"], result.first_beyond["output"])
    result.outputs = {to_nnef.get(name, name): o for name, o in result.outputs.items()}
    return result


def describe(result: BoundJudgement) -> str:
    """One clause for a check's reason."""
    parts = []
    for name, o in sorted(result.outputs.items()):
        if o["basis"] == BOUND:
            parts.append(f"{name}: within the computed FP16 bound of the float64 value")
        else:
            parts.append(f"{name}: absolute tolerance {result.absolute:g} against the float64 value ({o['why']})")
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
                 f"{f['value']:.6g} against {f['float64']:.6g}, error {f['error']:.3g} > {limit:.3g}")
    return text
