"""Shared helpers for the semantics tests: run one kernel, run one ONNX node, tolerances.

Tolerance used against onnxruntime / onnx.reference (they sum in other orders, use BLAS
and their own exp), stated once here:

- reductions of n terms (conv, matmul, pooling sums, reduce): the classical forward
  error bound of recursive summation, |computed - exact| <= n * u * sum|terms|, with
  u = 2^-24, for each side, so |ours - theirs| <= 2 * (n + 1) * u * sum|terms|. The
  magnitude sum|terms| is computed by the same operation on |operands|.
- element-wise functions: a few float32 ULPs (stated per test).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from pipeline.semantics import lookup

F32 = np.float32
U = 2.0 ** -24
OPSET = 19

_ONNX_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def run(op: str, inputs: dict[str, Any], dtype: str | None = None, **attribs: Any) -> tuple[Any, ...]:
    """Call the registered kernel of `op` directly (floating-point warnings silenced)."""
    with np.errstate(all="ignore"):
        return tuple(lookup(op)(inputs, attribs, dtype))


def one(op: str, inputs: dict[str, Any], dtype: str | None = None, **attribs: Any) -> np.ndarray:
    return run(op, inputs, dtype, **attribs)[0]


def rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(F32)


def onnx_model(op_type: str, inputs: dict[str, np.ndarray], attrs: dict[str, Any] | None = None,
               outputs: Sequence[tuple[str, np.dtype]] = (("out", np.dtype(np.float32)),),
               opset: int = OPSET, input_names: Sequence[str] | None = None) -> onnx.ModelProto:
    """A one-node model; `input_names` may contain '' for an omitted optional input."""
    names = list(input_names) if input_names is not None else list(inputs)
    node = helper.make_node(op_type, names, [n for n, _ in outputs], **(attrs or {}))
    graph = helper.make_graph(
        [node], "one",
        [helper.make_tensor_value_info(n, _ONNX_TYPES[a.dtype], list(a.shape)) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, _ONNX_TYPES[np.dtype(t)], None) for n, t in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def ort(op_type: str, inputs: dict[str, np.ndarray], attrs: dict[str, Any] | None = None, **kwargs: Any) -> list[np.ndarray]:
    """Run one ONNX node with onnxruntime (single thread: reproducible)."""
    import onnxruntime

    model = onnx_model(op_type, inputs, attrs, **kwargs)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {k: v for k, v in inputs.items()})


def reference(op_type: str, inputs: dict[str, np.ndarray], attrs: dict[str, Any] | None = None, **kwargs: Any) -> list[np.ndarray]:
    """Run one ONNX node with onnx.reference.ReferenceEvaluator."""
    from onnx.reference import ReferenceEvaluator

    model = onnx_model(op_type, inputs, attrs, **kwargs)
    return ReferenceEvaluator(model).run(None, dict(inputs))


def assert_bounded(ours: np.ndarray, theirs: np.ndarray, terms: int, magnitude: np.ndarray | float) -> None:
    """|ours - theirs| <= 2 (terms + 1) u magnitude (+ an ULP of the result, + 1e-30)."""
    ours = np.asarray(ours)
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == np.float32, ours.dtype
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    bound = 2 * (terms + 1) * U * np.asarray(magnitude, dtype=np.float64) + U * np.abs(theirs) + 1e-30
    both_nan = np.isnan(ours) & np.isnan(theirs)
    same_inf = np.isinf(ours) & (ours == theirs)
    bad = ~((diff <= bound) | both_nan | same_inf)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} outside the bound; worst diff {diff[bad].max():.3g} "
        f"vs bound {bound[bad].min():.3g}; first at {np.argwhere(bad)[0].tolist()}")


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 units in the last place (0 for equal values, NaNs equal)."""
    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.asarray(x, dtype=F32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(a) - ordered(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def assert_ulp(ours: np.ndarray, theirs: np.ndarray, ulps: int) -> None:
    ours = np.asarray(ours)
    theirs = np.asarray(theirs, dtype=F32)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == np.float32, ours.dtype
    d = ulp_distance(ours, theirs)
    assert d.max(initial=0) <= ulps, f"max {int(d.max())} ULP > {ulps} at {np.argmax(d)}: {ours.ravel()[np.argmax(d)]} vs {theirs.ravel()[np.argmax(d)]}"


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.asarray(a)
    b = np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def nchw_pads(padding: Sequence[tuple[int, int]]) -> list[int]:
    """NNEF [(p0, q0), (p1, q1)] -> ONNX pads [p0, p1, q0, q1]."""
    return [p for p, _ in padding] + [q for _, q in padding]


def same_bits_any_nan(a: np.ndarray, b: np.ndarray) -> bool:
    """same_bits, except that a NaN equals any NaN (payload and sign are not specified:
    docs/semantics/index.md); every other value, -0 and +0 included, must have its bits."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()
