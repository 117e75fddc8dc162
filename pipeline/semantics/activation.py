"""Activation functions, each the NNEF fragment's expression evaluated as written.

relu(x)          = max(x, 0.0)            -> select(x > 0 or x is NaN, x, +0): relu(-0) = +0,
                                             relu(NaN) = NaN (C: (x > 0 || x != x) ? x : 0.0f)
sigmoid(x)       = the sigmoid program of transcendental.py
tanh(x)          = the tanh program of transcendental.py
softplus(x)      = the softplus program of transcendental.py
elu(x, alpha)    = select(x < 0, alpha * (exp(x) - 1), x)
selu(x, a, l)    = l * select(x < 0, a * (exp(x) - 1), x)
gelu(x)          = x * sigmoid(1.702 * x)
silu(x)          = x * sigmoid(x)
prelu(x, alpha)  = select(x < 0, alpha * x, x)       (alpha a tensor, broadcast NNEF-style)
leaky_relu(x, a) = select(x < 0, a * x, x)           (a a float attribute)
softabs(x, eps)  = sqrt(x * x + eps)

`select` evaluates both branches (branch-free code does too); only the chosen value is
kept. -0 and NaN are never "< 0", so prelu/leaky_relu/elu return them unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from pipeline.semantics import transcendental
from pipeline.semantics.elementwise import fmax
from pipeline.semantics.jit import compiled_loops
from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import F32, attr_f32, broadcast, scalar

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]
ZERO = F32(0.0)
ONE = F32(1.0)
GELU_SCALE = F32(1.702)  # 0x3fd9db23


def _x(inputs: Inputs) -> np.ndarray:
    return scalar(inputs["x"], "x")


@kernel("relu")
def relu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """relu(x) = max(x, 0.0): +0 for x <= 0 (also -0), NaN stays NaN (one compiled pass with numba)."""
    loops = compiled_loops()
    if loops is not None:
        return (loops.relu(_x(inputs)),)
    return (np.asarray(fmax(_x(inputs), ZERO), dtype=F32),)


@kernel("sigmoid")
def sigmoid(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """1 / (1 + e^-x), by transcendental.SIGMOID."""
    return (transcendental.sigmoid(_x(inputs)),)


@kernel("tanh")
def tanh(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """tanh x, by transcendental.TANH."""
    return (transcendental.tanh(_x(inputs)),)


@kernel("softplus")
def softplus(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """ln(1 + e^x), by transcendental.SOFTPLUS (stable form of the fragment's log(exp(x) + 1))."""
    return (transcendental.softplus(_x(inputs)),)


def _elu(x: np.ndarray, alpha: np.float32) -> np.ndarray:
    return np.where(x < ZERO, alpha * (transcendental.exp(x) - ONE), x)


@kernel("elu")
def elu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """select(x < 0, alpha * (exp(x) - 1), x)."""
    return (np.asarray(_elu(_x(inputs), attr_f32(attribs["alpha"], "alpha")), dtype=F32),)


@kernel("selu")
def selu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """lambda * select(x < 0, alpha * (exp(x) - 1), x)."""
    inner = _elu(_x(inputs), attr_f32(attribs["alpha"], "alpha"))
    return (np.asarray(attr_f32(attribs["lambda"], "lambda") * inner, dtype=F32),)


@kernel("gelu")
def gelu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """x * sigmoid(1.702 * x), the fragment's approximation."""
    x = _x(inputs)
    return (np.asarray(x * transcendental.sigmoid(GELU_SCALE * x), dtype=F32),)


@kernel("silu")
def silu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """x * sigmoid(x)."""
    x = _x(inputs)
    return (np.asarray(x * transcendental.sigmoid(x), dtype=F32),)


@kernel("prelu")
def prelu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """select(x < 0, alpha * x, x); alpha broadcast NNEF-style (a [1, C] alpha per channel)."""
    x, alpha = broadcast(_x(inputs), scalar(inputs["alpha"], "alpha"))
    return (np.asarray(np.where(x < ZERO, alpha * x, x), dtype=F32),)


@kernel("leaky_relu")
def leaky_relu(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """prelu(x, alpha) with a float attribute alpha."""
    x = _x(inputs)
    alpha = attr_f32(attribs["alpha"], "alpha")
    return (np.asarray(np.where(x < ZERO, alpha * x, x), dtype=F32),)


@kernel("softabs")
def softabs(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sqrt(x * x + epsilon)."""
    x = _x(inputs)
    return (np.asarray(np.sqrt(x * x + attr_f32(attribs["epsilon"], "epsilon")), dtype=F32),)
