"""The CUDA emitter of `cuda` items (docs/codegen-cuda.md): emitter.py the device side (kernels,
weights, device memory), generate.py a one-item program with its own harness, linked.py the item
of a mixed deployment's C program.
"""

from pathlib import Path

# The CUDA runtime headers every generated .cu includes: the macros (nnef_cuda.h) and the host emulation.
RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_FILES = ("nnef_cuda.h", "nnef_cuda_emulate.h")
