"""docs/operations.md is what the registries say, and no operation is half added.

After a merge that adds or changes an operation: `python -m pipeline operations --write`
rewrites docs/operations.md; pipeline/operations.py `REFUSED` records why a stage does not
run an operation (docs/adding-an-operation.md).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline import operations
from tests.projects import ROOT


@pytest.fixture(scope="module")
def reg() -> operations.Registries:
    return operations.registries()


def test_operations_md_is_current(reg: operations.Registries) -> None:
    current = (ROOT / operations.DOC).read_text(encoding="utf-8")
    assert current == operations.render(reg) + "\n", (
        "docs/operations.md is not current: run `python -m pipeline operations --write`")


def test_every_catalogue_operation_is_supported_or_refused_by_each_stage(reg: operations.Registries) -> None:
    assert operations.undecided(reg) == {}, "add the operation to the stage, or its reason to REFUSED"
    assert operations.contradictions(reg) == {}, "an operation is both run and refused, or is not in the catalogue"
    for stage in operations.STAGES:
        assert reg.supported[stage], stage
        # a generator runs nothing the reference semantics does not define: it is checked against it
        if stage != "reference":
            assert reg.supported[stage] <= reg.supported["reference"] | set(operations.STRUCTURAL), stage
    assert set(operations.REASONS) >= {r for stage in operations.STAGES for r in operations.refusals(reg, stage).values()}


def test_a_half_added_operation_is_caught(reg: operations.Registries) -> None:
    """A catalogue operation the reference runs but a generator neither runs nor refuses is reported."""
    supported = dict(reg.supported)
    supported["reference"] = supported["reference"] | {"acos"}
    half = operations.Registries(reg.catalogue, reg.converters, supported, reg.chain, reg.bound_rules, reg.bound_exact,
                                 reg.bound_refused)
    refused = dict(operations.REFUSED["reference"])
    try:
        del operations.REFUSED["reference"]["acos"]
        found = operations.undecided(half)
    finally:
        operations.REFUSED["reference"].clear()
        operations.REFUSED["reference"].update(refused)
    assert all("acos" in found[stage] for stage in ("C", "CUDA", "NVDLA")), found


def test_every_converter_names_catalogue_operations(reg: operations.Registries) -> None:
    for op_type, converter in reg.converters.items():
        ops = operations.nnef_operations_of(converter, reg.catalogue)
        assert ops or op_type == "Constant", f"{op_type}: its docstring names no NNEF operation after '->'"
        assert set(ops) <= set(reg.catalogue)
    # the docstring of LRN names floor and ceil only inside a bracketed formula: they are not taken
    assert operations.nnef_operations_of(reg.converters["LRN"], reg.catalogue) == ["local_response_normalization"]


def test_nvdla_support_is_read_from_its_legalization(reg: operations.Registries) -> None:
    nvdla = reg.supported["NVDLA"]
    assert {"conv", "relu", "max_pool", "softmax", "sigmoid", "tanh"} <= nvdla and "exp" not in nvdla
    assert "kernel 1-8" in operations._cell(reg, "NVDLA", "max_pool")


def test_the_command_checks_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stale = tmp_path / "operations.md"
    stale.write_text("# old\n")
    run = [sys.executable, "-m", "pipeline", "operations"]
    checked = subprocess.run(run + ["--check", str(stale)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 1 and "is not current" in checked.stderr
    written = subprocess.run(run + ["--write", str(stale)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr
    again = subprocess.run(run + ["--check", str(stale)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
