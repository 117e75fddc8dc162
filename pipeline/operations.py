"""Which operation runs where: the support table, generated from the code's own registries.

`python -m pipeline operations --write docs/operations.md` rewrites docs/operations.md; a
test (tests/test_operations.py) fails when the file is not what the code says now. Sources:

* export: pipeline.export.converters (the ONNX operators with a converter, their operator
  versions, and the NNEF operations named after `->` in the converter's docstring, which the
  registry requires to state the mapping);
* the NNEF operations: pipeline.nnef.catalogue (the standard fragments and the extension's);
* reference: pipeline.semantics.kernels; C and CUDA: the emitter registries of
  pipeline.codegen.c.kernels and pipeline.codegen.cuda.kernels;
* NVDLA: the operations pipeline.split.nvdla_legalize.legalize dispatches on (read from its
  source: a chain of `op.name` tests), with the limits of its `NV_FULL` configuration;
* layer-parallel split: pipeline.split.layer_parallel (a `conv` head and its chain);
* error bound: pipeline.numerics.errorbound (its rules, the operators exact in FP16 storage, the ones
  refused there).

Every catalogue operation a stage does not support is listed in `REFUSED` with the reason:
the test keeps support and refusal complete and disjoint for every stage, so an operation
cannot be half added (docs/adding-an-operation.md).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

DOC = Path("docs") / "operations.md"
STAGES = ("reference", "C", "CUDA", "NVDLA")

# Declarations and the multi-item instructions: no stage computes them; every step handles them
# as what they are (a tensor's storage, a value exchanged between items).
STRUCTURAL: dict[str, str] = {
    "external": "an input: its buffer is the item's input",
    "variable": "a parameter: constant data from its .dat file (its SHA-256 traced)",
    "constant": "a literal tensor: constant data",
    "variablesync": "declares a value exchanged between items (the split writes it)",
    "send_var": "sends a value to other items (a sync transition of the Petri net)",
    "get_var": "receives a value from its writer item",
}

# --- why a stage does not run an operation -----------------------------------------------------

NOT_IN_REFERENCE = "not in the reference semantics, which every generator is checked against"
REASONS: dict[str, str] = {
    "not yet": "not implemented yet: the stage refuses it with a coded error naming the operation",
    "no reference": NOT_IN_REFERENCE,
    "trigonometric": "no float32 program shared by the reference and the generators "
                     "(pipeline/semantics/transcendental.py covers exp, log, tanh, sigmoid and their kin)",
    "quantized": "quantization: the pipeline computes in float32",
    "regions": "regions of interest: their number and extent are data, which a static schedule cannot size",
    "state": "updates a variable (training state); the descriptions here are inference graphs",
    "logical": "logical tensors: the generated code and loadables hold floating-point tensors only",
    "indices": "integer index tensors: the generated code and loadables hold floating-point tensors only",
    "no unit": "no NVDLA unit or CPU fallback implements it (legalization refuses it, SPLIT-E101)",
}

_TRIGONOMETRIC = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan"}
_QUANTIZED = {"linear_quantize", "logarithmic_quantize", "min_max_linear_quantize", "zero_point_linear_quantize"}
_REGIONS = {"avg_roi_align", "avg_roi_pool", "max_roi_align", "max_roi_pool", "roi_resample"}
_LOGICAL = {"and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "select", "all_reduce", "any_reduce"}
_INDICES = {"argmax_reduce", "argmin_reduce", "argmax_pool", "max_pool_with_index", "gather", "sample"}


def _reasons(groups: Mapping[str, Iterable[str]]) -> dict[str, str]:
    return {op: reason for reason, ops in groups.items() for op in ops}


# stage -> operation -> reason key (REASONS). The reference's gaps are every generator's
# (NOT_IN_REFERENCE, added by `refusals`): they are not repeated here.
REFUSED: dict[str, dict[str, str]] = {
    "reference": _reasons({
        "trigonometric": _TRIGONOMETRIC, "quantized": _QUANTIZED, "regions": _REGIONS, "state": {"update"},
        "not yet": {"cast", "debox", "desample", "separable_conv", "separable_deconv"},
    }),
    "C": _reasons({
        "logical": _LOGICAL - {"select"}, "indices": _INDICES,
        "not yet": {"area_downsample", "nearest_downsample", "l1_normalization", "l2_normalization",
                    "local_contrast_normalization", "local_mean_normalization", "local_variance_normalization",
                    "moments", "rms_pool", "copy_n"},
    }),
    "CUDA": _reasons({
        "logical": _LOGICAL - {"select"}, "indices": _INDICES,
        "not yet": {"area_downsample", "nearest_downsample", "l1_normalization", "l2_normalization",
                    "local_contrast_normalization", "local_mean_normalization", "local_variance_normalization",
                    "moments", "rms_pool", "copy_n", "add_n", "ceil", "elu", "gelu",
                    "log2", "min_reduce", "rsqr", "rsqrt", "selu",
                    "sign", "silu", "softabs", "stack", "tile", "unstack"},
    }),
    "NVDLA": _reasons({
        "logical": _LOGICAL - {"select"}, "indices": _INDICES,
        "no unit": {"select", "abs", "add_n", "area_downsample", "box", "ceil", "copy_n", "deconv", "elu", "erf", "exp", "floor",
                    "gelu", "l1_normalization", "l2_normalization", "local_contrast_normalization",
                    "local_mean_normalization", "local_variance_normalization", "log", "log2", "min_reduce",
                    "moments", "multilinear_upsample", "nearest_downsample", "nearest_upsample", "neg", "pad",
                    "pow", "rcp", "rms_pool", "round", "rsqr", "rsqrt", "selu", "sign", "silu",
                    "slice", "softabs", "softplus", "split", "sqr", "sqrt", "stack", "sum_reduce",
                    "tile", "unstack"},
    }),
}

# What of NV_FULL bounds an operation NVDLA runs, and which unit runs it (docs/codegen-nvdla.md).
NVDLA_UNITS: dict[str, str] = {
    "conv": "CONV + SDP", "linear": "CONV (1x1) + SDP", "matmul": "CONV (1x1) + SDP",
    "add": "SDP", "mul": "SDP", "min": "SDP", "max": "SDP", "sub": "SDP", "div": "SDP", "relu": "SDP",
    "leaky_relu": "SDP", "prelu": "SDP", "clamp": "SDP", "batch_normalization": "SDP",
    "max_pool": "PDP", "avg_pool": "PDP", "mean_reduce": "PDP", "max_reduce": "PDP",
    "sigmoid": "SDP (lookup table)", "tanh": "SDP (lookup table)",
    "local_response_normalization": "CDP", "softmax": "EMU",
    "reshape": "memory only", "squeeze": "memory only", "unsqueeze": "memory only", "copy": "memory only",
    "transpose": "memory only, CONV or folded", "concat": "CONV + SDP",
}


def _nvdla_limits(op: str) -> str:
    from pipeline.split.nvdla_legalize import NV_FULL as L

    def span(pair: tuple[int, int]) -> str:
        return f"{pair[0]}-{pair[1]}"

    notes = {
        "conv": f"kernel {span(L.conv_kernel)}, padding {span(L.conv_pad)}, stride {span(L.conv_stride)}; 2-d, "
                "constant filter and bias, border 'constant'; data and weights allocated in the convolution "
                "buffer's 16 banks of 256 x 128 B, split in bands of output rows or along input channels, else refused",
        "linear": "as a 1x1 convolution: constant weights",
        "matmul": "as a 1x1 convolution: a constant right operand",
        "sub": "second operand a constant (rewritten as add of -c)",
        "div": "second operand a constant (rewritten as mul by 1/c)",
        "prelu": "a constant slope",
        "clamp": "as max then min",
        "batch_normalization": "folded into a scale and a bias",
        "local_response_normalization": f"across channels only, size in {', '.join(map(str, L.lrn_sizes))}",
        "concat": "along channels, no constant operand: 1x1 selection convolutions summed on the SDP (exact)",
        "softmax": "over the channels of a 1 x C tensor (NVIDIA's emulator task)",
        "transpose": "one that keeps the memory layout (an alias), permutes channels (a 1x1 convolution) or "
                     "flattens into a fully connected layer (folded into its kernel)",
        "sigmoid": "the SDP's linear and exponential lookup tables, interpolated",
        "tanh": "the SDP's linear and exponential lookup tables, interpolated",
    }
    window = f"kernel {span(L.pool_kernel)}, padding {span(L.pool_pad)}, stride {span(L.pool_stride)}"
    for pool in ("max_pool", "avg_pool"):
        notes[pool] = f"over H and W, {window}, no dilation"
    for reduce in ("mean_reduce", "max_reduce"):
        notes[reduce] = f"over axes [2, 3] as a global pooling: H and W each {span(L.pool_kernel)}"
    unit = NVDLA_UNITS.get(op, "")
    note = notes.get(op, "")
    return f"{unit}: {note}" if unit and note else unit or note


# --- the registries ------------------------------------------------------------------------------

def nvdla_operations() -> frozenset[str]:
    """The operations NVDLA legalization dispatches on (`op.name == ...` / `op.name in (...)` in `legalize`
    and its per-operation dispatch `_legalize_op`)."""
    from pipeline.split import nvdla_legalize

    names: set[str] = set()
    for function in (nvdla_legalize.legalize, nvdla_legalize._legalize_op):
        for node in ast.walk(ast.parse(inspect.getsource(function))):
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "name"
                    and isinstance(node.left.value, ast.Name) and node.left.value.id == "op"):
                for comparator in node.comparators:
                    names.update(c.value for c in ast.walk(comparator)
                                 if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return frozenset(names - set(STRUCTURAL))


@dataclass(frozen=True)
class Registries:
    """What each stage supports, read from the code."""

    catalogue: Mapping[str, Any]
    converters: Mapping[str, Any]
    supported: Mapping[str, frozenset[str]]
    chain: frozenset[str]
    bound_rules: frozenset[str]
    bound_exact: frozenset[str]
    bound_refused: Mapping[str, str]


def registries() -> Registries:
    from pipeline.numerics import errorbound
    from pipeline.codegen.c import kernels as c_kernels
    from pipeline.codegen.cuda import kernels as cuda_kernels
    from pipeline.export.converters import converters
    from pipeline.nnef.catalogue import standard_catalogue
    from pipeline.semantics.kernels import supported_operations
    from pipeline.split.layer_parallel import POINTWISE_OPS, WINDOW_OPS

    supported = {
        "reference": frozenset(supported_operations()) - set(STRUCTURAL),
        "C": frozenset(c_kernels.supported_operations()) | c_kernels.VIEW_OPERATIONS,
        "CUDA": frozenset(cuda_kernels.EMITTERS) | cuda_kernels.VIEW_OPERATIONS,
        "NVDLA": nvdla_operations(),
    }
    return Registries(standard_catalogue(), converters(), supported, frozenset(WINDOW_OPS | POINTWISE_OPS),
                      frozenset(errorbound.RULES), errorbound.EXACT_IN_STORAGE, dict(errorbound.STORAGE_REFUSED))


def refusals(reg: Registries, stage: str) -> dict[str, str]:
    """operation -> reason key for `stage`: its own decisions, and (for a generator) the reference's gaps."""
    found = dict(REFUSED[stage])
    if stage != "reference":
        for op in reg.catalogue:
            if op not in reg.supported["reference"] and op not in STRUCTURAL and op not in found:
                found[op] = "no reference"
    return found


def undecided(reg: Registries) -> dict[str, list[str]]:
    """stage -> catalogue operations it neither supports nor refuses (must be empty)."""
    out = {}
    for stage in STAGES:
        refused = refusals(reg, stage)
        missing = sorted(op for op in reg.catalogue
                         if op not in STRUCTURAL and op not in reg.supported[stage] and op not in refused)
        if missing:
            out[stage] = missing
    return out


def contradictions(reg: Registries) -> dict[str, list[str]]:
    """stage -> operations both supported and refused, or refused though not in the catalogue (must be empty)."""
    out = {}
    for stage in STAGES:
        refused = REFUSED[stage]
        bad = sorted(op for op in refused if op in reg.supported[stage] or op not in reg.catalogue)
        if bad:
            out[stage] = bad
    return out


def nnef_operations_of(converter: Any, catalogue: Mapping[str, Any]) -> list[str]:
    """The NNEF operations a converter's docstring names after its first `->` (bracketed formulas aside)."""
    doc = " ".join(converter.doc.split())
    after = doc.split("->", 1)[1] if "->" in doc else ""
    while re.search(r"\[[^\[\]]*\]", after):
        after = re.sub(r"\[[^\[\]]*\]", "", after)
    return sorted({m for m in re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", after) if m in catalogue})


# --- the document --------------------------------------------------------------------------------

def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
            + ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows] + [""])


def _cell(reg: Registries, stage: str, op: str) -> str:
    if op in STRUCTURAL:
        return "handled"
    if op in reg.supported[stage]:
        limits = _nvdla_limits(op) if stage == "NVDLA" else ""
        return f"yes ({limits})" if limits else "yes"
    return f"no: {refusals(reg, stage).get(op, 'UNDECIDED')}"


def _all_of(reg: Registries, stage: str, ops: list[str]) -> str:
    if not ops:
        return "-"
    missing = [op for op in ops if op not in reg.supported[stage] and op not in STRUCTURAL]
    if not missing:
        return "yes"
    return "all but " + ", ".join(missing) if len(missing) < len(ops) else "no"


def _bound(reg: Registries, op_type: str) -> str:
    if op_type == "Constant":
        return "-"
    if op_type not in reg.bound_rules:
        return "no rule (BOUND-E001)"
    if op_type in reg.bound_refused:
        return "rule; refused in FP16 storage (BOUND-E004)"
    return "rule; exact in FP16 storage" if op_type in reg.bound_exact else "rule"


def render(reg: Registries | None = None) -> str:
    """docs/operations.md."""
    reg = reg or registries()
    produced: dict[str, list[str]] = {}
    onnx_rows = []
    for op_type, conv in reg.converters.items():
        ops = nnef_operations_of(conv, reg.catalogue)
        for op in ops:
            produced.setdefault(op, []).append(op_type)
        onnx_rows.append([op_type, ", ".join(map(str, conv.versions)), ", ".join(ops) or "(none: a constant)"]
                         + [_all_of(reg, stage, ops) for stage in STAGES] + [_bound(reg, op_type)])
    nnef_rows = []
    for op in sorted(reg.catalogue):
        if op in STRUCTURAL:
            continue
        sig = reg.catalogue[op]
        split = "head" if op == "conv" else "chain" if op in reg.chain else ""
        nnef_rows.append([op, sig.section or sig.origin, ", ".join(produced.get(op, []))]
                         + [_cell(reg, stage, op) for stage in STAGES] + [split])
    counts = {stage: len(reg.supported[stage] & set(reg.catalogue)) for stage in STAGES}
    lines = [
        "# Operations by target",
        "",
        "<!-- Generated by `python -m pipeline operations --write docs/operations.md` from the code's registries",
        "(pipeline/operations.py names them); tests/test_operations.py fails when this file is not current.",
        "Do not edit by hand. -->",
        "",
        f"Which operation runs where. The export accepts {len(reg.converters)} ONNX operators; the NNEF catalogue "
        f"holds {len(reg.catalogue)} operations ({len(STRUCTURAL)} of them declarations or multi-item "
        f"instructions). Of these, the reference semantics runs {counts['reference']}, the C generator "
        f"{counts['C']}, the CUDA generator {counts['CUDA']} and NVDLA (nv_full, FP16) {counts['NVDLA']}. "
        "A model runs on a target when every operation of its items does: a deployment puts on a CPU item "
        "what a GPU or DLA item cannot run (docs/deploy.md). Adding an operation: "
        "[adding-an-operation.md](adding-an-operation.md).",
        "",
        "## ONNX operators the export accepts",
        "",
        "NNEF operations: those the converter writes (named in its docstring; docs/export.md has each "
        "mapping in full). A target column says whether every one of them runs there (`all but x`: the "
        "forms the converter writes with x do not). Error bound: the rule "
        "of `pipeline.numerics.rules` (or the expansion of `pipeline.numerics.graph`) that encloses the operator's "
        "exact result and bounds its rounding error (docs/compare.md): the tolerance justification and the NVDLA FP16 "
        "bound need one for every operator of a model.",
        "",
    ]
    lines += _table(["ONNX operator", "operator versions", "NNEF operations", *STAGES, "error bound"], onnx_rows)
    lines += [
        "## NNEF operations by target",
        "",
        "`yes`: the stage runs it (NVDLA: the unit and the limits of nv_full); `no`: the stage refuses it "
        "with a coded error, for the reason named below. Layer-parallel: the operations a `layer_parallel` "
        "rewrite takes (docs/split.md): a `conv` head and a chain of window and point-wise operations.",
        "",
    ]
    lines += _table(["operation", "section", "from ONNX", *STAGES, "layer-parallel"], nnef_rows)
    lines += ["## Why a stage refuses an operation", ""]
    lines += _table(["reason", "meaning"], [[key, text] for key, text in REASONS.items()])
    lines += ["## Declarations and multi-item instructions", "",
              "Every step handles these as what they are; none computes anything.", ""]
    lines += _table(["operation", "what it is"], [[op, text] for op, text in STRUCTURAL.items()])
    return "\n".join(lines)


# --- the command ---------------------------------------------------------------------------------

def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "operations", help="which operation runs where (writes or checks docs/operations.md)",
        description="Print the operation support table generated from the registries (export, catalogue, "
                    "reference, C, CUDA, NVDLA, error bound); --write rewrites docs/operations.md, --check "
                    "exits 1 when it is not current.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", nargs="?", const=str(DOC), metavar="PATH", help=f"write the table (default {DOC})")
    mode.add_argument("--check", nargs="?", const=str(DOC), metavar="PATH",
                      help=f"exit 1 if PATH (default {DOC}) differs from the table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.files.atomic import write_text
    from pipeline.terminal import EXIT_FAILED, EXIT_OK, say

    reg = registries()
    problems = {**{f"{s} undecided": v for s, v in undecided(reg).items()},
                **{f"{s} contradicts": v for s, v in contradictions(reg).items()}}
    for what, ops in problems.items():
        say(f"error OPS-E001: {what}: {', '.join(ops)} (pipeline/operations.py REFUSED; "
              "docs/adding-an-operation.md)", file=sys.stderr)
    text = render(reg) + "\n"
    if args.write:
        write_text(Path(args.write), text)
        say(f"wrote {args.write}")
    elif args.check:
        path = Path(args.check)
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), str(path), "generated", lineterm="", n=0)
            say("\n".join(list(diff)[:40]))
            say(f"{path} is not current: run `python -m pipeline operations --write {path}`", file=sys.stderr)
            return EXIT_FAILED
    else:
        sys.stdout.write(text)
    return EXIT_FAILED if problems else EXIT_OK
