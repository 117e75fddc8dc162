"""The layer-parallel rewrite: one convolution (and its pooling/activation chain) in k parts.

The paper's second distribution kind. A convolution `c = conv(x, w, b, ...)` followed by
a chain `r = relu(c); p = max_pool(r, ...)` (each the only consumer of the previous
result) becomes, for each part i,

    c_p<i>_rows = slice(x, axes = [2], begin = [..], end = [..], stride = [1]);
    c_p<i> = conv(c_p<i>_rows, w, b, ..., padding = [(top_i, bottom_i), (left, right)], ...);
    r_p<i> = relu(c_p<i>);
    p_p<i> = max_pool(r_p<i>, ..., padding = [(0, 0), (0, 0), (top'_i, bottom'_i), ...], ...);

followed by `p = concat([p_p0, ..., p_p<k-1>], axis = 2)`, which keeps the chain's last
name so every later instruction is unchanged. Rows and padding per part come from
pipeline.split.halo. The parts can then be allocated to different items.

Property: the rewritten description computes bit-identical results, because every
output element is computed from the same taps in the same order (halo.py). The
validator does not trust this argument: `split.rewrite` (pipeline.split.checks) runs the
reference interpreter on the original and the rewritten description on seeded vectors
and compares the bytes, and tests/split/test_split_layer_parallel.py does so over a grid
of kernel, stride, padding and dilation values and k = 2..4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from pipeline.nnef.graph import Graph, Operation, Ref
from pipeline.diagnostics import Location
from pipeline.split.errors import SplitError
from pipeline.split.halo import LayerPart, Window, chain_parts, split_rows

AXIS = 2  # the height: first spatial axis of NC(H)W tensors
WINDOW_OPS = frozenset({"max_pool", "avg_pool", "rms_pool", "box"})
POINTWISE_OPS = frozenset({
    "relu", "sigmoid", "tanh", "softplus", "elu", "selu", "gelu", "silu", "leaky_relu", "softabs",
    "copy", "neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "sqr", "rsqr", "rcp", "floor", "ceil", "round",
    "clamp", "add", "sub", "mul", "div", "max", "min", "pow",
})
# Border modes for which a part's padded rows are the original's padded rows: padding
# taps are skipped ('constant', 'ignore') or copy the edge row, which the part reads
# whenever it pads on that side ('replicate'). 'reflect' would read interior rows the
# part may not hold.
BORDERS = frozenset({"constant", "ignore", "replicate"})


@dataclass(frozen=True)
class LayerParallelSpec:
    """A requested rewrite: the convolution result, the chain after it, the part count."""

    conv: str
    chain: tuple[str, ...] = ()
    parts: int = 2
    items: tuple[str, ...] | None = None
    where: str = ""  # the YAML key path of the request, for messages

    def to_json(self) -> dict[str, Any]:
        return {"kind": "layer_parallel", "conv": self.conv, "chain": list(self.chain), "parts": self.parts,
                "items": list(self.items) if self.items is not None else None}


@dataclass
class Rewritten:
    """The result of one rewrite: the new operation list and what each part computes."""

    spec: LayerParallelSpec
    operations: list[Operation]
    result: str  # the chain's last name, now the concat's result
    replaced: list[str]  # results of the original instructions removed
    part_results: list[list[str]]  # per part: results of its instructions (slice, conv, chain)
    rows: list[tuple[int, int]]  # per part: rows of the result it produces
    geometry: list[list[dict[str, int]]] = field(default_factory=list)  # per part, per layer

    def to_json(self) -> dict[str, Any]:
        return {**self.spec.to_json(), "result": self.result, "replaced": self.replaced,
                "part_results": self.part_results, "rows": [list(r) for r in self.rows],
                "geometry": self.geometry}


def _fail(code: str, spec: LayerParallelSpec, message: str) -> SplitError:
    return SplitError(code, message, Location(key_path=spec.where))


def _ints(value: Any, rank: int, default: int) -> list[int]:
    values = [int(v) for v in value] if isinstance(value, (list, tuple)) else []
    return values or [default] * rank


def _window(op: Operation, shape: Sequence[int], size: int, spec: LayerParallelSpec) -> Window:
    """The height geometry of a conv or pooling operation (kernel extent `size`), or SPLIT-E012."""
    result = op.output_refs()[0].name
    if len(shape) < 3:
        raise _fail("SPLIT-E012", spec, f"'{result}': input of rank {len(shape)}; the rewrite cuts axis 2 of a "
                    "tensor of rank >= 3")
    border = str(op.attribs.get("border", "constant"))
    if border not in BORDERS:
        raise _fail("SPLIT-E012", spec, f"'{result}': border '{border}' is not supported by the rewrite "
                    f"(supported: {', '.join(sorted(BORDERS))})")
    padding = op.attribs.get("padding") or []
    if not padding:
        raise _fail("SPLIT-E012", spec, f"'{result}': automatic padding (padding = []); the rewrite needs explicit "
                    "padding")
    rank, axis = (len(shape) - 2, AXIS - 2) if op.name == "conv" else (len(shape), AXIS)
    stride = _ints(op.attribs.get("stride"), rank, 1)
    dilation = _ints(op.attribs.get("dilation"), rank, 1)
    before, after = (int(v) for v in padding[axis])
    return Window(size, stride[axis], dilation[axis], before, after, int(shape[AXIS]))


def _with_padding(op: Operation, part: LayerPart) -> dict[str, Any]:
    """The attributes of `op` with the height padding of one part."""
    attribs = dict(op.attribs)
    axis = AXIS - 2 if op.name == "conv" else AXIS
    padding = [tuple(p) for p in attribs["padding"]]
    padding[axis] = (part.pad_before, part.pad_after)
    attribs["padding"] = padding
    return attribs


def _chain_ops(graph: Graph, spec: LayerParallelSpec) -> list[Operation]:
    """The conv and chain operations, checked to form a chain of sole consumers."""
    producers = graph.producers()
    consumers = graph.consumers()
    conv = producers.get(spec.conv)
    if conv is None or conv.name != "conv":
        what = f"a '{conv.name}' result" if conv is not None else "not an instruction result"
        raise _fail("SPLIT-E010", spec, f"'{spec.conv}' is {what}; layer_parallel rewrites a conv")
    ops = [conv]
    previous = spec.conv
    for name in spec.chain:
        op = producers.get(name)
        if op is None:
            raise _fail("SPLIT-E011", spec, f"chain element '{name}' is not an instruction result")
        if op.name not in WINDOW_OPS | POINTWISE_OPS:
            raise _fail("SPLIT-E011", spec, f"chain element '{name}' is a '{op.name}'; supported: "
                        f"{', '.join(sorted(WINDOW_OPS | POINTWISE_OPS))}")
        refs = op.input_refs()
        if refs != [Ref(previous)]:
            raise _fail("SPLIT-E011", spec, f"chain element '{name}' must read '{previous}' and no other tensor; "
                        f"it reads {', '.join(r.name for r in refs) or 'none'}")
        ops.append(op)
        previous = name
    for op in ops[:-1]:
        result = op.output_refs()[0].name
        readers = consumers.get(result, [])
        if len(readers) != 1 or result in graph.outputs:
            raise _fail("SPLIT-E011", spec, f"'{result}' must be read only by the next element of the chain; "
                        f"it is read by {len(readers)} instruction(s)"
                        + (" and is a graph output" if result in graph.outputs else ""))
    for op in ops:
        if len(op.output_refs()) != 1:
            raise _fail("SPLIT-E011", spec, f"'{op.output_refs()[0].name}' has several results")
    return ops


def layer_parallel(graph: Graph, spec: LayerParallelSpec) -> Rewritten:
    """Rewrite `graph` (checked, flat) as described above; SplitError when not applicable."""
    ops = _chain_ops(graph, spec)
    conv = ops[0]
    names = {name for name in graph.tensors}
    filt = conv.inputs.get("filter")
    if not isinstance(filt, Ref) or graph.tensors.get(filt.name) is None or graph.tensors[filt.name].shape is None:
        raise _fail("SPLIT-E012", spec, f"'{spec.conv}': the filter must be a tensor of known shape")
    filter_shape = list(graph.tensors[filt.name].shape or [])
    layers: list[Window | None] = []
    for op in ops:
        source = op.input_refs()[0].name
        shape = graph.tensors[source].shape
        if shape is None:
            raise _fail("SPLIT-E012", spec, f"'{source}' has no known shape")
        if op.name == "conv":
            layers.append(_window(op, shape, int(filter_shape[AXIS]), spec))
        elif op.name in WINDOW_OPS:
            layers.append(_window(op, shape, int(op.attribs["size"][AXIS]), spec))
        else:
            layers.append(None)
    last = ops[-1].output_refs()[0].name
    out_shape = graph.tensors[last].shape or []
    extent = int(out_shape[AXIS])
    if not 2 <= spec.parts <= extent:
        raise _fail("SPLIT-E013", spec, f"parts = {spec.parts}: '{last}' has {extent} rows; parts must be in 2..{extent}")
    x = conv.input_refs()[0]
    rows = split_rows(extent, spec.parts)
    new_ops: list[Operation] = []
    part_results: list[list[str]] = []
    geometry: list[list[dict[str, int]]] = []
    for index, (begin, end) in enumerate(rows):
        parts = chain_parts(layers, begin, end)
        if any(p.in_end <= p.in_begin for p in parts):
            raise _fail("SPLIT-E013", spec, f"part {index} (rows {begin}..{end - 1} of '{last}') would read no real "
                        "input row (its windows cover padding only); use fewer parts")
        slice_name = f"{spec.conv}_p{index}_rows"
        results = [slice_name] + [f"{op.output_refs()[0].name}_p{index}" for op in ops]
        for name in results:
            if name in names:
                raise _fail("SPLIT-E014", spec, f"the rewrite would name a result '{name}', which the graph already uses")
        first = parts[0]
        new_ops.append(Operation("slice", {"input": x},
                                 {"axes": [AXIS], "begin": [first.in_begin], "end": [first.in_end], "stride": [1]},
                                 {"output": Ref(slice_name)}, graph.tensors[x.name].dtype))
        source = slice_name
        for op, part, name in zip(ops, parts, results[1:]):
            inputs = {k: (Ref(source) if v == op.input_refs()[0] and k == _data_param(op) else v)
                      for k, v in op.inputs.items()}
            attribs = _with_padding(op, part) if op.name == "conv" or op.name in WINDOW_OPS else dict(op.attribs)
            key = next(iter(op.outputs))
            new_ops.append(Operation(op.name, inputs, attribs, {key: Ref(name)}, op.dtype))
            source = name
        part_results.append(results)
        geometry.append([{"out_begin": p.out_begin, "out_end": p.out_end, "in_begin": p.in_begin,
                          "in_end": p.in_end, "pad_before": p.pad_before, "pad_after": p.pad_after} for p in parts])
    new_ops.append(Operation("concat", {"values": [Ref(r[-1]) for r in part_results]}, {"axis": AXIS},
                             {"value": Ref(last)}, graph.tensors[last].dtype))
    replaced = [op.output_refs()[0].name for op in ops]
    position = graph.operations.index(conv)
    removed = {id(op) for op in ops}
    before = [op for op in graph.operations[:position] if id(op) not in removed]
    after = [op for op in graph.operations[position:] if id(op) not in removed]
    return Rewritten(spec, before + new_ops + after, last, replaced, part_results, rows, geometry)


def _data_param(op: Operation) -> str:
    """The parameter holding the chain value (the first tensor parameter that is a reference)."""
    for key, value in op.inputs.items():
        if isinstance(value, Ref):
            return key
    raise ValueError(f"{op.name} has no tensor input")


@dataclass
class RewriteOutcome:
    """A description after all its rewrites: canonical text, the re-checked graph, the rewrites."""

    text: str
    graph: Graph
    rewrites: list[Rewritten]


def rewrite_graph(graph: Graph, specs: Sequence[LayerParallelSpec], file: str = "rewritten.nnef") -> RewriteOutcome:
    """Apply `specs` in order, print the result canonically and check it again.

    The graph returned is the checker's reading of the printed text (shapes inferred by
    the front end, not by this module); a finding there is a bug of the rewrite
    (SPLIT-E050), reported with the first finding.
    """
    from pipeline.nnef import build
    from pipeline.nnef.checker import check_text
    from pipeline.nnef.printer import print_document
    from pipeline.split.emit import graph_def

    current = graph
    done: list[Rewritten] = []
    text = ""
    for spec in specs:
        rewritten = layer_parallel(current, spec)
        done.append(rewritten)
        document = build.document([graph_def(graph.name, graph.inputs, graph.outputs, rewritten.operations)])
        text = print_document(document)
        report = check_text(text, file)
        if report.findings or len(report.graphs) != 1:
            first = report.findings[0] if report.findings else None
            detail = f"{first.span}: {first.code}: {first.message}" if first else "no graph"
            raise SplitError("SPLIT-E050", f"the rewritten description does not check: {detail}",
                             Location(key_path=spec.where))
        current = report.graphs[0]
    if not done:
        document = build.document([graph_def(graph.name, graph.inputs, graph.outputs, graph.operations)])
        text = print_document(document)
    return RewriteOutcome(text, current, done)
