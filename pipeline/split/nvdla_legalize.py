"""Legalization of an NNEF graph for NVDLA (nv_full, FP16): what the hardware lacks is rewritten.

The result is a flat list of `LegalOp` in the small vocabulary the NVDLA units (and the EMU
CPU fallback) implement, each carrying the NNEF instruction and line it comes from and the
legalization rules applied. An operation that no unit or fallback can run, or that exceeds a
limit of the configuration, is refused here (SPLIT-E1xx) with the operation, its NNEF line,
the limit and the configuration, before anything is written. Every rewrite is recorded
(rule, before, after, line) and checked: `check_rewrites` runs the reference semantics on
the original graph and a float32 evaluation of the legalized list on the same input.
docs/codegen-nvdla.md lists the rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.diagnostics import Location
from pipeline.nnef.graph import Graph, Operation, Ref
from pipeline.split import nvdla_cbuf
from pipeline.split import nvdla_rewrites as passes
from pipeline.split.errors import SplitError
from pipeline.split.nvdla_ops import (CONFIGURATIONS, NV_FULL, Legalized, LegalOp, Limits, Refusal, Refused, Rewrite,
                                      cube, refusal_error)

__all__ = ["CONFIGURATIONS", "NV_FULL", "Legalized", "LegalOp", "Limits", "Rewrite", "check_legalized", "evaluate",
           "legalize"]


def _line(op: Operation) -> int:
    return op.span.line if op.span else 0


def _text(lines: list[str], op: Operation) -> str:
    if op.span and 0 < op.span.line <= len(lines):
        return lines[op.span.line - 1].strip()
    outs = ", ".join(r.name for r in op.output_refs())
    return f"{outs} = {op.name}(...)"


def _refuse(graph: Graph, op: Operation, config: str, why: str) -> Refused:
    return Refused(Refusal(op.name, _line(op), why, f"{op.name} -> " + ", ".join(r.name for r in op.output_refs())))


def _check_range(graph: Graph, op: Operation, config: Limits, what: str, values: list[int],
                 bounds: tuple[int, int]) -> None:
    low, high = bounds
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise _refuse(graph, op, config.name, f"{what} {bad[0]} outside the limit {low}-{high}")


def legalize(graph: Graph, variables: dict[str, np.ndarray], config: str = "nv_full",
             only: set[int] | None = None, text: str = "") -> Legalized:
    """The graph as NVDLA-legal operations; SplitError SPLIT-E101/E102 on what cannot run.

    `text`: the NNEF text the graph was read from (the debug table quotes its instructions).
    `only`: ids of the operations of one nvdla item (the others are computed elsewhere: their
    results are the item's inputs); constants are folded whoever computes them. Every operation
    the item cannot run is collected and named in one SPLIT-E101, with its limit and the set the
    item supports.
    """
    if config not in CONFIGURATIONS:
        raise SplitError("SPLIT-E102", f"unknown NVDLA configuration '{config}' (known: nv_full)")
    limits = CONFIGURATIONS[config]
    shapes = {name: list(info.shape or []) for name, info in graph.tensors.items()}
    consts: dict[str, np.ndarray] = {}
    inputs: dict[str, list[int]] = {}
    ops: list[LegalOp] = []
    rewrites: list[Rewrite] = []
    refused: list[Refusal] = []
    produced: set[str] = set()
    syncs: set[str] = set()
    sent: list[str] = []
    source_lines = text.splitlines()
    for op in graph.operations:
        line, text = _line(op), _text(source_lines, op)
        outs = [r.name for r in op.output_refs()]
        if op.name == "external":
            inputs[outs[0]] = list(op.attribs["shape"])
            continue
        if op.name == "variablesync":   # an item file of a mixed deployment: the sync instructions are the
            syncs.add(outs[0])           # C program's (pipeline/codegen/nvdla/proxy.py), not the loadable's
            continue
        if op.name == "get_var":          # a received value is an input of the loadable
            inputs[outs[0]] = shapes.get(outs[0], [])
            continue
        if op.name == "send_var":         # a sent value is an output of the loadable
            sent += [r.name for r in op.input_refs() if r.name not in syncs and r.name not in sent]
            continue
        if op.name == "variable":
            consts[outs[0]] = np.asarray(variables[str(op.attribs["label"])], dtype=np.float32)
            continue
        refs = op.input_refs()
        if refs and all(r.name in consts for r in refs):
            consts[outs[0]] = _fold(graph, op, consts)
            rewrites.append(Rewrite("fold-constant", text, f"constant {outs[0]} {list(consts[outs[0]].shape)}", line))
            continue
        if only is not None and id(op) not in only:
            continue
        for ref in refs:
            if ref.name not in consts and ref.name not in produced and ref.name not in inputs:
                inputs[ref.name] = shapes.get(ref.name, [])  # computed by another item
        try:
            made = _legalize_op(graph, op, limits, consts, shapes, line, text, rewrites)
        except Refused as refusal:
            refused.append(refusal.refusal)
            continue
        for new in made:
            ops.append(new)
            produced.add(new.output)
            shapes.setdefault(new.output, new.shape)
    outputs = [name for name in graph.outputs if name not in syncs] + [n for n in sent if n not in graph.outputs]
    _fuse_matmul_bias(ops, rewrites, outputs)
    ops = passes.resolve_layout(ops, shapes, outputs, rewrites, refused)
    ops = passes.fold_flatten(ops, shapes, outputs, rewrites, refused)
    ops = passes.expand_concat(ops, shapes, rewrites, refused)
    ops = passes.fit_convolution_buffer(ops, shapes, rewrites, refused)
    for op in ops:
        if op.kind not in ("softmax", "reshape") and len(op.shape) > 4:
            refused.append(Refusal(op.kind, op.line, f"rank {len(op.shape)} tensor, the units take at most 4 "
                                                     "dimensions"))
        elif any(d > limits.cube_max for d in cube(op.shape)):
            refused.append(Refusal(op.kind, op.line, f"a {op.shape} tensor: a unit's cube is at most "
                                                     f"{limits.cube_max} wide, high and deep"))
    if refused:
        raise refusal_error(sorted(refused, key=lambda r: r.line), config)
    return Legalized(config, inputs, outputs, ops, rewrites, shapes)


def _const(consts: dict[str, np.ndarray], value: Any) -> np.ndarray | None:
    if isinstance(value, Ref):
        return consts.get(value.name)
    if isinstance(value, (int, float)):
        return np.asarray(value, dtype=np.float32)
    return None


# Why no unit runs an operation, where more can be said than that (the refusal names it, SPLIT-E101).
NO_UNIT = {
    "select": "select (ONNX Where, an attention mask's masked_fill): no NVDLA unit picks elements by a mask "
              "(the SDP computes x op operand per element, the PDP pools, RUBIK moves whole cubes); put it on a CPU "
              "or GPU item",
}


def _legalize_op(graph: Graph, op: Operation, limits: Limits, consts: dict[str, np.ndarray],
                 shapes: dict[str, list[int]], line: int, text: str, rewrites: list[Rewrite]) -> list[LegalOp]:
    """The LegalOps of one NNEF operation; Refused when no unit can run it."""
    config = limits.name
    out = op.output_refs()[0].name
    shape = shapes.get(out, [])
    refs = op.input_refs()
    if op.name == "conv":
        return [_conv(graph, op, limits, consts, out, shape, line, text, rewrites)]
    if op.name in ("add", "mul", "min", "max", "sub", "div"):
        return [_eltwise(graph, op, config, consts, shapes, out, shape, line, text, rewrites)]
    if op.name in ("leaky_relu", "prelu"):
        slope = _const(consts, op.inputs.get("alpha")) if op.name == "prelu" else \
            np.asarray(op.attribs["alpha"], dtype=np.float32)
        if slope is None:
            raise _refuse(graph, op, config, "PReLU slope that is not a constant")
        return [LegalOp("prelu", [op.inputs["x"].name], out, shape, {}, {"slope": slope}, line, text)]
    if op.name == "clamp":
        x = op.inputs["x"].name
        low, high = _const(consts, op.inputs["a"]), _const(consts, op.inputs["b"])
        if low is None or high is None:
            raise _refuse(graph, op, config, "clamp whose bounds are not constants")
        mid = out + "__max"
        rewrites.append(Rewrite("clamp-to-max-min", text, f"{mid} = max({x}, a); {out} = min({mid}, b)", line))
        return [LegalOp("eltwise", [x], mid, shape, {"op": "max"}, {"operand": low}, line, text, ["clamp-to-max-min"]),
                LegalOp("eltwise", [mid], out, shape, {"op": "min"}, {"operand": high}, line, text,
                        ["clamp-to-max-min"])]
    if op.name == "relu":
        return [LegalOp("relu", [op.inputs["x"].name], out, shape, {}, {}, line, text)]
    if op.name in ("sigmoid", "tanh"):
        return [LegalOp("lut", [op.inputs["x"].name], out, shape, {"fn": op.name}, {}, line, text)]
    if op.name == "batch_normalization":
        mean, var = _const(consts, op.inputs["mean"]), _const(consts, op.inputs["variance"])
        offset, scale = _const(consts, op.inputs["offset"]), _const(consts, op.inputs["scale"])
        if any(v is None for v in (mean, var, offset, scale)):
            raise _refuse(graph, op, config, "batch normalization whose statistics are not constants")
        eps = float(op.attribs.get("epsilon", 0.0))
        factor = (scale.reshape(-1) / np.sqrt(var.reshape(-1) + np.float32(eps))).astype(np.float32)
        bias = (offset.reshape(-1) - mean.reshape(-1) * factor).astype(np.float32)
        rewrites.append(Rewrite("batch-normalization-to-sdp-scale-bias", text,
                                f"{out} = input * scale' + bias' (scale' = scale / sqrt(var + eps), "
                                "bias' = offset - mean * scale')", line))
        return [LegalOp("scale_bias", [op.inputs["input"].name], out, shape, {}, {"scale": factor, "bias": bias},
                        line, text, ["batch-normalization-to-sdp-scale-bias"])]
    if op.name in ("max_pool", "avg_pool", "mean_reduce", "max_reduce"):
        return _pool(graph, op, limits, out, shape, shapes, line, text, rewrites)
    if op.name == "local_response_normalization":
        size = list(op.attribs["size"])
        if len(size) != 4 or size[0] != 1 or size[2] != 1 or size[3] != 1 or size[1] not in limits.lrn_sizes:
            raise _refuse(graph, op, config, f"LRN window {size}: CDP sums across channels only, "
                          f"local size in {list(limits.lrn_sizes)}")
        return [LegalOp("lrn", [op.inputs["input"].name], out, shape,
                        {"size": size[1], "alpha": float(op.attribs["alpha"]), "beta": float(op.attribs["beta"]),
                         "bias": float(op.attribs["bias"])}, {}, line, text)]
    if op.name == "softmax":
        axes = sorted(int(a) for a in op.attribs["axes"])
        c, h, w = cube(shape)
        if 1 not in axes or h * w != 1 or len(shape) < 2 or shape[0] != 1 or any(a < 1 for a in axes):
            raise _refuse(graph, op, config, f"softmax over axes {axes} of a {shape} tensor: NVIDIA's emulator (EMU) "
                          "computes softmax over the channels of a 1 x C (x 1 x 1) tensor only")
        return [LegalOp("softmax", [op.inputs["x"].name], out, shape, {"axes": [1]}, {}, line, text)]
    if op.name in ("reshape", "squeeze", "unsqueeze", "copy"):
        return [LegalOp("reshape", [refs[0].name], out, shape, {}, {}, line, text)]
    if op.name == "transpose":
        return [LegalOp("transpose", [refs[0].name], out, shape, {"perm": list(op.attribs["axes"])}, {}, line, text)]
    if op.name == "concat":
        names = [v.name for v in op.inputs["values"]]
        if any(n in consts for n in names):
            raise _refuse(graph, op, config, "concatenation of a constant tensor")
        return [LegalOp("concat", names, out, shape, {"axis": int(op.attribs["axis"])}, {}, line, text)]
    if op.name == "linear":
        return [_linear(graph, op, limits, consts, out, shape, line, text, rewrites)]
    if op.name == "matmul":
        return [_matmul(graph, op, limits, consts, out, shape, line, text, rewrites)]
    raise _refuse(graph, op, config, NO_UNIT.get(op.name, "no NVDLA unit or fallback implements it"))


def _eltwise(graph: Graph, op: Operation, config: str, consts: dict[str, np.ndarray], shapes: dict[str, list[int]],
             out: str, shape: list[int], line: int, text: str, rewrites: list[Rewrite]) -> LegalOp:
    """add/mul/min/max (sub/div of a constant) -> one SDP operation; the second tensor is per point (same shape)
    or per channel ([1, C, 1, 1]: the SDP reads one value per kernel from memory)."""
    a, b = op.inputs.get("x"), op.inputs.get("y")
    ca, cb = _const(consts, a), _const(consts, b)
    kind, rules = op.name, []
    if op.name in ("sub", "div"):
        if cb is None or ca is not None:
            raise _refuse(graph, op, config, f"{op.name} whose second operand is not a constant "
                          "(SDP adds, multiplies and compares only)")
        kind = "add" if op.name == "sub" else "mul"
        cb = (-cb if op.name == "sub" else np.float32(1) / cb).astype(np.float32)
        rule = f"{op.name}-constant-to-{kind}"
        rules.append(rule)
        rewrites.append(Rewrite(rule, text, f"{out} = {kind}({a.name}, "
                                f"{'-c' if op.name == 'sub' else '1 / c (float32)'})", line))
    if ca is not None and cb is None:
        a, b, ca, cb = b, a, cb, ca
    if ca is not None:
        raise _refuse(graph, op, config, "both operands are constants (should have been folded)")
    if cb is not None:
        return LegalOp("eltwise", [a.name], out, shape, {"op": kind}, {"operand": cb}, line, text, rules)
    sa, sb = cube(shapes.get(a.name, [])), cube(shapes.get(b.name, []))
    if sa != cube(shape) and sb == cube(shape):
        a, b, sa, sb = b, a, sb, sa
    if sa != cube(shape) or (sb != sa and sb != (sa[0], 1, 1)):
        raise _refuse(graph, op, config, f"{op.name} of {shapes.get(a.name)} and {shapes.get(b.name)}: the SDP's "
                      "second operand is the same shape or one value per channel")
    return LegalOp("eltwise", [a.name, b.name], out, shape,
                   {"op": kind, "per_channel": sb != sa}, {}, line, text, rules)


def _fold(graph: Graph, op: Operation, consts: dict[str, np.ndarray]) -> np.ndarray:
    from pipeline.semantics.interpreter import run_operation

    env = dict(consts)
    run_operation(graph, op, env)
    return np.asarray(env[op.output_refs()[0].name], dtype=np.float32)


def _conv(graph: Graph, op: Operation, limits: Limits, consts: dict[str, np.ndarray], out: str, shape: list[int],
          line: int, text: str, rewrites: list[Rewrite]) -> LegalOp:
    x = op.inputs["input"]
    filt = op.inputs["filter"]
    if not isinstance(filt, Ref) or filt.name not in consts:
        raise _refuse(graph, op, limits.name, "the filter is not a constant (CONV reads weights from memory)")
    weight = consts[filt.name]
    bias_value = op.inputs.get("bias", 0.0)
    bias = consts.get(bias_value.name) if isinstance(bias_value, Ref) else np.full(weight.shape[0], bias_value,
                                                                                   dtype=np.float32)
    if bias is None:
        raise _refuse(graph, op, limits.name, "the bias is not a constant")
    bias = np.broadcast_to(bias.reshape(-1), (weight.shape[0],)).astype(np.float32)
    if op.attribs.get("border", "constant") not in ("constant", "ignore"):
        raise _refuse(graph, op, limits.name, f"border '{op.attribs['border']}' (CONV pads with a constant)")
    kernel = list(weight.shape[2:])
    padding = list(op.attribs.get("padding") or [(0, 0)] * len(kernel))
    stride = list(op.attribs.get("stride") or [1] * len(kernel))
    dilation = list(op.attribs.get("dilation") or [1] * len(kernel))
    if len(kernel) != 2:
        raise _refuse(graph, op, limits.name, f"{len(kernel)}-d convolution (CONV is 2-d)")
    _check_range(graph, op, limits, "kernel size", kernel, limits.conv_kernel)
    _check_range(graph, op, limits, "padding", [p for pair in padding for p in pair], limits.conv_pad)
    _check_range(graph, op, limits, "stride", stride, limits.conv_stride)
    rules = []
    groups = int(op.attribs.get("groups", 1))
    cin = graph.tensors[x.name].shape[1] if graph.tensors.get(x.name) and graph.tensors[x.name].shape else None
    if groups == 0:
        groups = int(cin)
    if groups != 1:
        weight = _dense_from_groups(weight, groups)
        rules.append("grouped-conv-to-dense")
        rewrites.append(Rewrite("grouped-conv-to-dense", text, f"conv(groups = 1) with a block-diagonal "
                                f"{list(weight.shape)} filter (zeros outside the {groups} groups)", line))
    attrs = {"stride": stride, "padding": [tuple(p) for p in padding], "dilation": dilation}
    return LegalOp("conv", [x.name], out, shape, attrs, {"weight": weight, "bias": bias}, line, text, rules)


def _dense_from_groups(weight: np.ndarray, groups: int) -> np.ndarray:
    cout, cin_g = weight.shape[:2]
    dense = np.zeros((cout, cin_g * groups) + weight.shape[2:], dtype=np.float32)
    per = cout // groups
    for g in range(groups):
        dense[g * per:(g + 1) * per, g * cin_g:(g + 1) * cin_g] = weight[g * per:(g + 1) * per]
    return dense


def _pool(graph: Graph, op: Operation, limits: Limits, out: str, shape: list[int], shapes: dict[str, list[int]],
          line: int, text: str, rewrites: list[Rewrite]) -> list[LegalOp]:
    x = op.inputs["input"].name
    in_shape = shapes[x]
    rules = []
    if op.name in ("mean_reduce", "max_reduce"):
        axes = sorted(int(a) for a in op.attribs["axes"])
        if axes != [2, 3] or len(in_shape) != 4:
            raise _refuse(graph, op, limits.name, f"{op.name} over axes {axes} (PDP pools over H and W only)")
        mode = "avg" if op.name == "mean_reduce" else "max"
        kernel, stride, pads = [in_shape[2], in_shape[3]], [1, 1], [(0, 0), (0, 0)]
        rule = f"global-{'average' if mode == 'avg' else 'max'}-pool-to-{'average' if mode == 'avg' else 'max'}-pool"
        rules.append(rule)
        rewrites.append(Rewrite(rule, text, f"{out} = {mode}_pool(size = [1, 1, {kernel[0]}, {kernel[1]}])", line))
        if max(kernel) > limits.pool_kernel[1]:
            return _pool_in_stages(graph, op, limits, x, in_shape, out, shape, mode, line, text, rules, rewrites)
    else:
        size = list(op.attribs["size"])
        stride = list(op.attribs.get("stride") or [1] * len(size))
        padding = list(op.attribs.get("padding") or [(0, 0)] * len(size))
        dilation = list(op.attribs.get("dilation") or [1] * len(size))
        if len(size) != 4 or size[:2] != [1, 1] or stride[:2] != [1, 1] or any(d != 1 for d in dilation) \
                or any(tuple(p) != (0, 0) for p in padding[:2]):
            raise _refuse(graph, op, limits.name, f"pooling window {size} (PDP pools over H and W only, no dilation)")
        kernel, stride, pads = size[2:], stride[2:], [tuple(p) for p in padding[2:]]
        mode = "max" if op.name == "max_pool" else "avg"
        border = op.attribs.get("border", "constant")
        if mode == "avg" and border != "constant" and any(p != (0, 0) for p in pads):
            raise _refuse(graph, op, limits.name, f"average pooling with border '{border}' and padding "
                          "(PDP divides by the full window)")
    _check_range(graph, op, limits, "pooling kernel", kernel, limits.pool_kernel)
    _check_range(graph, op, limits, "pooling padding", [p for pair in pads for p in pair], limits.pool_pad)
    _check_range(graph, op, limits, "pooling stride", stride, limits.pool_stride)
    widest = nvdla_cbuf.pdp_max_width(kernel[0], stride[0])
    if shape and shape[-1] > widest:
        raise _refuse(graph, op, limits.name, f"a pooling output {shape[-1]} wide beyond the {widest} the PDP's line "
                      f"buffer holds for a {kernel[0]}-high window at stride {stride[0]} (NVIDIA's compiler splits the "
                      "width, engine-ast/PDPNode.cpp pdpHWSplitWidth; not built here)")
    return [LegalOp("pool", [x], out, shape, {"mode": mode, "kernel": kernel, "stride": stride, "padding": pads},
                    {}, line, text, rules)]


def _factors(n: int, most: int) -> list[int] | None:
    """n as a product of factors each at most `most`, largest first; None when a prime factor exceeds it."""
    out = []
    while n > 1:
        factor = next((d for d in range(most, 1, -1) if n % d == 0), None)
        if factor is None:
            return None
        out.append(factor)
        n //= factor
    return out or [1]


def _pool_in_stages(graph: Graph, op: Operation, limits: Limits, x: str, in_shape: list[int], out: str,
                    shape: list[int], mode: str, line: int, text: str, rules: list[str],
                    rewrites: list[Rewrite]) -> list[LegalOp]:
    """A global pool wider than the PDP's 8 x 8 window -> pools whose windows tile it (each stage's windows the
    same size, so the mean of the stage means is the mean)."""
    fh, fw = _factors(in_shape[2], limits.pool_kernel[1]), _factors(in_shape[3], limits.pool_kernel[1])
    if fh is None or fw is None:
        raise _refuse(graph, op, limits.name, f"global pooling over {in_shape[2]} x {in_shape[3]}: a window beyond "
                      f"{limits.pool_kernel[1]} that does not factor into windows of at most {limits.pool_kernel[1]}")
    stages = max(len(fh), len(fw))
    fh, fw = fh + [1] * (stages - len(fh)), fw + [1] * (stages - len(fw))
    rule = "global-pool-in-stages"
    rewrites.append(Rewrite(rule, text, f"{stages} {mode} pools of windows {list(zip(fh, fw))} (stride = window)",
                            line))
    made, source, h, w = [], x, in_shape[2], in_shape[3]
    for index, (kh, kw) in enumerate(zip(fh, fw)):
        h, w = h // kh, w // kw
        name = out if index == stages - 1 else f"{out}__stage{index}"
        made.append(LegalOp("pool", [source], name, [in_shape[0], in_shape[1], h, w],
                            {"mode": mode, "kernel": [kh, kw], "stride": [kh, kw], "padding": [(0, 0), (0, 0)]},
                            {}, line, text, rules + [rule]))
        source = name
    made[-1].shape = list(shape)
    return made


def _matmul(graph: Graph, op: Operation, limits: Limits, consts: dict[str, np.ndarray], out: str, shape: list[int],
            line: int, text: str, rewrites: list[Rewrite]) -> LegalOp:
    a, b = op.inputs["A"], op.inputs["B"]
    if not isinstance(b, Ref) or b.name not in consts or a.name in consts:
        raise _refuse(graph, op, limits.name, "matmul whose second operand is not a constant matrix")
    weight = consts[b.name]
    if op.attribs.get("transposeB"):
        weight = weight.T
    a_shape = graph.tensors[a.name].shape
    if op.attribs.get("transposeA") or len(a_shape) != 2 or a_shape[0] != 1:
        raise _refuse(graph, op, limits.name, f"matmul of a {a_shape} operand (only a [1, K] row is a 1x1 conv)")
    k, n = weight.shape
    rewrites.append(Rewrite("linear-to-1x1-conv", text, f"{out} = conv({a.name} as [1, {k}, 1, 1], "
                            f"filter [{n}, {k}, 1, 1]) as [1, {n}]", line))
    return LegalOp("conv", [a.name], out, shape, {"stride": [1, 1], "padding": [(0, 0), (0, 0)],
                                                    "dilation": [1, 1]},
                   {"weight": np.ascontiguousarray(weight.T).reshape(n, k, 1, 1),
                    "bias": np.zeros(n, dtype=np.float32)}, line, text, ["linear-to-1x1-conv"])


def _linear(graph: Graph, op: Operation, limits: Limits, consts: dict[str, np.ndarray], out: str,
            shape: list[int], line: int, text: str, rewrites: list[Rewrite]) -> LegalOp:
    """linear(x [1, K], filter [N, K], bias [1, N]) = x filter^T + bias -> a 1x1 convolution with bias."""
    x, filt, bias = op.inputs["input"], op.inputs["filter"], op.inputs.get("bias", 0.0)
    weight = consts.get(filt.name) if isinstance(filt, Ref) else None
    b = consts.get(bias.name) if isinstance(bias, Ref) else np.asarray(bias, dtype=np.float32)
    x_shape = graph.tensors[x.name].shape
    if weight is None or b is None or len(x_shape) != 2 or x_shape[0] != 1:
        raise _refuse(graph, op, limits.name, "linear without constant filter and bias on a [1, K] row")
    n, k = weight.shape
    rewrites.append(Rewrite("linear-to-1x1-conv", text, f"{out} = conv({x.name} as [1, {k}, 1, 1], "
                            f"filter [{n}, {k}, 1, 1], bias) as [1, {n}]", line))
    return LegalOp("conv", [x.name], out, shape, {"stride": [1, 1], "padding": [(0, 0), (0, 0)],
                                                    "dilation": [1, 1]},
                   {"weight": weight.reshape(n, k, 1, 1).astype(np.float32),
                    "bias": np.broadcast_to(b.reshape(-1), (n,)).astype(np.float32)}, line, text,
                   ["linear-to-1x1-conv"])


def _fuse_matmul_bias(ops: list[LegalOp], rewrites: list[Rewrite], outputs: list[str]) -> None:
    """add(matmul result, constant row) -> the convolution's bias, when the matmul result has no other use."""
    uses: dict[str, int] = {}
    for op in ops:
        for name in op.inputs:
            uses[name] = uses.get(name, 0) + 1
    for name in outputs:
        uses[name] = uses.get(name, 0) + 1
    by_output = {op.output: op for op in ops}
    for op in list(ops):
        if op.kind != "eltwise" or op.attrs.get("op") != "add" or "operand" not in op.consts:
            continue
        src = by_output.get(op.inputs[0])
        if src is None or "linear-to-1x1-conv" not in src.rules or uses.get(src.output, 0) != 1:
            continue
        operand = op.consts["operand"].reshape(-1)
        n = src.consts["bias"].size
        if operand.size not in (1, n):
            continue
        src.consts["bias"] = (src.consts["bias"] + np.broadcast_to(operand, (n,))).astype(np.float32)
        src.output, src.shape = op.output, op.shape
        src.rules.append("add-into-conv-bias")
        src.text = f"{src.text} ; {op.text}"
        rewrites.append(Rewrite("add-into-conv-bias", op.text, f"bias of the 1x1 convolution at line {src.line}",
                                op.line))
        ops.remove(op)


def _pool2d(x: np.ndarray, kernel: list[int], stride: list[int], pads: list[tuple[int, int]], mode: str) -> np.ndarray:
    fill = -np.inf if mode == "max" else 0.0
    x = np.pad(x, ((0, 0), (0, 0), tuple(pads[0]), tuple(pads[1])), constant_values=fill)
    oh = (x.shape[2] - kernel[0]) // stride[0] + 1
    ow = (x.shape[3] - kernel[1]) // stride[1] + 1
    parts = [x[:, :, i:i + stride[0] * (oh - 1) + 1:stride[0], j:j + stride[1] * (ow - 1) + 1:stride[1]]
             for i in range(kernel[0]) for j in range(kernel[1])]
    return np.max(parts, axis=0) if mode == "max" else np.sum(parts, axis=0) / np.float32(kernel[0] * kernel[1])


def evaluate(op: LegalOp, args: list[np.ndarray]) -> np.ndarray:
    """The legalized operation in float32 (what it claims to compute, before any unit mapping)."""
    x = np.asarray(args[0], dtype=np.float32)
    if op.kind == "conv":
        w, b = op.consts["weight"], op.consts["bias"]
        c, h, wd = cube(list(x.shape))
        c0, c1 = op.attrs.get("in_channels", (0, c))
        _, _, i0, i1 = op.attrs.get("rows", (0, 0, 0, h))
        x = x.reshape(1, c, h, wd)[:, c0:c1, i0:i1]
        (t, bo), (le, ri) = op.attrs["padding"]
        x = np.pad(x, ((0, 0), (0, 0), (t, bo), (le, ri)))
        (sy, sx), (dy, dx) = op.attrs["stride"], op.attrs["dilation"]
        oh = (x.shape[2] - (w.shape[2] - 1) * dy - 1) // sy + 1
        ow = (x.shape[3] - (w.shape[3] - 1) * dx - 1) // sx + 1
        out = np.zeros((1, w.shape[0], oh, ow), dtype=np.float64)
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                win = x[:, :, i * dy:i * dy + sy * (oh - 1) + 1:sy, j * dx:j * dx + sx * (ow - 1) + 1:sx]
                out += np.einsum("kc,nchw->nkhw", w[:, :, i, j].astype(np.float64), win)
        if "rows" in op.attrs:  # a band of output rows (nvdla_rewrites._split_rows)
            return out + b.reshape(1, -1, 1, 1)
        return (out + b.reshape(1, -1, 1, 1)).reshape(op.shape)
    if op.kind == "eltwise":
        y = op.consts["operand"] if "operand" in op.consts else np.asarray(args[1], dtype=np.float32)
        if op.attrs.get("per_channel"):
            y = y.reshape((1, -1) + (1,) * (x.ndim - 2))
        fn = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op.attrs["op"]]
        return fn(x, y).reshape(op.shape)
    if op.kind == "relu":
        return np.maximum(x, 0)
    if op.kind == "lut":
        return (1 / (1 + np.exp(-x.astype(np.float64))) if op.attrs["fn"] == "sigmoid" else np.tanh(x)
                ).astype(np.float32)
    if op.kind == "prelu":
        slope = op.consts["slope"]
        slope = slope.reshape((1, -1) + (1,) * (x.ndim - 2)) if slope.size > 1 else slope.reshape(())
        return np.where(x < 0, x * slope, x)
    if op.kind == "scale_bias":
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return x * op.consts["scale"].reshape(shape) + op.consts["bias"].reshape(shape)
    if op.kind == "pool":
        return _pool2d(x, op.attrs["kernel"], op.attrs["stride"], op.attrs["padding"], op.attrs["mode"]).reshape(
            op.shape)
    if op.kind == "lrn":
        n, c = op.attrs["size"], x.shape[1]
        sq = x.astype(np.float64) ** 2
        s = np.stack([sq[:, max(0, k - (n - 1) // 2):min(c, k + n // 2 + 1)].sum(axis=1) for k in range(c)], axis=1)
        return x / (op.attrs["bias"] + op.attrs["alpha"] / n * s) ** op.attrs["beta"]
    if op.kind == "softmax":
        axes = tuple(op.attrs["axes"])
        e = np.exp(x - x.max(axis=axes, keepdims=True))
        return e / e.sum(axis=axes, keepdims=True)
    if op.kind == "reshape":
        return x.reshape(op.shape)
    if op.kind == "transpose":
        return x.transpose(op.attrs["perm"])
    if op.kind == "concat":
        return np.concatenate([np.asarray(a, dtype=np.float32) for a in args], axis=op.attrs["axis"])
    raise ValueError(op.kind)


def check_legalized(legal: Legalized, env: dict[str, np.ndarray], rtol: float = 1e-4) -> None:
    """Each legalized operation, fed the reference's values of its inputs, gives the reference's value of its
    output (float32, relative to the output's magnitude); SPLIT-E103 otherwise. `env`: every tensor of the
    original graph on one input (pipeline.semantics.interpret with keep=True)."""
    computed: dict[str, np.ndarray] = {}
    for op in legal.ops:
        if op.attrs.get("folded"):
            continue  # implemented by another operation (nvdla_rewrites): computes nothing itself
        if any(name not in env and name not in computed for name in op.inputs):
            continue
        got = evaluate(op, [env[name] if name in env else computed[name] for name in op.inputs])
        if op.output not in env:
            computed[op.output] = got  # an intermediate of a rewrite: checked through its consumers
            continue
        want = np.asarray(env[op.output], dtype=np.float64)
        if "rows" in op.attrs:  # a band of rows of the output
            first, last = op.attrs["rows"][:2]
            want = want.reshape(got.shape[0], got.shape[1], -1, got.shape[3])[:, :, first:last]
        scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
        err = float(np.max(np.abs(got.reshape(want.shape) - want))) if want.size else 0.0
        if not err <= rtol * scale:
            raise SplitError("SPLIT-E103", f"legalized '{op.kind}' ({', '.join(op.rules) or 'no rewrite'}) at NNEF "
                             f"line {op.line} differs from the reference by {err:.3g} (max |value| {scale:.3g})",
                             Location(file="graph.nnef", line=op.line))
