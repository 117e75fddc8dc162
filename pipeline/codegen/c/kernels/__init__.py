"""The C emitters of the NNEF operations, one module per family, registered in common.EMITTERS."""

from __future__ import annotations

import importlib

from pipeline.codegen.c.kernels.common import EMITTERS, VIEW_OPERATIONS, Emitter

MODULES = ("elementwise", "conv", "deconv", "pool", "reduce", "linalg", "normalization", "shape", "multilinear")

for _module in MODULES:
    importlib.import_module(f"pipeline.codegen.c.kernels.{_module}")


def supported_operations() -> list[str]:
    """Every NNEF operation the C generator implements (declarations and sync aside)."""
    return sorted(EMITTERS)


def lookup(name: str) -> Emitter | None:
    return EMITTERS.get(name)


__all__ = ["EMITTERS", "VIEW_OPERATIONS", "lookup", "supported_operations"]
