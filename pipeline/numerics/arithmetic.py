"""How an implementation computes: what its error bound may assume of it.

An `Arithmetic` states the unit roundoff of its sums and element-wise operations, the orders in which
it may add the terms of a dot product, the accuracy of its transcendental functions, the graph
rewrites it may apply (onnxruntime folds BatchNormalization into the convolution before it), and an
optional storage format (FP16 for NVDLA items) every written tensor is rounded to, with the lookup
tables of units that evaluate a function from a table. docs/compare.md ("Arithmetics") states each
one and where its figures come from; the bound checks test every one of these assumptions on every
model (a violated assumption shows as an element beyond its bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

U32 = 2.0 ** -24
TINY32 = 2.0 ** -150  # half the smallest float32 subnormal: gradual underflow's absolute error per rounding

SEQUENTIAL, NESTED = "sequential", "nested"
# The nestings of a convolution's reduction (input channel c, kernel taps t) an implementation may add in,
# each possibly cut into contiguous blocks: (c, t) is im2col's row order (onnxruntime's MLAS NCHW path,
# our reference), (t, c) a tap-outer loop (NHWC kernels, the NVDLA emulator's per-tap products), "c8" and
# "c16" MLAS's NCHWc kernels (channel blocks of 8 or 16 outer, then taps, then the block's channels).
NESTINGS = ("c,t", "t,c", "c8,t,c", "c16,t,c")


@dataclass(frozen=True)
class Storage:
    """The format every tensor written to memory is rounded to (round to nearest even)."""

    name: str
    u: float
    tiny: float
    max: float

    def round(self, value: np.ndarray) -> np.ndarray:
        return np.asarray(value, np.float64).astype(np.float16).astype(np.float64)

    def to_json(self) -> dict[str, object]:
        return {"format": self.name, "unit_roundoff": self.u, "subnormal_absolute": self.tiny, "max": self.max}


FP16 = Storage("IEEE binary16", 2.0 ** -11, 2.0 ** -25, 65504.0)


@dataclass(frozen=True)
class Table:
    """A function evaluated from a table of samples at start + step * i, linearly interpolated between them
    and flat beyond them (NVDLA's SDP lookup tables as our NVDLA code generator programs them)."""

    function: str
    start: float
    step: float
    samples: tuple[float, ...]

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The table's value at x (exactly as interpolated in float64: the emulator's `ideal` mode)."""
        s = np.asarray(self.samples, np.float64)
        pos = (np.asarray(x, np.float64) - self.start) / self.step
        index = np.clip(np.floor(pos), 0, len(s) - 2).astype(np.int64)
        frac = np.clip(pos - index, 0.0, 1.0)
        inside = (pos >= 0) & (pos <= len(s) - 1)
        value = s[index] + (s[index + 1] - s[index]) * frac
        return np.where(inside, value, np.where(pos < 0, s[0], s[-1]))

    def slope(self, x: np.ndarray) -> np.ndarray:
        s = np.asarray(self.samples, np.float64)
        pos = (np.asarray(x, np.float64) - self.start) / self.step
        index = np.clip(np.floor(pos), 0, len(s) - 2).astype(np.int64)
        inside = (pos >= 0) & (pos < len(s) - 1)
        return np.where(inside, (s[index + 1] - s[index]) / self.step, 0.0)

    def slopes(self) -> np.ndarray:
        s = np.asarray(self.samples, np.float64)
        return np.diff(s) / self.step


@dataclass(frozen=True)
class Arithmetic:
    """One implementation's arithmetic (module docstring)."""

    name: str
    u: float = U32
    tiny: float = TINY32
    order: str = NESTED
    ulps: Mapping[str, float] = field(default_factory=dict)
    absolute: float = 0.0
    fused_batchnorm: bool = False
    storage: Storage | None = None
    tables: Mapping[str, Table] = field(default_factory=dict)

    def accuracy(self, fn: str) -> tuple[float, float] | None:
        """(relative, absolute) error of one evaluation of `fn` on an exact argument, or None: no rule."""
        if fn not in self.ulps:
            return None
        return self.ulps[fn] * 2.0 * self.u, self.absolute

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "unit_roundoff": self.u, "sum_orders": self.order,
                               "transcendental_ulps": dict(sorted(self.ulps.items())),
                               "transcendental_absolute": self.absolute,
                               "batchnorm_folded_into_conv": self.fused_batchnorm}
        if self.order == NESTED:
            out["nestings"] = list(NESTINGS)
        if self.storage is not None:
            out["storage"] = self.storage.to_json()
        if self.tables:
            out["tables"] = {k: {"start": t.start, "step": t.step, "samples": len(t.samples)}
                             for k, t in sorted(self.tables.items())}
        return out


# Our reference semantics: the documented order (a dot product from +0 in input channel then tap order,
# bias last, docs/semantics/index.md), the transcendental programs' measured maxima rounded up
# (docs/semantics/transcendental.md).
REFERENCE = Arithmetic("reference semantics (float32)", order=SEQUENTIAL,
                       ulps={"exp": 1.0, "tanh": 1.1, "sigmoid": 2.5, "log": 1.0, "pow": 32.0, "erf": 1.5,
                             "sqrt": 0.5})
# onnxruntime (CPU provider, ORT_ENABLE_ALL): any of the nestings, BatchNormalization folded into the
# preceding convolution, MLAS's polynomial exp/tanh/logistic within 4 ulps plus 2^-24 absolute (an
# assumption, checked on every model by export.bound_onnxruntime).
ONNXRUNTIME = Arithmetic("onnxruntime (CPUExecutionProvider, float32)", order=NESTED,
                         ulps={"exp": 4.0, "tanh": 4.0, "sigmoid": 4.0, "log": 4.0, "pow": 4.0, "erf": 4.0,
                               "sqrt": 0.5}, absolute=2.0 ** -24, fused_batchnorm=True)


def nvdla_fp16(tables: Mapping[str, Table] | None = None) -> Arithmetic:
    """NVDLA items, emulator mode `ideal` (and, an assumption to be checked on hardware, the NVDLA): FP16
    inputs, weights and stored tensors, float32 sums (any nesting) and SDP/PDP arithmetic, the EMU softmax in
    float32 (NumPy's exp within 4 ulps), sigmoid and tanh from the SDP's lookup `tables`."""
    return Arithmetic("NVDLA FP16 (FP16 storage, float32 accumulation)", order=NESTED, ulps={"exp": 4.0},
                      storage=FP16, tables=dict(tables or {}))
