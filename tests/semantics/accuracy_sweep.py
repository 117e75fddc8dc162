"""Accuracy of the transcendental programs against float64 NumPy, over float32 inputs.

Used by the tests (sparse sweeps) and, run as a script, to produce the numbers in
docs/semantics/transcendental.md (a sweep over every float32 input of each range):

    .venv/bin/python tests/semantics/accuracy_sweep.py            # exhaustive, minutes
    .venv/bin/python tests/semantics/accuracy_sweep.py --stride 97  # quick

The error of a float32 result y against the float64 reference r is measured in units of
the float32 ULP at r (2^(floor(log2|r|) - 23), at least 2^-149): |y - r| / ulp(r). A
correctly rounded result has error <= 0.5; "faithful" means < 1. The float64 reference
(NumPy's libm in double) is accurate to ~1e-16 relative, far below a float32 ULP.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


from pipeline.semantics import transcendental as T

F32 = np.float32


def _ref_sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _ref_softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _ref_erf(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


# name -> (function under test, float64 reference, input range [lo, hi] swept)
FUNCTIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray], float, float]] = {
    "exp": (T.exp, np.exp, -104.0, 89.0),
    "log": (T.log, np.log, 0.0, float(np.finfo(F32).max)),
    "tanh": (T.tanh, np.tanh, -10.0, 10.0),
    "sigmoid": (T.sigmoid, _ref_sigmoid, -104.0, 20.0),
    "softplus": (T.softplus, _ref_softplus, -104.0, 100.0),
    "erf": (T.erf, _ref_erf, -4.5, 4.5),
}


@dataclass
class Accuracy:
    name: str
    count: int = 0
    max_ulp: float = 0.0
    worst_input: float = float("nan")
    max_rel: float = 0.0  # over results in the normal range
    not_correctly_rounded: int = 0

    def line(self) -> str:
        return (f"{self.name}: {self.count} inputs, max error {self.max_ulp:.3f} ULP at x = "
                f"{self.worst_input!r} ({float(self.worst_input).hex()}), max relative error "
                f"{self.max_rel:.3g}, not correctly rounded {self.not_correctly_rounded / max(self.count, 1):.3%}")


def ulp_error(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in float32 ULPs of ref; 0 where both are the same infinity."""
    ref32 = ref.astype(F32).astype(np.float64)
    mag = np.maximum(np.abs(ref), 2.0 ** -149)
    unit = 2.0 ** (np.maximum(np.floor(np.log2(mag)), -126) - 23)
    err = np.abs(y.astype(np.float64) - ref) / unit
    same_inf = np.isinf(y) & np.isinf(ref32) & (np.sign(y) == np.sign(ref32))
    err[same_inf] = 0.0
    err[np.isnan(y) & np.isnan(ref)] = 0.0
    return err


def _segments(lo: float, hi: float) -> list[tuple[int, int, float]]:
    """Bit-pattern ranges of the non-negative magnitudes covering [lo, hi], with a sign."""
    def bits(v: float) -> int:
        return int(np.array([abs(v)], F32).view(np.int32)[0])
    if lo >= 0:
        return [(bits(lo), bits(hi), 1.0)]
    if hi <= 0:
        return [(bits(hi), bits(lo), -1.0)]
    return [(0, bits(lo), -1.0), (0, bits(hi), 1.0)]


def sweep(name: str, stride: int = 1, chunk: int = 1 << 22) -> Accuracy:
    """Every `stride`-th float32 of the function's range (stride 1: all of them)."""
    fn, ref_fn, lo, hi = FUNCTIONS[name]
    acc = Accuracy(name)
    with np.errstate(all="ignore"):
        for first, last, sign in _segments(lo, hi):
            for start in range(first, last + 1, chunk * stride):
                pattern = np.arange(start, min(last + 1, start + chunk * stride), stride, dtype=np.int64)
                x = pattern.astype(np.int32).view(F32) * F32(sign)
                y = fn(x)
                ref = ref_fn(x.astype(np.float64))
                err = ulp_error(y, ref)
                i = int(np.argmax(err))
                if err[i] > acc.max_ulp:
                    acc.max_ulp, acc.worst_input = float(err[i]), float(x[i])
                normal = np.abs(ref) >= 2.0 ** -126
                normal &= np.isfinite(ref) & (np.abs(ref) <= float(np.finfo(F32).max))
                if normal.any():
                    rel = np.abs(y[normal].astype(np.float64) - ref[normal]) / np.abs(ref[normal])
                    acc.max_rel = max(acc.max_rel, float(rel.max()))
                acc.not_correctly_rounded += int(np.count_nonzero(
                    y.view(np.int32) != ref.astype(F32).view(np.int32)))
                acc.count += x.size
    return acc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stride", type=int, default=1, help="sweep every STRIDE-th float32 (default: all)")
    parser.add_argument("names", nargs="*", default=list(FUNCTIONS))
    args = parser.parse_args()
    for name in args.names:
        print(sweep(name, args.stride).line(), flush=True)


if __name__ == "__main__":
    main()
