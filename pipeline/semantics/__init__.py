"""The reference semantics: the meaning of every executable NNEF operation in float32.

Every later comparison (export validation, split execution, C/CUDA/NVDLA code on the
target) is against this interpreter, so it fixes what the NNEF text leaves open: the
accumulation order of every reduction, the exact IEEE expression of every operation,
NaN and signed-zero behaviour, and one implementation of exp/log/tanh/sigmoid built from
basic operations (transcendental.py) that generated code reproduces bit for bit.
docs/semantics/ documents each operation family.

Property established: HLR-SEM-001. Its validators are the tests under tests/semantics/
(independent references: onnx.reference, onnxruntime, scalar loops in the documented
order, float64 accuracy sweeps).
"""

from pipeline.semantics.interpreter import interpret, interpret_batch, load_variables
from pipeline.semantics.kernels import kernel, lookup, supported_operations

__all__ = ["interpret", "interpret_batch", "load_variables", "kernel", "lookup", "supported_operations"]
