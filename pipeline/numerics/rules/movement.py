"""Data movement: every output element is an input element or a constant (Reshape, Flatten, Transpose,
Squeeze, Unsqueeze, Concat, Slice, Split, Gather, Pad, Expand, Identity, Dropout, Cast between floats,
Resize in nearest mode; the selections torch writes around attention masks, issue 38: Trilu, Tile, GatherND,
GatherElements, ScatterND and ScatterElements without reduction, evaluated by onnx.reference on the
positions).

One rule for all: the operation is applied to the *positions* of its inputs' elements (np.arange
arrays; -1 where it writes a constant), which gives an index map. The enclosure takes the balls at
those positions (exact: no arithmetic), the Jacobian is the map itself (jvp gathers, vjp adds back),
nothing rounds, nothing is decided. The same function moves integer tensors (shape arithmetic).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import Array, Context, NoRule, Rule, Step, register

FILL = -1


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.ravel(value)]


def _axes(op: Op, params: list[Any], index: int = 1) -> list[int] | None:
    if len(params) > index and params[index] is not None and np.size(params[index]):
        return _ints(params[index])
    axes = op.attr("axes")
    return None if axes is None else list(axes)


def _slice(x: np.ndarray, op: Op, params: list[Any]) -> np.ndarray:
    if len(params) > 1 and params[1] is not None:
        starts, ends = _ints(params[1]), _ints(params[2])
        axes = _ints(params[3]) if len(params) > 3 and params[3] is not None and np.size(params[3]) else \
            list(range(len(starts)))
        steps = _ints(params[4]) if len(params) > 4 and params[4] is not None and np.size(params[4]) else \
            [1] * len(starts)
    else:  # opset < 10: attributes
        starts, ends = list(op.attr("starts")), list(op.attr("ends"))
        axes = list(op.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    index = [slice(None)] * x.ndim
    big = np.iinfo(np.int64).max // 2
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[axis % x.ndim] = slice(int(np.clip(start, -big, big)), int(np.clip(end, -big, big)), int(step))
    return x[tuple(index)]


def _split(x: np.ndarray, op: Op, params: list[Any], count: int) -> list[np.ndarray]:
    axis = int(op.attr("axis", 0)) % x.ndim
    if len(params) > 1 and params[1] is not None and np.size(params[1]):
        sizes = _ints(params[1])
    elif op.attr("split") is not None:
        sizes = list(op.attr("split"))
    else:
        per = -(-x.shape[axis] // count)
        sizes = [min(per, x.shape[axis] - i * per) for i in range(count)]
    return np.split(x, np.cumsum(sizes)[:-1], axis)


def _pad(x: np.ndarray, op: Op, params: list[Any], fill: Any) -> np.ndarray:
    mode = op.attr("mode", "constant")
    if mode != "constant":
        raise NoRule(f"Pad mode '{mode}' (node '{op.origin}')")
    pads = _ints(params[1]) if len(params) > 1 and params[1] is not None else list(op.attr("pads"))
    if len(params) > 3 and params[3] is not None and np.size(params[3]):
        axes = [a % x.ndim for a in _ints(params[3])]
        full = [0] * (2 * x.ndim)
        for k, a in enumerate(axes):
            full[a], full[a + x.ndim] = pads[k], pads[k + len(axes)]
        pads = full
    if min(pads) < 0:
        raise NoRule(f"Pad with negative pads (node '{op.origin}')")
    half = len(pads) // 2
    return np.pad(x, [(pads[i], pads[i + half]) for i in range(half)], constant_values=fill)


def _resize_nearest(x: np.ndarray, op: Op, params: list[Any]) -> np.ndarray:
    if op.attr("mode", "nearest") != "nearest" or op.attr("axes") is not None:
        raise NoRule(f"Resize mode '{op.attr('mode', 'nearest')}' or axes (node '{op.origin}')")
    sizes = params[3] if len(params) > 3 and params[3] is not None and np.size(params[3]) else None
    scales = params[2] if len(params) > 2 and params[2] is not None and np.size(params[2]) else (
        params[1] if len(params) == 2 else None)
    if sizes is None and scales is None:
        raise NoRule(f"Resize without constant scales or sizes (node '{op.origin}')")
    out = _ints(sizes) if sizes is not None else [int(np.floor(n * s)) for n, s in zip(x.shape, np.ravel(scales))]
    if any(m % n or m < n for n, m in zip(x.shape, out)) or list(out[:2]) != list(x.shape[:2]):
        raise NoRule(f"Resize from {list(x.shape)} to {out}: whole spatial factors only (node '{op.origin}')")
    for axis, (n, m) in enumerate(zip(x.shape, out)):
        if m != n:
            x = np.repeat(x, m // n, axis=axis)
    return x


def move(op: Op, data: list[np.ndarray], params: list[Any], fill: Any = 0) -> list[np.ndarray]:
    """The operation on `data` (its moved inputs), `params` its other inputs (shapes, axes: constants)."""
    t = op.op_type
    x = data[0]
    if t in ("Identity", "Dropout"):
        return [x]
    if t == "Cast":
        return [x]
    if t == "Flatten":
        axis = int(op.attr("axis", 1)) % max(x.ndim, 1)
        return [x.reshape(int(np.prod(x.shape[:axis])), -1)]
    if t == "Reshape":
        shape = _ints(params[1])
        if not op.attr("allowzero", 0):
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return [x.reshape(shape)]
    if t == "Transpose":
        perm = op.attr("perm")
        return [np.transpose(x, perm)]
    if t == "Squeeze":
        axes = _axes(op, params)
        return [np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]
    if t == "Unsqueeze":
        axes = _axes(op, params) or []
        out = x
        for axis in sorted(a % (x.ndim + len(axes)) for a in axes):
            out = np.expand_dims(out, axis)
        return [out]
    if t == "Concat":
        return [np.concatenate(data, int(op.attr("axis")))]
    if t == "Slice":
        return [_slice(x, op, params)]
    if t == "Split":
        return _split(x, op, params, len(op.outputs))
    if t == "Gather":
        indices = np.asarray(params[1], np.int64)
        axis = int(op.attr("axis", 0)) % x.ndim
        return [np.take(x, np.where(indices < 0, indices + x.shape[axis], indices), axis=axis)]
    if t == "Pad":
        return [_pad(x, op, params, fill)]
    if t == "Expand":
        shape = np.broadcast_shapes(x.shape, tuple(_ints(params[1])))
        return [np.broadcast_to(x, shape).copy()]
    if t == "Resize":
        return [_resize_nearest(x, op, params)]
    if t in SELECTIONS:
        return _reference(op, data, params)
    raise NoRule(f"no data-movement rule for {t} (node '{op.origin}')")


SELECTIONS = ("Trilu", "Tile", "GatherND", "GatherElements", "ScatterND", "ScatterElements")


def _data_indices(op: Op, ins: list[Any]) -> list[int]:
    """The inputs whose elements move: every input of Concat, data and updates of a scatter, else input 0."""
    if op.op_type == "Concat":
        return list(range(len(ins)))
    if op.op_type in ("ScatterND", "ScatterElements"):
        return [0, 2]
    return [0]


def _reference(op: Op, data: list[np.ndarray], params: list[Any]) -> list[np.ndarray]:
    """A selection evaluated by onnx.reference (nobody here wrote it) with `data` at its moved inputs."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    if op.attr("reduction", "none") not in ("none", b"none"):
        raise NoRule(f"{op.op_type} with reduction '{op.attr('reduction')}' (node '{op.origin}'): arithmetic, "
                     "not a selection")
    moved = iter(data)
    feeds: dict[str, np.ndarray] = {}
    names = []
    for k, name in enumerate(op.inputs):
        if not name:
            names.append("")
            continue
        value = next(moved) if k in _data_indices(op, op.inputs) else params[k]
        names.append(f"i{k}")
        feeds[f"i{k}"] = np.asarray(value)
    node = onnx.helper.make_node(op.op_type, names, [f"o{k}" for k in range(len(op.outputs))],
                                 **{k: v for k, v in op.attrs.items()})
    return [np.asarray(v) for v in ReferenceEvaluator(node).run(None, feeds)]


def _params(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    """The non-moved inputs as exact values (they must be constants: shapes, axes, indices, pad values)."""
    out: list[Any] = [None]
    for k, name in enumerate(op.inputs[1:], start=1):
        if not name or k in _data_indices(op, ins):
            out.append(None)
            continue
        value = ctx.constant(name)
        if value is None:
            value = ins[k]
            if isinstance(value, Ball) or (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
                if op.op_type == "Pad" and k == 2:
                    raise NoRule(f"Pad with a computed value (node '{op.origin}')")
                raise NoRule(f"{op.op_type} with a computed input {k} (node '{op.origin}')")
        out.append(value)
    return out


FLOATS = (1, 11)  # onnx.TensorProto.FLOAT, DOUBLE


def _check_cast(op: Op, data: Any) -> None:
    """A cast between floats is the identity of the real numbers; to a narrower float or to an integer it is a
    rounding with no rule here (an integer cast of integers is exact)."""
    if op.op_type != "Cast":
        return
    floating = isinstance(data, Ball) or np.asarray(data).dtype.kind == "f"
    if floating and int(op.attr("to")) not in FLOATS:
        raise NoRule(f"Cast of a float to type {op.attr('to')} (node '{op.origin}')")


def _cast_integers(op: Op, values: list[np.ndarray]) -> list[Any]:
    """Cast of exact integers: to a float (exact below 2^53: a ball of radius 0), or between integer types."""
    if op.op_type == "Cast" and int(op.attr("to")) in FLOATS:
        if np.any(np.abs(values[0]) >= 2 ** 53):
            raise NoRule(f"Cast of an integer beyond 2^53 to a float (node '{op.origin}')")
        x = np.asarray(values[0], np.float64)
        return [Ball(x, np.zeros(x.shape), np.zeros(x.shape))]
    if op.op_type == "Cast":
        import onnx

        return [np.asarray(values[0]).astype(onnx.helper.tensor_dtype_to_np_dtype(int(op.attr("to"))))]
    return values


def _pad_value(op: Op, params: list[Any]) -> float:
    if op.op_type == "Pad":
        if len(params) > 2 and params[2] is not None and np.size(params[2]):
            return float(np.ravel(params[2])[0])
        return float(op.attr("value", 0.0))
    return 0.0


def _index_maps(op: Op, shapes: list[tuple[int, ...]], params: list[Any]) -> tuple[list[np.ndarray], list[int]]:
    """Per output, the flat position (in the inputs laid end to end) of each element, FILL for a constant."""
    offsets, arrays, start = [], [], 0
    for shape in shapes:  # positions counted from 1: a 0 written by the operation (padding, Trilu) is FILL
        size = int(np.prod(shape))
        arrays.append(np.arange(start + 1, start + size + 1, dtype=np.int64).reshape(shape))
        offsets.append(start)
        start += size
    return [np.asarray(m, np.int64) - 1 for m in move(op, arrays, params, fill=0)], offsets


def enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    _check_cast(op, ins[0])
    params = _params(op, ins, ctx)
    data = [ins[k] for k in _data_indices(op, ins)]
    if not any(isinstance(d, Ball) for d in data):  # integer tensors: the operation itself
        return _cast_integers(op, move(op, [np.asarray(d) for d in data], params, fill=_pad_value(op, params)))
    balls = [d if isinstance(d, Ball) else Ball(np.asarray(d, np.float64), np.zeros(np.shape(d)),
                                                np.zeros(np.shape(d))) for d in data]
    maps, _ = _index_maps(op, [b.shape for b in balls], params)
    fill = _pad_value(op, params)
    flat = [np.concatenate([getattr(b, k).ravel() for b in balls] + [np.array([fill if k == "hi" else 0.0])])
            for k in ("hi", "lo", "rad")]
    out = []
    for m in maps:
        where = np.where(m == FILL, flat[0].size - 1, m)
        out.append(Ball(flat[0][where], flat[1][where], flat[2][where]))
    return out


class MoveStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        _check_cast(op, ins[0])
        self.index = _data_indices(op, ins)
        params = _params(op, ins, ctx)
        self.data_shapes = [np.shape(ins[k]) for k in self.index]
        self.sizes = [int(np.prod(s)) for s in self.data_shapes]
        self.n_inputs = len(ins)
        if not all(np.asarray(ins[k]).dtype.kind == "f" for k in self.index):
            self.maps = None
            moved = _cast_integers(op, move(op, [np.asarray(ins[k]) for k in self.index], params,
                                            _pad_value(op, params)))
            self.outputs = [m.hi if isinstance(m, Ball) else m for m in moved]
            return
        self.maps, self.offsets = _index_maps(op, self.data_shapes, params)
        fill = _pad_value(op, params)
        flat = np.concatenate([np.asarray(ins[k], np.float64).ravel() for k in self.index] + [np.array([fill])])
        self.outputs = [flat[np.where(m == FILL, flat.size - 1, m)] for m in self.maps]
        self.unique = all(np.unique(m[m != FILL]).size == int(np.sum(m != FILL)) for m in self.maps)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        moved = [tangents[k] if k < len(tangents) else None for k in self.index]
        if self.maps is None or all(t is None for t in moved):
            return [None] * len(self.outputs)
        batch = next(t for t in moved if t is not None).shape[0]
        flat = np.concatenate([(t if t is not None else np.zeros((batch,) + shape)).reshape(batch, -1)
                               for t, shape in zip(moved, self.data_shapes)] + [np.zeros((batch, 1))], axis=1)
        total = flat.shape[1] - 1
        return [flat[:, np.where(m == FILL, total, m)] for m in self.maps]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        if self.maps is None:
            return [None] * self.n_inputs
        present = [g for g in grads if g is not None]
        if not present:
            return [None] * self.n_inputs
        batch = present[0].shape[0]
        total = np.zeros((batch, sum(self.sizes)))
        for m, g in zip(self.maps, grads):
            if g is None:
                continue
            keep = (m != FILL).ravel()
            index = m.ravel()[keep]
            values = g.reshape(batch, -1)[:, keep]
            if self.unique:
                total[:, index] += values
            else:
                np.add.at(total, (slice(None), index), values)
        out: list[Array | None] = [None] * self.n_inputs
        for j, k in enumerate(self.index):
            out[k] = total[:, self.offsets[j]:self.offsets[j] + self.sizes[j]].reshape((batch,) + self.data_shapes[j])
        return out


def _linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return MoveStep(op, ins, ctx)


MOVES = ("Identity", "Dropout", "Cast", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Slice",
         "Split", "Gather", "Pad", "Expand") + SELECTIONS
for _t in MOVES:
    register(Rule(_t, enclose, _linearize, exact_in_storage=True))
