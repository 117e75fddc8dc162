"""Issue 41: every operator rule, on small seeded networks that exercise all of them.

For each operation of each network: the Jacobian (`jvp`) against central finite differences of the rule's own
float64 value, `vjp` the adjoint of `jvp` (<J t, g> = <t, J^T g>), the enclosure's ball containing the float64
value (to 1e-9 of its magnitude), and onnxruntime's value (a float32 evaluation nobody here wrote) within 1e-4
of it. Every registered rule is exercised (the last test counts them). The order statistics of dot products
against a brute-force walk of every nesting.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

from pipeline.numerics.enclosure import Enclosure
from pipeline.numerics.graph import prepare
from pipeline.numerics.rules import rule_of, rules
from pipeline.numerics.rules.linear import order_stats
from pipeline.numerics.sensitivity import Sensitivity
from pipeline.numerics.arithmetic import REFERENCE
from tests.export import helpers as H


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.4) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _vision(seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    init = {"w": _w(rng, 6, 4, 3, 3), "b": _w(rng, 6), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1]),
            "slope": rng.uniform(0.05, 0.3, (1, 6, 1, 1)).astype(np.float32),
            "st": np.array([0, 1]), "en": np.array([3, 7]), "ax": np.array([1, 3]),
            "s": rng.uniform(0.5, 1.5, 3).astype(np.float32), "o": _w(rng, 3), "m": _w(rng, 3),
            "v": rng.uniform(0.5, 2, 3).astype(np.float32), "wd": _w(rng, 3, 1, 3, 3),
            "wt": _w(rng, 3, 2, 2, 2), "scales": np.array([1, 1, 2, 2], np.float32),
            "lo": np.array(-3.0, np.float32), "hi": np.array(3.0, np.float32)}  # no value clipped: no ties
    nodes = [H.node("Pad", ["x", "pads"], ["p"], mode="constant"),
             H.node("Conv", ["p", "w", "b"], ["c"], kernel_shape=[3, 3]),
             H.node("PRelu", ["c", "slope"], ["r"]),
             H.node("Split", ["r"], ["s0", "s1"], axis=1),
             H.node("Max", ["s0", "s1"], ["mx"]), H.node("Min", ["s0", "s1"], ["mn"]),
             H.node("Sum", ["mx", "mn", "s0"], ["sm"]),
             H.node("BatchNormalization", ["sm", "s", "o", "m", "v"], ["bn"], epsilon=1e-3),
             H.node("Conv", ["bn", "wd"], ["dw"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=3),
             H.node("LeakyRelu", ["dw"], ["lk"], alpha=0.1),
             H.node("MaxPool", ["lk"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             H.node("AveragePool", ["lk"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             H.node("Add", ["mp", "ap"], ["sum2"]),
             H.node("Clip", ["sum2", "lo", "hi"], ["cl"]),
             H.node("ConvTranspose", ["cl", "wt"], ["ct"], kernel_shape=[2, 2], strides=[2, 2], group=1),
             H.node("Resize", ["ct", "", "scales"], ["rs"], mode="linear"),
             H.node("Resize", ["ct", "", "scales"], ["rn"], mode="nearest"),
             H.node("Slice", ["rs", "st", "en", "ax"], ["sl"]),
             H.node("GlobalMaxPool", ["sl"], ["gm"]),
             H.node("GlobalAveragePool", ["rn"], ["ga"]),
             H.node("ReduceMean", ["sl"], ["rm"], axes=[2, 3], keepdims=1),
             H.node("Concat", ["gm", "ga", "rm"], ["cc"], axis=1),
             H.node("Relu", ["cc"], ["re"]),
             H.node("Transpose", ["re"], ["y"], perm=[0, 2, 3, 1])]
    return H.make_model(nodes, {"x": [1, 4, 8, 8]}, {"y": None}, init)


def _smooth(seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    init = {"w": _w(rng, 12, 8), "b": _w(rng, 8), "two": np.array(2.0, np.float32),
            "three": np.array(3.0, np.float32), "half": np.array(0.5, np.float32), "shape": np.array([4, 4]),
            "g": np.array([1, 0, 3]), "ax": np.array([0]), "e": np.array([2, 4, 3]),
            "mask": np.array([True, False, True, False]), "other": _w(rng, 4)}
    nodes = [H.node("Gemm", ["x", "w", "b"], ["g1"], alpha=0.7, beta=1.3),
             H.node("Sigmoid", ["g1"], ["sg"]), H.node("Tanh", ["g1"], ["th"]),
             H.node("Mul", ["sg", "th"], ["mu"]), H.node("Exp", ["mu"], ["ex"]),
             H.node("Log", ["ex"], ["lg"]), H.node("Add", ["ex", "two"], ["ex2"]),
             H.node("Sqrt", ["ex2"], ["sq"]), H.node("Div", ["lg", "sq"], ["dv"]),
             H.node("Erf", ["dv"], ["er"]), H.node("Sub", ["er", "th"], ["sb"]),
             H.node("Pow", ["sb", "two"], ["p2"]), H.node("Pow", ["sb", "three"], ["p3"]),
             H.node("Pow", ["ex2", "half"], ["ph"]),
             H.node("Add", ["p2", "p3"], ["a1"]), H.node("Add", ["a1", "ph"], ["a2"]),
             H.node("HardSigmoid", ["a2"], ["hs"], alpha=0.3, beta=0.4), H.node("HardSwish", ["g1"], ["hw"]),
             H.node("Mul", ["hs", "hw"], ["m2"]),
             H.node("Reshape", ["m2", "shape"], ["rs"]), H.node("Gather", ["rs", "g"], ["ga"], axis=1),
             H.node("Unsqueeze", ["ga", "ax"], ["un"]), H.node("Squeeze", ["un", "ax"], ["sq2"]),
             H.node("Expand", ["sq2", "e"], ["xp"]), H.node("Identity", ["xp"], ["id"]),
             H.node("Cast", ["id"], ["cs"], to=onnx.TensorProto.FLOAT),
             H.node("Softmax", ["cs"], ["sm"], axis=-1), H.node("LogSoftmax", ["cs"], ["ls"], axis=-1),
             H.node("Mul", ["sm", "ls"], ["mm"]),
             H.node("Flatten", ["mm"], ["fl"], axis=1),
             H.node("Where", ["mask", "other", "other"], ["wh"]),
             H.node("Dropout", ["fl"], ["y"])]
    return H.make_model(nodes, {"x": [2, 12]}, {"y": None, "wh": None}, init, opset=14)


def _sequence(seed: int) -> onnx.ModelProto:
    """LayerNormalization, Gelu (both forms), batched MatMul of two activations, LRN, GRU, LSTM."""
    rng = np.random.default_rng(seed)
    d, h = 6, 5
    init = {"scale": rng.uniform(0.5, 1.5, d).astype(np.float32), "bias": _w(rng, d), "wq": _w(rng, d, d),
            "W": _w(rng, 1, 3 * h, d), "R": _w(rng, 1, 3 * h, h), "B": _w(rng, 1, 6 * h),
            "W4": _w(rng, 2, 4 * h, d), "R4": _w(rng, 2, 4 * h, h), "B4": _w(rng, 2, 8 * h), "P4": _w(rng, 2, 3 * h),
            "perm4": np.array([1, 4, 3, 3])}
    nodes = [H.node("LayerNormalization", ["x", "scale", "bias"], ["ln"], axis=-1, epsilon=1e-5),
             H.node("Gelu", ["ln"], ["ge"]), H.node("Gelu", ["ln"], ["gt"], approximate="tanh"),
             H.node("MatMul", ["ge", "wq"], ["q"]), H.node("Transpose", ["gt"], ["kt"], perm=[1, 0, 2]),
             H.node("Transpose", ["kt"], ["kt2"], perm=[1, 2, 0]),
             H.node("MatMul", ["q", "kt2"], ["att"]),
             H.node("GRU", ["ln", "W", "R", "B"], ["gy", "gh"], hidden_size=h, linear_before_reset=1),
             H.node("LSTM", ["ln", "W4", "R4", "B4", "", "", "", "P4"], ["ly", "lh", "lc"], hidden_size=h,
                    direction="bidirectional"),
             H.node("Reshape", ["att", "perm4"], ["a4"]),
             H.node("LRN", ["a4"], ["lr"], size=3, alpha=0.2, beta=0.75, bias=1.5)]
    return H.make_model(nodes, {"x": [4, 3, d]}, {"lr": None, "gy": None, "gh": None, "ly": None, "lc": None},
                        init, opset=20)


def _masked(seed: int) -> onnx.ModelProto:
    """Issue 38's attention masks (a constant -inf added, a mask built from constants and folded, Where selecting
    -inf by a constant condition) into softmaxes, and the selections torch writes, on computed tensors."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    d, n = 6, 4
    causal = np.triu(np.full((n, n), -np.inf, np.float32), k=1)
    init = {"wq": _w(rng, d, d), "wk": _w(rng, d, d), "mask": causal, "minf": np.array(-np.inf, np.float32),
            "cond": np.tril(np.ones((n, n), bool), k=-1), "shape": np.array([n, n]), "one": np.array(1),
            "reps": np.array([1, 2, 1]), "nd": np.array([[0, 1], [0, 3]]),
            "ge": rng.integers(0, n, (1, n, 2)), "snd": np.array([[0, 2]]),
            "se": rng.integers(0, n, (1, 1, n))}
    minus = numpy_helper.from_array(np.array([-np.inf], np.float32))
    nodes = [H.node("MatMul", ["x", "wq"], ["q"]), H.node("MatMul", ["x", "wk"], ["k"]),
             H.node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), H.node("MatMul", ["q", "kt"], ["s"]),
             H.node("Add", ["s", "mask"], ["m1"]), H.node("Softmax", ["m1"], ["p1"], axis=-1),
             H.node("ConstantOfShape", ["shape"], ["full"], value=minus),
             H.node("Trilu", ["full", "one"], ["built"], upper=1),
             H.node("Add", ["built", "s"], ["m2"]), H.node("Softmax", ["m2"], ["p2"], axis=-1),
             H.node("Where", ["cond", "minf", "s"], ["m3"]), H.node("Softmax", ["m3"], ["p3"], axis=-1),
             H.node("Add", ["p1", "p2"], ["a0"]), H.node("Add", ["a0", "p3"], ["a"]),
             H.node("Trilu", ["a"], ["t1"], upper=0), H.node("Tile", ["t1", "reps"], ["t2"]),
             H.node("GatherND", ["a", "nd"], ["g1"]), H.node("GatherElements", ["a", "ge"], ["g2"], axis=2),
             H.node("ReduceMean", ["a"], ["r0"], axes=[1], keepdims=0),
             H.node("ReduceMean", ["a"], ["r1"], axes=[1], keepdims=1),
             H.node("ScatterND", ["a", "snd", "r0"], ["s1"]),
             H.node("ScatterElements", ["a", "se", "r1"], ["s2"], axis=1)]
    return H.make_model(nodes, {"x": [1, n, d]}, {"t2": None, "g1": None, "g2": None, "s1": None, "s2": None},
                        init, opset=17)


NETWORKS = {"vision": _vision, "smooth": _smooth, "sequence": _sequence, "masked": _masked}
_SEEN: set[str] = set()


def _inputs(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    return H.random_inputs(model, seed, -1.5, 1.5)


def _perturbed(op: Any, ins: list[Any], ctx: Any, k: int, t: np.ndarray, h: float) -> list[np.ndarray]:
    changed = list(ins)
    changed[k] = ins[k] + h * t
    return rule_of(op).linearize(op, changed, ctx).outputs


@pytest.mark.parametrize("name", sorted(NETWORKS))
@pytest.mark.parametrize("seed", range(2))
def test_every_rule_jacobian_adjoint_and_enclosure(name: str, seed: int) -> None:
    model = NETWORKS[name](seed)
    feeds = _inputs(model, seed)
    graph = prepare(model)
    sens = Sensitivity(graph, [REFERENCE])
    env, steps = sens._forward(feeds)
    rng = np.random.default_rng(seed + 100)
    names = {o for op in graph.ops for o in op.outputs if o}
    balls = Enclosure(graph).run(feeds, keep=names)
    for op, step in zip(graph.ops, steps):
        _SEEN.add(op.op_type)
        ins = [env[n] if n else None for n in op.inputs]
        floats = [k for k, n in enumerate(op.inputs) if n and not graph.is_constant(n)
                  and np.asarray(env[n]).dtype.kind == "f"]
        for out_name, value in zip(op.outputs, step.outputs):
            if out_name and np.asarray(value).dtype.kind == "f":
                ball = balls[out_name]
                masked = np.isneginf(value)  # a mask's -inf: exactly -inf in the enclosure too
                assert np.array_equal(np.isneginf(ball.hi), masked) and not np.any(ball.rad[masked]), op.origin
                lower, upper = ball.distance(np.where(masked, 0.0, value))
                upper = np.where(masked, 0.0, upper)
                assert float(upper.max(initial=0)) <= 1e-9 * max(1.0, float(np.abs(value[~masked]).max(initial=0))), \
                    (op.op_type, op.origin)
        if not floats or not all(np.asarray(o).dtype.kind == "f" for o in step.outputs):
            continue
        tangents = [rng.standard_normal((1,) + np.shape(env[n])) if k in floats else None
                    for k, n in enumerate(op.inputs)]
        jt = step.jvp(tangents)
        cot = [rng.standard_normal((1,) + np.shape(o)) for o in step.outputs]
        back = step.vjp(cot, [k in floats for k in range(len(op.inputs))])
        left = sum(float((np.broadcast_to(j, c.shape) * c).sum()) for j, c in zip(jt, cot) if j is not None)
        right = sum(float((tangents[k] * back[k]).sum()) for k in floats if back[k] is not None)
        assert left == pytest.approx(right, rel=1e-9, abs=1e-9), (op.op_type, op.origin)
        h = 1e-6
        total = [np.zeros(np.shape(o)) for o in step.outputs]
        for k in floats:
            plus = _perturbed(op, ins, sens.ctx, k, tangents[k][0], h)
            minus = _perturbed(op, ins, sens.ctx, k, tangents[k][0], -h)
            for i in range(len(total)):
                total[i] = total[i] + (plus[i] - minus[i]) / (2 * h)
        for j, fd, value in zip(jt, total, step.outputs):
            if j is not None:
                masked = np.isneginf(value)  # -inf - -inf: no difference quotient; the Jacobian is 0 there
                assert not np.any(np.broadcast_to(j[0], fd.shape)[masked]), op.origin
                np.testing.assert_allclose(np.broadcast_to(j[0], fd.shape)[~masked], fd[~masked], rtol=2e-4,
                                           atol=2e-4, err_msg=f"{op.op_type} {op.origin}")
    ort = H.run_ort(model, feeds)
    for out in graph.outputs:
        np.testing.assert_allclose(ort[out], balls[out].mid(), rtol=1e-4, atol=1e-4)


def test_every_registered_rule_was_exercised() -> None:
    if not _SEEN:
        for name in NETWORKS:
            _SEEN.update(op.op_type for op in prepare(NETWORKS[name](0)).ops)
    missing = sorted(set(rules()) - _SEEN - {"Mod"})  # Mod: exact integer shape arithmetic only (folded)
    assert not missing, missing


def _brute(w: np.ndarray, cols: np.ndarray, bias: np.ndarray, cg: int, taps: int) -> tuple[np.ndarray, ...]:
    n, g, _, p = cols.shape
    og = w.shape[1]
    perms = [[c * taps + t for c in range(cg) for t in range(taps)], [c * taps + t for t in range(taps) for c in range(cg)]]
    for b in (8, 16):
        perms.append([c * taps + t for s in range(0, cg, b) for t in range(taps) for c in range(s, min(cg, s + b))])
    r = np.zeros((n, g, og, p))
    a1 = np.zeros_like(r)
    a2 = np.zeros_like(r)
    for index in np.ndindex(n, g, og, p):
        ni, gi, o, pi = index
        terms = w[gi, o] * cols[ni, gi, :, pi]
        best = 0.0
        for perm in perms:
            prefix = np.concatenate([[0.0], np.cumsum(terms[perm])])
            for values in (np.concatenate([prefix, [prefix[-1] + bias[gi, o]]]), np.concatenate([[0.0], bias[gi, o] + prefix])):
                best = max(best, values.max() - values.min())
        r[index] = best
        rounded = list(np.cumsum(terms)[1:]) + [np.cumsum(terms)[-1] + bias[gi, o]]
        a1[index], a2[index] = np.abs(rounded).sum(), np.square(rounded).sum()
    return r, a1, a2


@pytest.mark.parametrize("cg,taps,groups", [(20, 9, 1), (3, 4, 2), (17, 1, 1), (1, 9, 3)])
def test_order_statistics_bound_every_nesting(cg: int, taps: int, groups: int) -> None:
    rng = np.random.default_rng(cg)
    w = rng.standard_normal((groups, 2, cg * taps))
    cols = rng.standard_normal((2, groups, cg * taps, 3))
    bias = rng.standard_normal((groups, 2))
    stats = order_stats(w, cols, bias, cg, taps)
    for key, value in zip(("R", "A1", "A2"), _brute(w, cols, bias, cg, taps)):
        assert np.all(stats[key] >= value) and np.all(stats[key] <= value * (1 + 2e-3) + 1e-9), key
