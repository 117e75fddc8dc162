"""Rewrite passes of NVDLA legalization: what no unit runs as such becomes what the units run.

NVIDIA's emulator (the EMU, the CPU side of a loadable) has only softmax and power
(nvdla/sw umd/core/src/common/include/priv/emu/emu1/A/emu_interface.h), so every layout
operation is rewritten here or refused:

- a chain of reshapes and transposes is composed into one index map of its source tensor; a map
  that keeps the memory layout is an alias (no operation), a channel permutation is a 1x1
  convolution with a permutation matrix (exact: one product by 1 per output), a row-major
  flatten feeding fully connected layers is folded into their kernels (one convolution whose
  kernel covers the whole input, as NVIDIA's compiler does), anything else is refused;
- a concatenation along channels is one 1x1 selection convolution per input (weights 0 and 1,
  exact) whose outputs, disjoint in their channels, are added by the SDP (exact);
- a convolution whose input data and one kernel group of weights exceed the convolution buffer is
  split into bands of output rows (the input's rows read in place) or along its input channels
  (pipeline/split/nvdla_cbuf.py), or refused.

Each pass records its rewrites (rule, before, after, NNEF line); `check_legalized` evaluates every
resulting operation against the reference.
"""

from __future__ import annotations

import numpy as np

from pipeline.split import nvdla_cbuf
from pipeline.split.nvdla_ops import LegalOp, Refusal, Rewrite, cube

LAYOUT_KINDS = ("reshape", "transpose")


def _refusal(op: LegalOp, why: str) -> Refusal:
    return Refusal(op.text.split("=", 1)[-1].split("(", 1)[0].strip() or op.kind, op.line, why,
                   f"{op.kind} -> {op.output}")


def _conv(inputs: list[str], output: str, shape: list[int], weight: np.ndarray, source: LegalOp, rule: str
          ) -> LegalOp:
    return LegalOp("conv", inputs, output, shape, {"stride": [1, 1], "padding": [(0, 0), (0, 0)], "dilation": [1, 1]},
                   {"weight": weight.astype(np.float32), "bias": np.zeros(weight.shape[0], dtype=np.float32)},
                   source.line, source.text, source.rules + [rule])


def resolve_layout(ops: list[LegalOp], shapes: dict[str, list[int]], outputs: list[str],
                   rewrites: list[Rewrite], refused: list[Refusal]) -> list[LegalOp]:
    """Compose every chain of reshapes/transposes and materialize it where a unit operation or an output reads
    it: an alias, a channel permutation (1x1 convolution) or a layout change (left as `reshape` for
    `fold_flatten`); the chain's other operations stay in the list marked `folded` (no unit runs them, the code
    trace names their lines)."""
    read = {name for op in ops if op.kind not in LAYOUT_KINDS for name in op.inputs} | set(outputs)
    chains: dict[str, tuple[str, np.ndarray]] = {}
    out: list[LegalOp] = []
    for op in ops:
        if op.kind not in LAYOUT_KINDS:
            out.append(op)
            continue
        src = op.inputs[0]
        base, index = chains.get(src, (src, None))
        if index is None:
            index = np.arange(int(np.prod(shapes[base])), dtype=np.int64).reshape(shapes[base])
        index = index.reshape(op.shape) if op.kind == "reshape" else index.transpose(op.attrs["perm"])
        chains[op.output] = (base, index)
        if op.output not in read:  # composed into the operation materializing the chain: traced, not run
            out.append(LegalOp("reshape", [src], op.output, list(op.shape), {"folded": True}, {}, op.line, op.text,
                               list(op.rules)))
            continue
        if op.output in read:
            made = _materialize(op, base, index, shapes, rewrites)
            if isinstance(made, Refusal):
                refused.append(made)
            else:
                out.append(made)
    return out


def _materialize(op: LegalOp, base: str, index: np.ndarray, shapes: dict[str, list[int]],
                 rewrites: list[Rewrite]) -> LegalOp | Refusal:
    src_cube, dst_cube = cube(shapes[base]), cube(list(index.shape))
    if np.array_equal(index.reshape(-1), np.arange(index.size)):
        alias = src_cube == dst_cube
        return LegalOp("reshape", [base], op.output, list(index.shape), {"alias": alias}, {}, op.line, op.text,
                       list(op.rules))
    c, h, w = src_cube
    if src_cube == dst_cube:
        planes = index.reshape(c, h * w)
        perm = planes[:, 0] // (h * w)
        if np.array_equal(planes, perm[:, None] * (h * w) + np.arange(h * w)[None, :]) and \
                sorted(perm.tolist()) == list(range(c)):
            weight = np.zeros((c, c, 1, 1), dtype=np.float32)
            weight[np.arange(c), perm, 0, 0] = 1
            rule = "channel-permutation-to-1x1-conv"
            rewrites.append(Rewrite(rule, op.text, f"{op.output} = conv({base}, {c} x {c} permutation matrix) "
                                    f"(channel c reads channel perm[c], perm = {perm.tolist()})", op.line))
            return _conv([base], op.output, list(index.shape), weight, op, rule)
    return _refusal(op, f"a reshape/transpose from {shapes[base]} to {list(index.shape)} that neither keeps the memory "
                      "layout nor permutes channels (NVIDIA's EMU has no general transpose)")


def fold_flatten(ops: list[LegalOp], shapes: dict[str, list[int]], outputs: list[str],
                 rewrites: list[Rewrite], refused: list[Refusal]) -> list[LegalOp]:
    """A layout-changing reshape whose every reader is a fully connected layer (a 1x1 convolution on [1, K])
    disappears into those layers: each becomes one convolution whose kernel covers the reshape's source (the
    reshape stays in the list marked `folded`: no unit runs it, the code trace names its line)."""
    readers: dict[str, list[LegalOp]] = {}
    for op in ops:
        for name in op.inputs:
            readers.setdefault(name, []).append(op)
    out = []
    for op in ops:
        out.append(op)
        if op.kind != "reshape" or op.attrs.get("alias") or op.attrs.get("folded"):
            continue
        source = op.inputs[0]
        c, h, w = cube(shapes[source])
        users = readers.get(op.output, [])
        foldable = op.output not in outputs and users and all(
            u.kind == "conv" and "linear-to-1x1-conv" in u.rules and u.inputs == [op.output]
            and u.consts["weight"].shape[1:] == (c * h * w, 1, 1) for u in users)
        if not foldable:
            refused.append(_refusal(op, f"a reshape from {shapes[source]} to {op.shape} changes the memory layout; "
                                        "only one feeding fully connected layers (folded into their kernels) is "
                                        "supported"))
            continue
        op.attrs["folded"] = True  # kept for the code trace: its line is implemented by the layers' kernels
        for user in users:
            weight = user.consts["weight"]
            user.consts["weight"] = np.ascontiguousarray(weight.reshape(weight.shape[0], c, h, w))
            user.inputs = [source]
            user.rules.append("flatten-into-fc-kernel")
            rewrites.append(Rewrite("flatten-into-fc-kernel", f"{op.text} ; {user.text}",
                                    f"{user.output} = conv({source}, filter [{weight.shape[0]}, {c}, {h}, {w}]): "
                                    "the kernel covers the whole input", user.line))
    return out


def expand_concat(ops: list[LegalOp], shapes: dict[str, list[int]], rewrites: list[Rewrite],
                  refused: list[Refusal]) -> list[LegalOp]:
    """concat along channels -> a 1x1 selection convolution per input, their outputs added by the SDP."""
    out: list[LegalOp] = []
    for op in ops:
        if op.kind != "concat":
            out.append(op)
            continue
        if op.attrs["axis"] != 1 or any(cube(shapes[n])[1:] != cube(op.shape)[1:] for n in op.inputs):
            refused.append(_refusal(op, f"concatenation along axis {op.attrs['axis']} of "
                                        f"{[shapes[n] for n in op.inputs]} (only along channels)"))
            continue
        total = cube(op.shape)[0]
        rule = "concat-to-selection-convs"
        offset, parts = 0, []
        for index, name in enumerate(op.inputs):
            ci = cube(shapes[name])[0]
            weight = np.zeros((total, ci, 1, 1), dtype=np.float32)
            weight[offset + np.arange(ci), np.arange(ci), 0, 0] = 1
            part = op.output if len(op.inputs) == 1 else f"{op.output}__part{index}"
            out.append(_conv([name], part, list(op.shape), weight, op, rule))
            shapes.setdefault(part, list(op.shape))
            parts.append(part)
            offset += ci
        total_name = parts[0]
        for index, part in enumerate(parts[1:], start=1):
            name = op.output if index == len(parts) - 1 else f"{op.output}__sum{index}"
            out.append(LegalOp("eltwise", [total_name, part], name, list(op.shape), {"op": "add"}, {}, op.line,
                               op.text, op.rules + [rule]))
            shapes.setdefault(name, list(op.shape))
            total_name = name
        rewrites.append(Rewrite(rule, op.text, f"{len(parts)} 1x1 convolutions placing each input's channels at "
                                f"its offset in {total} channels (weights 0 and 1), added by the SDP", op.line))
    return out


def fit_convolution_buffer(ops: list[LegalOp], shapes: dict[str, list[int]], rewrites: list[Rewrite],
                           refused: list[Refusal]) -> list[LegalOp]:
    """Every convolution gets a bank allocation (nvdla_cbuf.allocate); one that none fits is split along its input
    channels (slices of 16k channels read in place, partial sums added by the SDP), or refused."""
    out: list[LegalOp] = []
    for op in ops:
        if op.kind != "conv":
            out.append(op)
            continue
        k, c, kh, kw = op.consts["weight"].shape
        _, h, w = cube(shapes[op.inputs[0]])
        if nvdla_cbuf.allocate(c, h, w, k, kh, kw) is not None:
            out.append(op)
            continue
        rows = _rows_per_part(op, c, h, w, k, kh, kw)
        if rows:
            out += _split_rows(op, rows, h, shapes, rewrites)
            continue
        step = max((s for s in range(16, c, 16) if nvdla_cbuf.allocate(s, h, w, k, kh, kw)), default=0)
        if not step:
            d = nvdla_cbuf.data_banks(min(c, 16), h, w)
            g = nvdla_cbuf.min_weight_banks(min(c, 16), kh, kw)
            refused.append(_refusal(op, f"its input data ({d} banks for 16 channels of {h} x {w}) and one group of 16 "
                                        f"kernels ({g} banks) exceed the {nvdla_cbuf.BANKS} banks of the convolution "
                                        "buffer, and neither its rows nor its input channels split into parts that fit"))
            continue
        out += _split_input_channels(op, step, shapes, rewrites)
    return out


def _window(op: LegalOp) -> tuple[int, int, int, int]:
    """(stride, padding top, padding bottom, dilated kernel height) of a convolution along H."""
    (top, bottom), _ = op.attrs["padding"]
    kh = op.consts["weight"].shape[2]
    return op.attrs["stride"][0], top, bottom, (kh - 1) * op.attrs["dilation"][0] + 1


def _rows_per_part(op: LegalOp, c: int, h: int, w: int, k: int, kh: int, kw: int) -> int:
    """The most output rows per part whose input rows fit the buffer with the weights (0: not even one row)."""
    if len(op.shape) != 4 or op.shape[2] < 2:
        return 0
    stride, _, _, span = _window(op)
    for rows in range(op.shape[2] - 1, 0, -1):
        if nvdla_cbuf.allocate(c, min(h, (rows - 1) * stride + span), w, k, kh, kw) is not None:
            return rows
    return 0


def _split_rows(conv: LegalOp, rows: int, height: int, shapes: dict[str, list[int]], rewrites: list[Rewrite]
                ) -> list[LegalOp]:
    """A convolution whose input exceeds the buffer -> convolutions over bands of output rows, each reading the input
    rows its band needs in place (the padding only at the ends) and writing its rows of the same output: NVIDIA's
    compiler's software partial-H split (engine-ast/ConvCoreNode.cpp splitData)."""
    stride, top, bottom, span = _window(conv)
    (_, _), (left, right) = conv.attrs["padding"]
    rule = "conv-split-rows"
    parts = []
    for o0 in range(0, conv.shape[2], rows):
        o1 = min(conv.shape[2], o0 + rows)
        start, end = o0 * stride - top, (o1 - 1) * stride - top + span
        i0, i1 = max(0, start), min(height, end)
        parts.append(LegalOp("conv", list(conv.inputs), conv.output, conv.shape,
                             dict(conv.attrs, rows=(o0, o1, i0, i1), padding=[(i0 - start, end - i1), (left, right)]),
                             dict(conv.consts), conv.line, conv.text, conv.rules + [rule]))
    rewrites.append(Rewrite(rule, conv.text, f"{len(parts)} convolutions over bands of {rows} output rows (the input "
                            "data with the weights exceed the convolution buffer), each reading its input rows in "
                            "place and writing its rows of the output", conv.line))
    return parts


def _split_input_channels(conv: LegalOp, step: int, shapes: dict[str, list[int]], rewrites: list[Rewrite]
                          ) -> list[LegalOp]:
    weight = conv.consts["weight"]
    k, c = weight.shape[:2]
    rule = "conv-split-input-channels"
    starts = list(range(0, c, step))
    parts: list[LegalOp] = []
    total = ""
    for index, c0 in enumerate(starts):
        c1 = min(c, c0 + step)
        bias = conv.consts["bias"] if index == 0 else np.zeros(k, dtype=np.float32)
        part = LegalOp("conv", list(conv.inputs), f"{conv.output}__slice{index}", conv.shape,
                       dict(conv.attrs, in_channels=(c0, c1)),
                       {"weight": np.ascontiguousarray(weight[:, c0:c1]), "bias": bias}, conv.line, conv.text,
                       conv.rules + [rule])
        shapes.setdefault(part.output, conv.shape)
        parts.append(part)
        if index:
            name = conv.output if index == len(starts) - 1 else f"{conv.output}__sum{index}"
            parts.append(LegalOp("eltwise", [total, part.output], name, conv.shape, {"op": "add"}, {}, conv.line,
                                 conv.text, conv.rules + [rule]))
            shapes.setdefault(name, conv.shape)
            total = name
        else:
            total = part.output
    rewrites.append(Rewrite(rule, conv.text, f"{len(starts)} convolutions over {step} input channels each (the "
                            f"input data and one kernel group of all {c} channels exceed the convolution buffer), "
                            "partial sums added by SDP", conv.line))
    return parts
