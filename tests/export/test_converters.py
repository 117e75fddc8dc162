"""The converter registry: complete for the issue's operators, every installed operator
version accounted for, docstrings, documentation; the doit task and the check registry."""

from __future__ import annotations

from pathlib import Path

import onnx

from pipeline.evidence.checklinks import all_checks
from pipeline.export.onnx_model import MIN_OPSET, max_opset
from pipeline.export.converters import converters, supported_operators
from pipeline.export.tasks import task_export
from pipeline.project.layout import model_names

ROOT = Path(__file__).parents[2]

ISSUE_OPERATORS = set(
    """Conv ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm MatMul Relu LeakyRelu PRelu
    Sigmoid Tanh Softmax LogSoftmax Add Sub Mul Div Sum Max Min Concat Split Slice Flatten Reshape Transpose
    Squeeze Unsqueeze BatchNormalization Clip Pad LRN Identity Dropout ReduceMean Constant""".split()
) | {"HardSigmoid", "HardSwish", "Resize"} | {  # issue 15
    "Cast", "Sqrt", "Pow", "Erf", "Gelu", "LayerNormalization", "Gather", "GRU", "LSTM"} | {  # issue 29
    "Where"}  # issue 38


def test_registry_covers_the_issue_operators() -> None:
    assert set(supported_operators()) == ISSUE_OPERATORS


def _reachable_versions(op_type: str) -> set[int]:
    """The since_versions in effect at some opset from MIN_OPSET to the newest installed."""
    versions = set()
    for opset in range(MIN_OPSET, max_opset() + 1):
        try:
            versions.add(onnx.defs.get_schema(op_type, opset, "").since_version)
        except onnx.defs.SchemaError:  # not defined yet at this opset (HardSwish before 14)
            continue
    return versions


def test_every_reachable_operator_version_is_declared() -> None:
    """A new onnx release adding an operator version makes this fail: review, then list it."""
    for op_type, conv in converters().items():
        assert set(conv.versions) == _reachable_versions(op_type), op_type


def test_every_converter_documents_its_mapping() -> None:
    for op_type, conv in converters().items():
        assert "->" in conv.doc, f"{op_type}: the docstring states ONNX -> NNEF"


def test_docs_list_every_operator() -> None:
    doc = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    for op_type in supported_operators():
        assert f"| {op_type} |" in doc, op_type


def test_checks_are_registered_with_requirements() -> None:
    checks = all_checks()
    expected = {"export.numeric": {"HLR-EXP-001", "HLR-SEM-001"}, "export.explicit": {"HLR-FMT-003"},
                "export.trace": {"HLR-EXP-003"}, "export.khronos": {"HLR-FMT-005"}, "export.reject": {"HLR-EXP-002"},
                "export.finite_parameters": {"HLR-EXP-001"}}
    for check_id, requirements in expected.items():
        assert set(checks[check_id].requirements) == requirements
        assert checks[check_id].step == "export"


def test_task_export_declares_dependencies_and_targets() -> None:
    from pipeline.ledger.dependencies import with_code

    tasks = {t["name"]: t for t in with_code(task_export)()}   # as dodo.py declares it: with its code
    assert set(tasks) == set(model_names(ROOT))
    task = tasks["lenet5"]
    assert task["file_dep"][:2] == ["models/lenet5/model.onnx", "models/lenet5/deploy.yaml"]
    assert "pipeline/export/exporter.py" in task["file_dep"] and "pipeline/numerics/vectors.py" in task["file_dep"]
    assert all((ROOT / dep).is_file() for dep in task["file_dep"])
    assert task["targets"] == ["artifacts/lenet5/export/graph.nnef", "artifacts/lenet5/export/provenance.json",
                               "artifacts/lenet5/export/validation.json", "artifacts/lenet5/export/checks.json",
                               "artifacts/lenet5/export/record.json"]
