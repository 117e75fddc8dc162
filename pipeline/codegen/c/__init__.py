"""The C99 emitter of `cpu` items (item.py: one source file per item, kernels/ one emitter per
operation family, programs.py the transcendental programs) and the C runtime the deployment
program (pipeline/codegen/program) copies beside its items (docs/codegen.md).
"""

from pathlib import Path

# The C runtime: primitives, vectors, sync, instrumentation (nnef_runtime.h/.c), the sync declarations
# a CUDA item includes too (nnef_sync.h), the harness (nnef_harness.h, nnef_main.c), and the forms of
# the primitives Frama-C's EVA analyses (nnef_eva.h, read only under __FRAMAC__: docs/prove.md).
RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_FILES = ("nnef_runtime.h", "nnef_sync.h", "nnef_runtime.c", "nnef_harness.h", "nnef_main.c", "nnef_eva.h")
