"""Value conventions shared by the kernels: element types, literals, NNEF broadcasting.

- `scalar` tensors are float32 arrays, `integer` tensors int64, `logical` bool.
- A literal in a tensor position (`bias = 0.0`, `add(x, 1.0)`) is a rank-0 tensor: the
  parsed value (an IEEE double) rounded once to float32, round-to-nearest-even. Code
  generators must emit that float32 bit pattern, not re-round the decimal text.
- Float attributes (`epsilon`, `alpha`, ...) are rounded to float32 the same way.
- Broadcasting is NNEF's, *left-aligned*: the lower-rank operand gets trailing singleton
  dimensions until the ranks agree (Khronos `shapes._broadcast_shape` pads on the right),
  then each dimension pair must be equal or contain a 1. A `[1, C]` bias therefore lines
  up with `[N, C, H, W]` as `[1, C, 1, 1]`; NumPy's right-aligned rule would not.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from pipeline.diagnostics import PipelineError

F32 = np.float32
DTYPES: dict[str, np.dtype] = {
    "scalar": np.dtype(np.float32),
    "integer": np.dtype(np.int64),
    "logical": np.dtype(np.bool_),
}


class KernelError(PipelineError):
    """Bad operands or attributes found inside a kernel; the interpreter adds the location."""

    def __init__(self, message: str, code: str = "SEM-E004") -> None:
        super().__init__(code, message)


def scalar(value: Any, what: str = "operand") -> np.ndarray:
    """A float32 tensor from a float32 array or a numeric literal (rank 0)."""
    if isinstance(value, np.ndarray):
        if value.dtype != F32:
            raise KernelError(f"{what} must be a scalar (float32) tensor, got {value.dtype}", "SEM-E005")
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise KernelError(f"{what} must be a scalar tensor or numeric literal, got {value!r}", "SEM-E005")
    return np.asarray(F32(value))


def logical(value: Any, what: str = "operand") -> np.ndarray:
    """A bool tensor from a bool array or a `true`/`false` literal."""
    if isinstance(value, np.ndarray):
        if value.dtype != np.bool_:
            raise KernelError(f"{what} must be a logical tensor, got {value.dtype}", "SEM-E005")
        return value
    if not isinstance(value, (bool, np.bool_)):
        raise KernelError(f"{what} must be a logical tensor or literal, got {value!r}", "SEM-E005")
    return np.asarray(bool(value))


def integer(value: Any, what: str = "operand") -> np.ndarray:
    """An int64 tensor from an integer array or literal."""
    if isinstance(value, np.ndarray):
        if not np.issubdtype(value.dtype, np.integer):
            raise KernelError(f"{what} must be an integer tensor, got {value.dtype}", "SEM-E005")
        return value.astype(np.int64, copy=False)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise KernelError(f"{what} must be an integer tensor or literal, got {value!r}", "SEM-E005")
    return np.asarray(np.int64(value))


def generic(value: Any, dtype: str | None, what: str = "operand") -> np.ndarray:
    """A tensor of the operation's generic type `dtype` (`tensor<?>` parameters)."""
    if isinstance(value, np.ndarray):
        return value
    if dtype == "logical" or isinstance(value, (bool, np.bool_)):
        return logical(value, what)
    if dtype == "integer":
        return integer(value, what)
    return scalar(value, what)


def attr_f32(value: Any, what: str) -> np.float32:
    """A float attribute (`epsilon`, `alpha`, ...) rounded once to float32."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise KernelError(f"attribute '{what}' must be a number, got {value!r}")
    return F32(value)


def int_list(value: Any, what: str) -> list[int]:
    """An integer-array attribute as a list of Python ints."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        raise KernelError(f"attribute '{what}' must be an integer array, got {value!r}")
    return [int(v) for v in value]


def axes_list(value: Any, rank: int, what: str = "axes") -> list[int]:
    """Axis indices, each in [0, rank), no duplicates."""
    axes = int_list(value, what)
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise KernelError(f"'{what}' {axes} invalid for a tensor of rank {rank}")
    return axes


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The NNEF (left-aligned) broadcast of `shapes`; SEM-E005 if they are incompatible."""
    return _broadcast_shape(tuple(tuple(s) for s in shapes))


@functools.lru_cache(maxsize=4096)
def _broadcast_shape(shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """broadcast_shape, kept per tuple of shapes (a graph has few: the interpreter asks each run)."""
    rank = max((len(s) for s in shapes), default=0)
    padded = [tuple(s) + (1,) * (rank - len(s)) for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise KernelError(f"shapes {[list(s) for s in shapes]} are not broadcast-compatible "
                              "(NNEF aligns dimensions on the left)", "SEM-E005")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def align(array: np.ndarray, rank: int) -> np.ndarray:
    """`array` with trailing singleton dimensions up to `rank` (a view)."""
    missing = rank - array.ndim
    return array.reshape(array.shape + (1,) * missing) if missing > 0 else array


def broadcast(*arrays: np.ndarray) -> list[np.ndarray]:
    """The operands aligned NNEF-style (trailing singletons added), checked, as views.

    After alignment the ranks agree, so NumPy's own broadcasting then matches NNEF's.
    """
    shape = broadcast_shape([a.shape for a in arrays])
    return [align(a, len(shape)) for a in arrays]
