"""Export: ONNX -> NNEF text + .dat tensors, with provenance, validation and checks.

Property established: the NNEF description computes what the ONNX model computes
(HLR-EXP-001), every attribute explicit (HLR-FMT-003), every line traceable to its ONNX
node (HLR-EXP-003), unsupported constructs rejected with nothing written (HLR-EXP-002).
The converters (pipeline.export.ops, one per ONNX operator, registry.py) are not
trusted: pipeline.export.validate runs ONNX (onnxruntime) and the NNEF (reference
semantics) on the same inputs, pipeline.export.khronos re-reads the files with the Khronos
parser, and pipeline.export.checks turns both into check results.
"""

from pipeline.export.errors import ExportError
from pipeline.export.exporter import ExportResult, convert, export_model
from pipeline.export.registry import supported_operators

__all__ = ["ExportError", "ExportResult", "convert", "export_model", "supported_operators"]
