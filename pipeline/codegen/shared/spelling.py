"""The C spelling of numbers and names, shared by the C and the CUDA emitters.

A float32 constant is written as the exact hex float it is (no decimal rounding between the
weights file and the compiled code); a name from the NNEF (labels may hold '/', '.', '-') becomes
an identifier behind a prefix; tensors are row-major.
"""

from __future__ import annotations

import re

import numpy as np

F32 = np.float32


def ident(text: str) -> str:
    """A C identifier from an NNEF name or label (labels may hold '/', '.', '-')."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def flit(value: float | np.floating) -> str:
    """The exact C99 literal of a float32 value: a hex float; infinities and NaN as the C99
    <math.h> constant expressions INFINITY and NAN (usable in static initializers, no libm
    call). A NaN keeps its sign but not its payload (payloads are unspecified, docs/semantics)."""
    x = F32(value)
    if np.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    if np.isnan(x):
        return "(-NAN)" if np.signbit(x) else "NAN"
    text = float(x).hex()
    return f"{text}f"


def flits(values: np.ndarray) -> list[str]:
    """`flit` of every element (a weights array): the same literals, formatted without a NumPy
    scalar operation per element when all are finite (codegen of a large item spent most of its
    time here)."""
    flat = np.asarray(values, F32).reshape(-1)
    if not np.isfinite(flat).all():
        return [flit(v) for v in flat]
    return [f"{v.hex()}f" for v in flat.astype(np.float64).tolist()]


def strides(shape: tuple[int, ...] | list[int]) -> list[int]:
    """Row-major strides (in elements)."""
    result = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        result[axis] = result[axis + 1] * int(shape[axis + 1])
    return result
