"""ONNX -> NNEF: convert a model in memory, check the result, then publish it atomically.

What the export preserves: every ONNX node becomes NNEF statements computing the same
function in float32 (each converter's docstring states its mapping), every attribute is
written explicitly, every NNEF name and line traces to its ONNX tensor and node.

Who checks it, independently of the converters:
- before anything is written, our NNEF checker (certification profile) must accept the
  text, every NNEF operation must have reference semantics, and the shape the checker
  infers for every ONNX tensor must equal ONNX shape inference's (EXPORT-E011 otherwise);
- after export, pipeline.export.validate runs the ONNX model (onnxruntime) and the NNEF
  (reference interpreter) on the same seeded inputs (HLR-EXP-001), and
  pipeline.export.readback re-reads the files with the Khronos parser (HLR-FMT-005).

Nothing is written unless the whole export succeeds: the files are built in memory, then
written to a temporary directory beside OUTDIR, which replaces OUTDIR in one rename.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from pipeline.project.layout import EXPORT_GRAPH_FILE, EXPORT_PROVENANCE_FILE
from pipeline.files.atomic import canonical_json, write_bytes
from pipeline.export.context import ExportContext
from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError, node_error
from pipeline.export.fold import dead_nodes, fold, live_tensors, reinfer
from pipeline.export.names import sanitize
from pipeline.export.onnx_model import DEFAULT_DOMAINS, Node, OnnxModel, load_onnx
from pipeline.export.provenance import build_provenance
from pipeline.export.converters import find, supported_operators
from pipeline.nnef import build
from pipeline.nnef.catalogue import EXECUTABLE
from pipeline.nnef.checker import check_text
from pipeline.nnef.graph import Graph
from pipeline.nnef.masks import Mask, judge, non_finite
from pipeline.nnef.printer import print_document
from pipeline.nnef.tensorfile import encode_tensor

log = logging.getLogger(__name__)

GRAPH_FILE = EXPORT_GRAPH_FILE
PROVENANCE_FILE = EXPORT_PROVENANCE_FILE
EXPORT_FILES = (GRAPH_FILE, PROVENANCE_FILE)


@dataclass
class ExportResult:
    """An export: the files (name -> bytes), the checked flat graph, names and provenance."""

    model: OnnxModel
    text: str
    graph: Graph
    files: dict[str, bytes]
    provenance: dict
    variables: dict[str, np.ndarray]
    inputs: dict[str, str]
    outputs: dict[str, str]
    masks: list[Mask] = field(default_factory=list)


def _unsupported(ctx: ExportContext, skipped: set[int]) -> list[tuple[Node, str]]:
    """Each converted node whose operator (type, domain or version) has no converter, with what is wrong."""
    problems = []
    for node in ctx.model.nodes:
        if node.index in skipped:
            continue
        conv = find(node.op_type) if node.domain in DEFAULT_DOMAINS else None
        where = f"node '{node.label}' (index {node.index})"
        if conv is None:
            domain = f" (domain '{node.domain}')" if node.domain not in DEFAULT_DOMAINS else ""
            problems.append((node, f"{node.op_type}{domain} at {where}"))
        elif node.since_version not in conv.versions:
            problems.append((node, f"{node.op_type} version {node.since_version} at {where} (supported versions: "
                            f"{', '.join(map(str, conv.versions))})"))
    return problems


def _convert_nodes(ctx: ExportContext) -> None:
    """Every unsupported operator on the data path is reported in one EXPORT-E003 before any conversion:
    folded nodes (constants) and dead ones (read only by folded shape computations) are no blockers and
    are not named."""
    model = ctx.model
    folded, values = fold(model, ctx.supported)
    dead = dead_nodes(model, folded)
    problems = _unsupported(ctx, folded | dead)
    if problems:
        first = problems[0][0]
        count = f"{len(problems)} unsupported operator{'s' if len(problems) > 1 else ''}"
        listed = "; ".join(text for _, text in problems)
        raise node_error("EXPORT-E003", f"{count}: {listed}", node_name=first.label,
                         op_type=first.op_type, opset=first.opset, supported=ctx.supported)
    reinfer(model, values)
    ctx.live = live_tensors(model, folded | dead)
    for node in model.nodes:
        if node.index in dead:
            ctx.begin(node)
            ctx.records[node.index].unused = True
            ctx.records[node.index].dropped.extend(name for name in node.outputs if name)
            ctx.end()
            continue
        if node.index in folded:
            ctx.begin(node)
            ctx.records[node.index].folded = True
            for index, name in enumerate(node.inputs):
                if name and name in ctx.constants:
                    ctx.constant(index, "folded constant computation")  # recorded as a parameter
            for name in node.outputs:
                if name:
                    ctx.define_constant(name, values[name])
            ctx.end()
            continue
        conv = find(node.op_type)
        unknown = sorted(set(node.attrs) - conv.attributes)
        if unknown:
            raise node_error("EXPORT-E004", f"attribute(s) {', '.join(unknown)} not supported",
                             node_name=node.label, op_type=node.op_type, opset=node.opset, supported=ctx.supported)
        ctx.begin(node)
        conv.fn(ctx, node)
        ctx.end()


def _graph_outputs(ctx: ExportContext) -> list[str]:
    outputs = []
    for name in ctx.model.outputs:
        if name in ctx.model.inputs or name in ctx.model.initializers:
            raise ExportError("EXPORT-E004", f"graph output '{name}' is a graph input or an initializer, not computed "
                              "by a node", Location(element=f"graph output '{name}'"))
        if name not in ctx.defined:
            raise ExportError("EXPORT-E011", f"graph output '{name}' was never defined", Location(element=f"graph output '{name}'"))
        outputs.append(ctx.defined[name])
    return outputs


def _self_check(ctx: ExportContext, text: str) -> tuple[Graph, list[int]]:
    """Our checker accepts the text, every operation is executable, shapes equal ONNX's."""
    report = check_text(text, GRAPH_FILE, profile="certification")
    errors = [f for f in report.findings if f.is_error]
    if errors or not report.graphs:
        first = "; ".join(f"{f.span}: {f.code}: {f.message}" for f in errors[:3]) or "no graph"
        raise ExportError("EXPORT-E011", f"the NNEF written does not pass the checker: {first}")
    graph = report.graphs[0]
    not_executable = sorted({op.name for op in graph.operations} - EXECUTABLE)
    if not_executable:
        raise ExportError("EXPORT-E011", f"operations without reference semantics: {', '.join(not_executable)}")
    for onnx_name, nnef_name in ctx.defined.items():
        ours = graph.tensors[nnef_name].shape
        theirs = ctx.shape_of(onnx_name)
        if ours is None or list(ours) != theirs:
            raise ExportError("EXPORT-E011", f"tensor '{onnx_name}': the NNEF checker infers shape {ours}, ONNX "
                              f"shape inference {theirs}", Location(element=f"NNEF tensor '{nnef_name}'"))
    document = report.documents[GRAPH_FILE]
    lines = [assignment.span.line for assignment in document.graphs[0].body]
    return graph, lines


def _judge_non_finite(ctx: ExportContext, graph: Graph) -> list[Mask]:
    """The -inf the load let through (guard.check_finite) stands only as an attention mask
    (pipeline.nnef.masks): read as a parameter by a converted node, or stored in a variable that is
    no mask, it is EXPORT-E017; a mask that masks a whole softmax row is EXPORT-E019."""
    for index, record in sorted(ctx.records.items()):
        if record.folded or record.unused:
            continue
        for name in record.parameters:
            first = non_finite(ctx.constants[name]) if name in ctx.constants else None
            if first is not None:
                node = ctx.model.nodes[index]
                raise ExportError("EXPORT-E017", f"'{name}' holds {first[1]} at index {list(first[0])}, read as a "
                                  f"parameter by node '{node.label}' ({node.op_type}); a -inf is accepted only as an "
                                  "attention mask ahead of a Softmax (docs/export.md, Limits)",
                                  Location(element=f"node '{node.label}'"))
    records = {record.name: record for record in ctx.variables.values()}
    masks, problems = judge(graph, {name: record.data for name, record in records.items()})
    for problem in problems:
        record = records[problem.variable]
        what = _constant_origin(ctx, record.onnx_name)
        where = Location(element=what)
        if problem.full_row:
            raise ExportError("EXPORT-E019", f"the attention mask {what} (NNEF variable '{problem.variable}') "
                              f"{problem.reason}", where)
        raise ExportError("EXPORT-E017", f"{what} holds {problem.value} at index {list(problem.index)} and "
                          f"{problem.reason}; a -inf is accepted only as an attention mask ahead of a Softmax "
                          "(docs/export.md, Limits)", where)
    return masks


def _constant_origin(ctx: ExportContext, name: str) -> str:
    """How a refusal names a constant: an initializer, a Constant node's value or a folded computation's output."""
    if name in ctx.model.initializers:
        return f"initializer '{name}'"
    index = ctx.constant_nodes.get(name)
    if index is None:
        return f"constant '{name}'"
    node = ctx.model.nodes[index]
    kind = "the value of Constant node" if node.op_type == "Constant" else f"the folded output of {node.op_type} node"
    return f"'{name}' ({kind} '{node.label}')"


def convert(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> ExportResult:
    """Export in memory (nothing written); ExportError (EXPORT-Ennn) on any unsupported construct."""
    model = load_onnx(source)
    ctx = ExportContext(model, supported_operators())
    inputs = ctx.declare_inputs()
    _convert_nodes(ctx)
    if not inputs:
        raise ExportError("EXPORT-E004", "the graph has no input; an NNEF graph needs at least one", Location(element="graph"))
    outputs = _graph_outputs(ctx)
    graph_name = sanitize(model.graph_name) if model.graph_name else "main"
    document = build.document([build.graph(graph_name, inputs, outputs, ctx.body)])
    document = build.with_operation_extensions(document)
    text = print_document(document)
    graph, lines = _self_check(ctx, text)
    masks = _judge_non_finite(ctx, graph)
    files: dict[str, bytes] = {GRAPH_FILE: text.encode("utf-8")}
    variables = {}
    for record in ctx.variables.values():
        files[f"{record.name}.dat"] = encode_tensor(record.data)
        variables[record.name] = record.data
    provenance = build_provenance(ctx, graph_name, text, lines, files, GRAPH_FILE, outputs, masks)
    files[PROVENANCE_FILE] = canonical_json(provenance).encode("utf-8")
    log.info("exported %d ONNX nodes to %d NNEF statements and %d tensor files",
             len(model.nodes), len(ctx.body), len(variables))
    return ExportResult(
        model=model,
        text=text,
        graph=graph,
        files=files,
        provenance=provenance,
        variables=variables,
        inputs={name: ctx.defined[name] for name in model.inputs},
        outputs=dict(zip(model.outputs, outputs)),
        masks=masks,
    )


def _check_outdir(outdir: Path) -> None:
    if not outdir.exists():
        return
    if not outdir.is_dir():
        raise ExportError("EXPORT-E010", "the output path exists and is not a directory", Location.in_file(outdir))
    if any(outdir.iterdir()) and not (outdir / PROVENANCE_FILE).is_file():
        raise ExportError("EXPORT-E010", f"the output directory is not empty and holds no previous export "
                          f"({PROVENANCE_FILE}); refusing to replace it", Location.in_file(outdir))


def publish(files: dict[str, bytes], outdir: str | os.PathLike[str]) -> Path:
    """Write `files` as the whole content of `outdir`: temp directory, then one rename.

    A previous export in `outdir` is replaced as a whole (stale tensor files go with it).
    """
    target = Path(outdir)
    _check_outdir(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise ExportError("EXPORT-E010", f"cannot create the output directory: {exc}", Location.in_file(target)) from None
    try:
        for name in sorted(files):
            write_bytes(staging / name, files[name])
        os.chmod(staging, 0o755)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, retired / target.name)
            os.replace(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ExportError("EXPORT-E010", f"cannot write the export: {exc}", Location.in_file(target)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def export_model(source: str | os.PathLike[str] | bytes | onnx.ModelProto,
                 outdir: str | os.PathLike[str]) -> ExportResult:
    """Export `source` to `outdir` (graph.nnef, <label>.dat, provenance.json); all or nothing."""
    _check_outdir(Path(outdir))
    result = convert(source)
    publish(result.files, outdir)
    return result
