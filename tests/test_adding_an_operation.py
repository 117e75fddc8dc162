"""docs/adding-an-operation.md's worked example stays true: every cell of its `leaky_relu` column against the code.

The page walks one operation through every place an operation touches; when a stage starts to run it
(the CUDA emitter did) or stops, the page must say so. The facts come from the registries the support
table is generated from (pipeline/operations.py), never from a list here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from pipeline import operations
from tests.projects import ROOT

PAGE = ROOT / "docs" / "adding-an-operation.md"


def example() -> tuple[str, str, dict[str, list[str]]]:
    """(NNEF operation, ONNX operator, step -> the example's cells) of the page."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"with `(\w+)` \(ONNX `(\w+)`\) as the example", text)
    assert match, "the page names its example operation"
    op, onnx_op = match.group(1), match.group(2)
    cells: dict[str, list[str]] = {}
    for line in text.splitlines():
        columns = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(columns) == 4 and columns[0] not in ("step", "---"):
            cells.setdefault(columns[0], []).append(columns[3])
    return op, onnx_op, cells


def module_of(function: object) -> str:
    return Path(inspect.getsourcefile(function)).name  # type: ignore[arg-type]


def test_the_worked_example_is_what_the_code_does() -> None:
    from pipeline.codegen.c import kernels as c_kernels
    from pipeline.codegen.cuda import kernels as cuda_kernels
    from pipeline.export.converters import converters
    from pipeline.nnef.catalogue import EXECUTABLE
    from pipeline.numerics.rules import rules
    from pipeline.semantics.kernels import lookup
    from pipeline.split.layer_parallel import POINTWISE_OPS, WINDOW_OPS

    op, onnx_op, cells = example()
    reg = operations.registries()
    format_cells = " ".join(cells["format"])
    assert f"fragment {op}(" in (ROOT / "pipeline/nnef/stdlib.nnef").read_text() and op in format_cells
    assert ("`EXECUTABLE`" in format_cells) == (op in EXECUTABLE)
    reference = cells["reference"][0]
    assert module_of(lookup(op)) in reference
    converter = converters()[onnx_op]
    mapping = converter.fn.__doc__.split("(ONNX")[0].strip().rstrip(".")
    assert module_of(converter.fn) in cells["export"][0] and mapping in cells["export"][0], (mapping, cells["export"])
    rule, bound = rules().get(onnx_op), cells["error bound"][0]
    assert (rule is not None) == (not bound.startswith("refused")), bound
    if rule is not None:  # the family module that registers it, and the Step class it names there
        named = re.search(r"`(\w+\.py)`: `(\w+)`", bound)
        assert named and named.group(1) == module_of(rule.linearize), (bound, module_of(rule.linearize))
        assert isinstance(getattr(inspect.getmodule(rule.linearize), named.group(2), None), type), bound
    split = cells["split"][0]
    assert ("POINTWISE_OPS" in split) == (op in POINTWISE_OPS) and ("WINDOW_OPS" in split) == (op in WINDOW_OPS)
    for stage, table, row in (("C", c_kernels.EMITTERS, "C"), ("CUDA", cuda_kernels.EMITTERS, "CUDA")):
        cell = cells[row][0]
        runs = op in reg.supported[stage]
        assert runs != cell.startswith("refused"), f"{stage}: the code {'runs' if runs else 'refuses'} {op}: {cell!r}"
        if runs:
            assert module_of(table[op]) in cell
    nvdla = cells["NVDLA"][0]
    assert (op in reg.supported["NVDLA"]) != nvdla.startswith("refused")
    if op in reg.supported["NVDLA"]:
        assert operations.NVDLA_UNITS[op] in nvdla
    refusing = [stage for stage in operations.STAGES if op in operations.refusals(reg, stage)]
    decisions = cells["decisions"][0]
    if refusing:
        assert all(f"`{stage}`" in decisions for stage in refusing), (refusing, decisions)
    else:
        assert decisions.startswith("none"), decisions
