"""Export: ONNX -> NNEF text + .dat tensors, with provenance, validation and checks.

Property established: the NNEF description computes what the ONNX model computes
(HLR-EXP-001), every attribute explicit (HLR-FMT-003), every line traceable to its ONNX
node (HLR-EXP-003), unsupported constructs rejected with nothing written (HLR-EXP-002).
The converters (pipeline.export.ops, one per ONNX operator, converters.py) are not
trusted: pipeline.export.validate runs ONNX (onnxruntime) and the NNEF (reference
semantics) on the same inputs, pipeline.export.readback re-reads the files with the Khronos
parser, and pipeline.export.checks turns both into check results.
"""

from typing import Any

# Public names, imported on first use (PEP 562): doit's task generator imports this package
# and must not pay for onnx and the converters on a no-op run.
_PUBLIC = {
    "ExportError": "pipeline.export.errors",
    "ExportResult": "pipeline.export.exporter",
    "convert": "pipeline.export.exporter",
    "export_model": "pipeline.export.exporter",
    "supported_operators": "pipeline.export.converters",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pipeline.export' has no attribute {name!r}")


__all__ = ["ExportError", "ExportResult", "convert", "export_model", "supported_operators"]
