"""Attention masks: the one place a description may hold a non-finite number.

PyTorch writes the mask of attention (`src_key_padding_mask`, `is_causal`, `masked_fill`,
`scaled_dot_product_attention`) as -inf: added to the attention scores, or selected in their place,
just ahead of a softmax, where exp(-inf) = 0 gives the masked position a weight of exactly 0. That
-inf is not a trained number, and no retraining removes it. Any other non-finite constant (a NaN, a
+inf, a -inf that reaches anything but a softmax) makes outputs, validation figures and error bounds
meaningless, and stays refused (EXPORT-E017 at export, NNEF-E034 at the check step).

`judge(graph, values)` decides, on a flat graph and the values of its non-finite variables, which are
masks. A variable is a *mask* when every non-finite value it holds is -inf and every path from it
reaches a `softmax` through only

- `add` (the mask added to the scores, or to another mask),
- `select` as its true or false value (ONNX Where, `masked_fill`), the condition a constant,
- the storage-only operations `reshape`, `squeeze`, `unsqueeze`, `copy` and `transpose`,

never a graph output. The -inf positions are followed through those operations (an element is masked
where an operand of `add` is, where `select` picks a masked value): a softmax row whose every element
is masked computes exp(-inf - (-inf)) = NaN, 0 / 0 (torch's own output there is NaN too), and is a
finding (`full_row`), naming the softmax and the row.

What the -inf means downstream is defined in docs/semantics/elementwise.md ("Masks"): add(x, -inf) =
-inf for every finite x, softmax gives a masked position exactly +0 and the others the softmax of the
unmasked ones, and the C and CUDA code compute the same bits (exp(-inf) = +0 in the shared program).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from pipeline.nnef.graph import Graph, Operation, Ref

# Operations that move a tensor's elements without computing: the mask pattern moves with them.
STORAGE_ONLY = frozenset({"reshape", "squeeze", "unsqueeze", "copy", "transpose"})


@dataclass(frozen=True)
class Mask:
    """A variable accepted as an attention mask: how many -inf it holds, the softmaxes it reaches."""

    variable: str
    masked: int
    softmax: tuple[str, ...]


@dataclass(frozen=True)
class MaskProblem:
    """A non-finite variable that is not a mask, or a mask that masks a whole softmax row (`full_row`)."""

    variable: str
    index: tuple[int, ...]
    value: float
    reason: str
    full_row: bool = False


@dataclass(frozen=True)
class _Pattern:
    """Where a tensor is surely -inf, and which mask variables that comes from."""

    masked: np.ndarray
    sources: frozenset[str]


def non_finite(data: np.ndarray) -> tuple[tuple[int, ...], float] | None:
    """(index, value) of the first NaN or infinity of a float array, or None."""
    array = np.asarray(data)
    if array.dtype.kind != "f" or array.size == 0:
        return None
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))
    return index, float(array[index])


def _nnef_broadcast(pattern: np.ndarray, shape: list[int]) -> np.ndarray:
    """NNEF broadcasting: shapes aligned on the left, missing trailing axes of extent 1."""
    padded = pattern.reshape(list(pattern.shape) + [1] * (len(shape) - pattern.ndim))
    return np.broadcast_to(padded, shape)


def _shape(graph: Graph, ref: object) -> list[int] | None:
    if not isinstance(ref, Ref):
        return []
    info = graph.tensors.get(ref.name)
    return None if info is None or info.shape is None else [int(d) for d in info.shape]


def _input(op: Operation, key: str) -> object:
    return op.inputs.get(key)


def judge(graph: Graph, values: Mapping[str, np.ndarray]) -> tuple[list[Mask], list[MaskProblem]]:
    """The masks among the graph's variables whose values (`values`, by tensor name) hold a non-finite
    number, and the problems: every other such variable, and every fully masked softmax row."""
    problems: list[MaskProblem] = []
    seeds: dict[str, tuple[tuple[int, ...], float, int]] = {}
    for op in graph.operations:
        if op.name != "variable":
            continue
        name = op.output_refs()[0].name
        if name not in values:
            continue
        first = non_finite(values[name])
        if first is None:
            continue
        data = np.asarray(values[name])
        wrong = np.isnan(data) | (data == np.inf)
        if wrong.any():
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), data.shape))
            problems.append(MaskProblem(name, index, float(data[index]), "a NaN or +inf is no mask value"))
            continue
        seeds[name] = (first[0], first[1], int(np.count_nonzero(data == -np.inf)))
    if not seeds:
        return [], problems
    patterns: dict[str, _Pattern] = {name: _Pattern(np.asarray(values[name]) == -np.inf, frozenset([name]))
                                     for name in seeds}
    reached: dict[str, set[str]] = {name: set() for name in seeds}
    refused: dict[str, str] = {}

    def refuse(sources: frozenset[str], reason: str) -> None:
        for source in sources:
            refused.setdefault(source, reason)

    for op in graph.operations:
        touched = [ref.name for ref in op.input_refs() if ref.name in patterns]
        if not touched:
            continue
        sources = frozenset().union(*(patterns[name].sources for name in touched))
        out = op.output_refs()[0].name if op.output_refs() else ""
        shape = _shape(graph, Ref(out)) if out else None
        if op.name == "softmax":
            x = _input(op, "x")
            in_shape = _shape(graph, x)
            if in_shape is None or not isinstance(x, Ref):
                refuse(sources, f"reaches a softmax of unknown shape ('{out}')")
                continue
            masked = _nnef_broadcast(patterns[x.name].masked, in_shape)
            axes = tuple(int(a) for a in op.attribs.get("axes", [1]))
            full = masked.all(axis=axes)
            for source in sources:
                reached[source].add(out)
            if full.any():
                row = [int(i) for i in np.unravel_index(int(np.argmax(full)), full.shape)]
                for source in sorted(sources):
                    problems.append(MaskProblem(source, tuple(row), -np.inf,
                                                f"masks every element of row {row} (axes {list(axes)}) of softmax "
                                                f"'{out}': exp(-inf - (-inf)) is 0 / 0 = NaN", full_row=True))
            continue
        if shape is None:
            refuse(sources, f"reaches '{out}' ({op.name}) of unknown shape")
            continue
        if op.name == "add":
            parts = [_nnef_broadcast(patterns[v.name].masked, shape) for v in (_input(op, "x"), _input(op, "y"))
                     if isinstance(v, Ref) and v.name in patterns]
            patterns[out] = _Pattern(np.logical_or.reduce(parts), sources)
        elif op.name == "select":
            condition = _input(op, "condition")
            if isinstance(condition, Ref) and condition.name in patterns:
                refuse(sources, f"is the condition of select '{out}'")
                continue
            sides = []
            for key in ("true_value", "false_value"):
                value = _input(op, key)
                sides.append(_nnef_broadcast(patterns[value.name].masked, shape)
                             if isinstance(value, Ref) and value.name in patterns else np.zeros(shape, bool))
            chosen = values.get(condition.name) if isinstance(condition, Ref) else np.asarray(bool(condition))
            if chosen is None or np.asarray(chosen).dtype != bool:
                patterns[out] = _Pattern(sides[0] & sides[1], sources)  # surely masked: both sides are
            else:
                patterns[out] = _Pattern(np.where(_nnef_broadcast(np.asarray(chosen), shape), sides[0], sides[1]),
                                         sources)
        elif op.name in STORAGE_ONLY:
            source = patterns[touched[0]].masked
            if op.name == "transpose":
                axes = [int(a) for a in op.attribs.get("axes", [])]
                axes += list(range(len(axes), source.ndim))
                patterns[out] = _Pattern(np.transpose(source, axes), sources)
            else:
                patterns[out] = _Pattern(source.reshape(shape), sources)
        else:
            refuse(sources, f"reaches {op.name} '{out}', not a softmax (a mask may pass only add, select and "
                            "storage-only operations on its way to a softmax)")
            continue
        if out in graph.outputs:
            refuse(sources, f"reaches the graph output '{out}'")
    masks = []
    for name, (index, value, count) in seeds.items():
        if name in refused or not reached[name]:
            reason = refused.get(name, "reaches no softmax")
            problems.append(MaskProblem(name, index, value, reason))
        else:
            masks.append(Mask(name, count, tuple(sorted(reached[name]))))
    problems.sort(key=lambda p: (p.variable, p.full_row))
    return sorted(masks, key=lambda m: m.variable), problems
