"""The stable error codes of the exporter and the error that carries them.

docs/export.md lists the same table (a test keeps the two in step). Every error about a
node names the node, its op type and the model's opset, and lists the supported
operators, so that a rejected model says what to change (HLR-EXP-002).
"""

from __future__ import annotations

from typing import Sequence

from pipeline.diagnostics import NOWHERE, Location, PipelineError

CODES: dict[str, str] = {
    "EXPORT-E001": "the model file cannot be read or is not a valid ONNX model",
    "EXPORT-E002": "unsupported opset: no default-domain opset, or one outside 7 .. the newest the installed onnx knows",
    "EXPORT-E003": "unsupported operator (op type, domain, or an operator version the exporter does not know)",
    "EXPORT-E004": "unsupported attribute or input value (e.g. auto_pad mode, Pad 'wrap', training mode, an extra output in use)",
    "EXPORT-E005": "dynamic or unknown shape (symbolic dimension, shape inference could not fix it)",
    "EXPORT-E006": "tensor of an element type other than float32 where a float32 tensor is needed",
    "EXPORT-E007": "zero-size tensor (an extent of 0; NNEF extents are positive)",
    "EXPORT-E008": "parameter input not constant (shape, axes, pads, ... must be initializers or Constant outputs)",
    "EXPORT-E009": "ONNX shape inference failed (the model is inconsistent)",
    "EXPORT-E010": "output directory not usable (exists and is not empty and not a previous export, or not writable)",
    "EXPORT-E011": "internal check failed: the NNEF written does not pass the checker or its shapes differ from ONNX's",
    "EXPORT-E012": "the ONNX model cannot be run by the reference runtime (onnxruntime, onnx.reference)",
    "EXPORT-E013": "constant tensor data disagrees with its declared shape (longer or shorter), is external, or has a shape beyond the limits",
    "EXPORT-E014": "a graph input, intermediate or output shape beyond the limits (an extent over 2^31 - 1 or more than 2^32 elements)",
    "EXPORT-E015": "a graph output listed twice",
    "EXPORT-E016": "the ONNX model file is a symbolic link, not a regular file, or exceeds the size limit (2 GiB - 1)",
    "EXPORT-E017": "an initializer or Constant value holds a NaN or an infinity that is not an attention mask (the tensor and the first index are named)",
    "EXPORT-E018": "more nodes or initializers than the limits (10,000 each; PIPELINE_MAX_ONNX_NODES, PIPELINE_MAX_ONNX_INITIALIZERS)",
    "EXPORT-E019": "an attention mask masks every element of a softmax row (the softmax there is 0 / 0 = NaN; the mask and the row are named)",
    "EXPORT-E020": "the trained model's reference files (deploy.yaml trained_reference) cannot be read or do not fit the model (names, shapes, float32, vector count)",
}


class ExportError(PipelineError):
    """An export that cannot be done; nothing has been written when it is raised."""

    def __init__(self, code: str, message: str, location: Location = NOWHERE) -> None:
        if code not in CODES:
            raise ValueError(f"unknown export error code {code!r}")
        super().__init__(code, message, location)


def node_error(code: str, message: str, *, node_name: str, op_type: str, opset: int,
               supported: Sequence[str]) -> ExportError:
    """An error about one node: location = the node, message = what, node, op type, opset, supported list."""
    detail = (f"{message} [node '{node_name}', op type {op_type}, opset {opset}; "
              f"supported operators: {', '.join(supported)}]")
    return ExportError(code, detail, Location(element=f"node '{node_name}'"))
