"""Tensor declarations: `constant` (here), `external` and `variable` (bound by the interpreter).

constant<T>(shape, value) -> output
    output has `shape`; if `value` has one item every element is that item, otherwise
    `value` lists the elements in row-major order (its length must be the volume).
    Scalar items are the parsed literals rounded once to float32 (round to nearest even).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import DTYPES, KernelError, int_list


@kernel("constant")
def constant(inputs: Mapping[str, Any], attribs: Mapping[str, Any], dtype: str | None) -> tuple[np.ndarray]:
    """`constant<T>(shape, value)`: a broadcast single item or a row-major list."""
    shape = int_list(attribs["shape"], "shape")
    values = attribs["value"]
    if not isinstance(values, (list, tuple)):
        values = [values]
    np_dtype = DTYPES[dtype or "scalar"]
    data = np.asarray(values, dtype=np_dtype)
    volume = math.prod(shape)
    if data.size == 1:
        return (np.full(shape, data.reshape(()), dtype=np_dtype),)
    if data.size != volume:
        raise KernelError(f"constant of shape {shape} needs 1 or {volume} values, got {data.size}")
    return (data.reshape(shape),)
