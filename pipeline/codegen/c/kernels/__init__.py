"""The C emitters of the NNEF operations, one module per family, registered in common.EMITTERS."""

from __future__ import annotations

from pipeline.codegen.c.kernels.common import EMITTERS, VIEW_OPERATIONS, Emitter

# Each family registers its emitters when imported (in this order); imported by statement, not by a
# computed name, so that the doit tasks see them as the codegen step's code (pipeline/project/closure.py).
from pipeline.codegen.c.kernels import elementwise, conv, deconv, pool, reduce, linalg  # noqa: E402,F401
from pipeline.codegen.c.kernels import normalization, shape, multilinear  # noqa: E402,F401


def supported_operations() -> list[str]:
    """Every NNEF operation the C generator implements (declarations and sync aside)."""
    return sorted(EMITTERS)


def lookup(name: str) -> Emitter | None:
    return EMITTERS.get(name)


__all__ = ["EMITTERS", "VIEW_OPERATIONS", "lookup", "supported_operations"]
