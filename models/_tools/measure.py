"""Measure the shipped models (project environment: numpy, onnx, onnxruntime, pyyaml).

    .venv/bin/python models/_tools/measure.py [MODEL ...]      # default: every models/<m>/

Prints, per model, the facts its README records: operators, parameter count, multiply-
accumulates, file size and SHA-256, the onnxruntime output shape and single-inference time,
and the errors that justify deploy.yaml's tolerance, on the validation vectors of deploy.yaml
(numpy default_rng(seed).uniform(low, high), one vector at a time): onnxruntime (float32)
against onnx.reference evaluating a float64 copy of the model, and a one-term-at-a-time
float32 evaluation (`seq32`, the accumulation order of the reference semantics) against both.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import yaml
from onnx import TensorProto, numpy_helper
from onnx.reference import ReferenceEvaluator

MODELS = Path(__file__).resolve().parents[1]


def to_float64(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            m.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.DOUBLE
    return m


def seq32(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """A float32 evaluation that accumulates one term at a time (conv: over input channel,
    kernel row, kernel column, bias last; Gemm: over k, bias last; pools: window row-major),
    i.e. the order the project's reference semantics specifies. Only an estimate for
    choosing tolerances (exp from NumPy), not the reference itself."""
    f = np.float32
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env[model.graph.input[0].name] = x
    for n in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [env[k] for k in n.input if k]
        op = n.op_type
        if op == "Conv":
            xin, w = i[0][0], i[1]
            co, ci, kh, kw = w.shape
            s_h, s_w = a.get("strides", [1, 1])
            pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
            xp = np.pad(xin, ((0, 0), (pt, pb), (pl, pr)))
            ho = (xp.shape[1] - kh) // s_h + 1
            wo = (xp.shape[2] - kw) // s_w + 1
            acc = np.zeros((co, ho, wo), f)
            for c in range(ci):
                for ky in range(kh):
                    for kx in range(kw):
                        patch = xp[c, ky:ky + s_h * (ho - 1) + 1:s_h, kx:kx + s_w * (wo - 1) + 1:s_w]
                        acc = acc + w[:, c, ky, kx][:, None, None] * patch[None]
            if len(i) > 2:
                acc = acc + i[2][:, None, None]
            y = acc[None]
        elif op == "Gemm":
            A, B = i[0], i[1]
            if a.get("transB", 0):
                B = B.T
            acc = np.zeros((A.shape[0], B.shape[1]), f)
            for k in range(A.shape[1]):
                acc = acc + A[:, k:k + 1] * B[k][None]
            y = acc + i[2][None] if len(i) > 2 else acc
        elif op in ("MaxPool", "AveragePool"):
            xin = i[0][0]
            kh, kw = a["kernel_shape"]
            s_h, s_w = a.get("strides", [1, 1])
            pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
            fill = -np.inf if op == "MaxPool" else 0.0
            xp = np.pad(xin, ((0, 0), (pt, pb), (pl, pr)), constant_values=fill)
            ho = (xp.shape[1] - kh) // s_h + 1
            wo = (xp.shape[2] - kw) // s_w + 1
            acc = None
            for ky in range(kh):
                for kx in range(kw):
                    patch = xp[:, ky:ky + s_h * (ho - 1) + 1:s_h, kx:kx + s_w * (wo - 1) + 1:s_w]
                    acc = patch if acc is None else (np.maximum(acc, patch) if op == "MaxPool" else acc + patch)
            y = (acc if op == "MaxPool" else acc / f(kh * kw))[None].astype(f)
        elif op == "GlobalAveragePool":
            xin = i[0][0]
            acc = np.zeros(xin.shape[0], f)
            for v in xin.reshape(xin.shape[0], -1).T:
                acc = acc + v
            y = (acc / f(xin.shape[1] * xin.shape[2]))[None, :, None, None]
        elif op == "BatchNormalization":
            xin, sc, b, m, v = i
            r = lambda t: t[None, :, None, None]  # noqa: E731
            y = (xin - r(m)) / np.sqrt(r(v) + f(a.get("epsilon", 1e-5))) * r(sc) + r(b)
        elif op == "Relu":
            y = np.maximum(i[0], f(0))
        elif op == "Add":
            y = i[0] + i[1]
        elif op == "Concat":
            y = np.concatenate(i, axis=a["axis"])
        elif op == "Flatten":
            y = i[0].reshape(1, -1)
        elif op == "Softmax":
            e = np.exp(i[0] - i[0].max(axis=1, keepdims=True))
            acc = np.zeros((1, 1), f)
            for k in range(e.shape[1]):
                acc = acc + e[:, k:k + 1]
            y = e / acc
        else:
            raise NotImplementedError(op)
        env[n.output[0]] = np.asarray(y, dtype=f)
    return env[model.graph.output[0].name]


def macs(model: onnx.ModelProto) -> int:
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in model.graph.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            total += int(np.prod(shapes[n.output[0]])) * int(np.prod(w[1:]))
        elif n.op_type == "Gemm":
            a, b = shapes[n.input[0]], shapes[n.input[1]]
            total += a[0] * a[1] * (b[0] if any(x.name == "transB" and x.i for x in n.attribute) else b[1])
    return total


def vectors(spec: dict, name: str) -> np.ndarray:
    inp = spec["inputs"][name]
    dist = inp["distribution"]
    assert dist["kind"] == "uniform"
    rng = np.random.default_rng(spec["validation"]["seed"])
    n = spec["validation"]["vectors"]
    return rng.uniform(dist["low"], dist["high"], size=(n, *inp["shape"])).astype(np.float32)


def measure(name: str) -> dict:
    d = MODELS / name
    data = (d / "model.onnx").read_bytes()
    model = onnx.load_from_string(data)
    spec = yaml.safe_load((d / "deploy.yaml").read_text())
    (in_name,) = spec["inputs"]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    ref64 = ReferenceEvaluator(to_float64(model))
    xs = vectors(spec, in_name)
    abs_err, rel_err, out_max, seq_err, seq_ort = 0.0, 0.0, 0.0, 0.0, 0.0
    for x in xs:
        y32 = sess.run(None, {in_name: x})[0].astype(np.float64)
        y64 = ref64.run(None, {in_name: x.astype(np.float64)})[0]
        ys = seq32(model, x).astype(np.float64)
        seq_err = max(seq_err, float(np.abs(ys - y64).max()))
        seq_ort = max(seq_ort, float(np.abs(ys - y32).max()))
        e = np.abs(y32 - y64)
        abs_err = max(abs_err, float(e.max()))
        rel_err = max(rel_err, float((e / np.maximum(np.abs(y64), 1e-30)).max()))
        out_max = max(out_max, float(np.abs(y64).max()))
    x = xs[0]
    for _ in range(50):
        sess.run(None, {in_name: x})
    times = []
    for _ in range(500):
        t0 = time.perf_counter()
        sess.run(None, {in_name: x})
        times.append((time.perf_counter() - t0) * 1e6)
    out = sess.run(None, {in_name: x})[0]
    ops: list[str] = []
    for n in model.graph.node:
        if n.op_type not in ops:
            ops.append(n.op_type)
    return {
        "model": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "nodes": len(model.graph.node),
        "ops": ops,
        "parameters": int(sum(numpy_helper.to_array(t).size for t in model.graph.initializer)),
        "macs": macs(model),
        "output": {sess.get_outputs()[0].name: list(out.shape)},
        "ort_time_us_median_1thread": round(statistics.median(times), 1),
        "ort_time_us_min_1thread": round(min(times), 1),
        "vectors": len(xs),
        "max_abs_err_f32_vs_f64": abs_err,
        "max_rel_err_f32_vs_f64": rel_err,
        "max_abs_output_f64": out_max,
        "max_abs_err_seq32_vs_f64": seq_err,
        "max_abs_err_seq32_vs_ort": seq_ort,
    }


def main(argv: list[str]) -> int:
    names = argv or sorted(p.name for p in MODELS.iterdir() if (p / "model.onnx").is_file())
    for name in names:
        print(json.dumps(measure(name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
