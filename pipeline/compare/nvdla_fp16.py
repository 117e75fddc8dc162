"""The FP16 requirement a deployment states (deploy.yaml `fp16`), judged and justified.

A deployment with nvdla items may state what its FP16 outputs must meet against the network's
exact value (the enclosure's midpoint, pipeline.compare.nvdla_bound; "float64" below, its name before issue 41): `max_abs_error`, `max_rel_error` (per element, |error| / |value|, where the value is not
0) and `top1_agreement` (the share of vectors whose largest output element is the float64
value's). Each stated limit is justified as the float32 tolerance is (pipeline/numerics/tolerance.py):
against an evaluation nobody here wrote, onnxruntime running the model converted to float16
(onnxruntime.transformers.float16 `convert_float_to_float16`, inputs and outputs kept float32) on
the same vectors. A limit the independent FP16 evaluation meets is one FP16 arithmetic can meet;
a limit it misses asks more of FP16 than an independent implementation delivers, and the
judgement says so (the requirement is then not justified and the check fails, naming the
measured figure a justified limit would need).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import onnx

LIMITS = ("max_abs_error", "max_rel_error", "top1_agreement")


@dataclass(frozen=True)
class Fp16Measure:
    max_abs_error: float
    max_rel_error: float
    top1_agreement: float

    def to_json(self) -> dict[str, float]:
        return {"max_abs_error": self.max_abs_error, "max_rel_error": self.max_rel_error,
                "top1_agreement": self.top1_agreement}


def measure(outputs: Mapping[str, np.ndarray], exact: list[dict[str, np.ndarray]]) -> Fp16Measure:
    """`outputs`: name -> [N, ...]; `exact`: per vector, name -> the float64 value."""
    abs_error = rel_error = 0.0
    agree, count = 0, 0
    for v, values in enumerate(exact):
        for name in sorted(outputs):
            y = np.asarray(values[name], np.float64)
            got = np.asarray(outputs[name][v], np.float64).reshape(y.shape)
            err = np.where(np.isnan(got) | np.isnan(y), np.inf, np.abs(got - y))
            abs_error = max(abs_error, float(err.max(initial=0.0)))
            nonzero = y != 0
            if nonzero.any():
                rel_error = max(rel_error, float((err[nonzero] / np.abs(y[nonzero])).max()))
            if y.size > 1:
                agree += int(np.argmax(got) == np.argmax(y))
                count += 1
    return Fp16Measure(abs_error, rel_error, agree / count if count else 1.0)


def independent_fp16(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime on the float16 conversion of `model`: outputs by ONNX name, [N, ...] float32."""
    import onnxruntime as ort
    from onnxruntime.transformers.float16 import convert_float_to_float16

    half = convert_float_to_float16(model, keep_io_types=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(half.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    count = next(iter(inputs.values())).shape[0]
    runs = [session.run(names, {k: np.asarray(a[v], np.float32) for k, a in inputs.items()}) for v in range(count)]
    return {name: np.stack([np.asarray(r[i], np.float32) for r in runs]) for i, name in enumerate(names)}


def judge(requirement: Mapping[str, float | None], dla: Fp16Measure, independent: Fp16Measure
          ) -> tuple[bool, str, dict[str, Any]]:
    """(met and justified, the clause for the check's reason, the document): every stated limit against the DLA's
    measure and the independent FP16 evaluation's."""
    clauses, ok = [], True
    doc: dict[str, Any] = {"stated": dict(requirement), "dla": dla.to_json(),
                           "independent_fp16": {**independent.to_json(),
                                                "evaluation": "onnxruntime on the model converted to float16 "
                                                              "(onnxruntime.transformers.float16, I/O float32)"},
                           "limits": {}}
    for name in LIMITS:
        limit = requirement.get(name)
        if limit is None:
            continue
        mine, theirs = getattr(dla, name), getattr(independent, name)
        higher_is_better = name == "top1_agreement"
        met = mine >= limit if higher_is_better else mine <= limit
        justified = theirs >= limit if higher_is_better else theirs <= limit
        ok = ok and met and justified
        doc["limits"][name] = {"limit": limit, "dla": mine, "independent_fp16": theirs, "met": met,
                               "justified": justified}
        word = "at least" if higher_is_better else "at most"
        clause = f"{name} {word} {limit:g}: {mine:.3g} ({'met' if met else 'not met'})"
        clause += (f", justified (independent FP16 evaluation {theirs:.3g})" if justified else
                   f", not justified: the independent FP16 evaluation reaches only {theirs:.3g}")
        clauses.append(clause)
    return ok, "deployment FP16 requirement: " + "; ".join(clauses), doc
