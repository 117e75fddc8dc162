"""Error measures between computed float32 outputs and reference outputs.

Definitions (`actual` is what is checked, `expected` the reference; element-wise, then
the maximum or mean over every element of every vector):

- abs error      |actual - expected| in float64 (exact for two float32 values); 0 where
                 both are the same infinity; +inf where exactly one is infinite or the
                 infinities differ in sign.
- rel error      abs error / |expected|, over the elements whose expected value is
                 non-zero and finite (relative error is undefined at 0; those elements
                 are still bounded by the abs error).
- ULP distance   the number of float32 values between the two, counted on the monotonic
                 integer line of float32 bit patterns (`ordered_int`): consecutive floats
                 are 1 apart, -0 and +0 are the same point (distance 0), the smallest
                 positive and negative subnormals are 2 apart, +-inf are the ends.
- NaN            two NaNs agree (distance 0, error 0; payload and sign are not compared).
                 A NaN against a non-NaN is a *NaN mismatch*: it is counted separately, is
                 excluded from the abs/rel/mean measures, and its ULP distance is
                 `UNORDERED` (2**32), larger than any distance between two non-NaN float32.

The same functions serve export validation and the later code comparisons (C, CUDA: 0
ULP expected; NVDLA: a tolerance), so their numbers mean the same everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# ULP distance reported for a NaN against a non-NaN: above any real distance (< 2**32).
UNORDERED = 1 << 32


def ordered_int(x: np.ndarray) -> np.ndarray:
    """float32 values -> int64 positions on a monotonic line (NaN positions are meaningless).

    Non-negative floats keep their bit pattern (0 .. 0x7f800000 for +inf); negative ones
    map to minus the pattern of their magnitude, so -0 and +0 both map to 0 and the
    order of the integers is the order of the floats.
    """
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise ULP distance (int64); NaN vs NaN is 0, NaN vs non-NaN is UNORDERED."""
    a = np.asarray(actual, dtype=np.float32)
    e = np.asarray(expected, dtype=np.float32)
    distance = np.abs(ordered_int(a) - ordered_int(e))
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    distance = np.where(a_nan & e_nan, 0, distance)
    return np.where(a_nan ^ e_nan, UNORDERED, distance)


def _json_float(value: float) -> float | str:
    """A float for canonical JSON, which has no spelling for infinity or NaN."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass
class ErrorStats:
    """The error measures of a set of compared elements (see the module docstring)."""

    elements: int = 0
    max_abs_error: float = 0.0
    mean_abs_error: float = 0.0
    max_rel_error: float = 0.0
    max_ulp: int = 0
    nan_mismatches: int = 0
    exact_elements: int = 0
    worst: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "elements": self.elements,
            "exact_elements": self.exact_elements,
            "max_abs_error": _json_float(self.max_abs_error),
            "mean_abs_error": _json_float(self.mean_abs_error),
            "max_rel_error": _json_float(self.max_rel_error),
            "max_ulp": self.max_ulp,
            "nan_mismatches": self.nan_mismatches,
            "worst": {k: (_json_float(v) if isinstance(v, float) else v) for k, v in self.worst.items()},
        }


class ErrorAccumulator:
    """Accumulates the measures over many (actual, expected) pairs, e.g. one per vector."""

    def __init__(self) -> None:
        self._stats = ErrorStats()
        self._abs_sum = 0.0
        self._counted = 0

    def add(self, actual: np.ndarray, expected: np.ndarray, vector: int | None = None) -> None:
        a = np.asarray(actual)
        e = np.asarray(expected)
        if a.shape != e.shape:
            raise ValueError(f"shapes differ: actual {list(a.shape)}, expected {list(e.shape)}")
        a = a.astype(np.float32, copy=False)
        e = e.astype(np.float32, copy=False)
        stats = self._stats
        stats.elements += a.size
        if a.size == 0:
            return
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        a_nan, e_nan = np.isnan(a64), np.isnan(e64)
        mismatch = a_nan ^ e_nan
        comparable = ~(a_nan | e_nan)
        same = (a64 == e64) | (a_nan & e_nan)
        with np.errstate(invalid="ignore", over="ignore"):
            abs_error = np.where(same | ~comparable, 0.0, np.abs(a64 - e64))
            abs_error = np.where(np.isnan(abs_error), np.inf, abs_error)  # inf - inf of one sign
            nonzero = comparable & (e64 != 0) & np.isfinite(e64)
            rel_error = np.where(nonzero, abs_error / np.where(nonzero, np.abs(e64), 1.0), 0.0)
        ulps = ulp_distance(a, e)
        stats.exact_elements += int(np.count_nonzero(same))
        stats.nan_mismatches += int(np.count_nonzero(mismatch))
        counted = int(np.count_nonzero(comparable))
        self._counted += counted
        self._abs_sum += float(abs_error.sum())
        stats.mean_abs_error = self._abs_sum / self._counted if self._counted else 0.0
        stats.max_rel_error = max(stats.max_rel_error, float(rel_error.max()))
        stats.max_ulp = max(stats.max_ulp, int(ulps.max()))
        local_abs = float(abs_error.max())
        had_mismatch = bool(stats.worst.get("nan_mismatch"))
        if mismatch.any() and not had_mismatch:
            self._record_worst(a, e, int(np.argmax(mismatch)), vector, True)
        elif not had_mismatch and (not stats.worst or local_abs > stats.max_abs_error):
            self._record_worst(a, e, int(np.argmax(abs_error)), vector, False)
        stats.max_abs_error = max(stats.max_abs_error, local_abs)

    def _record_worst(self, a: np.ndarray, e: np.ndarray, flat: int, vector: int | None, nan: bool) -> None:
        """Where the comparison is worst: the first NaN mismatch, else the largest abs error."""
        self._stats.worst = {
            "vector": vector,
            "index": [int(i) for i in np.unravel_index(flat, a.shape)] if a.ndim else [],
            "actual": float(a.reshape(-1)[flat]),
            "expected": float(e.reshape(-1)[flat]),
            "nan_mismatch": nan,
        }

    def stats(self) -> ErrorStats:
        return self._stats


def compare_arrays(actual: np.ndarray, expected: np.ndarray) -> ErrorStats:
    """The measures of one pair of equally shaped arrays."""
    accumulator = ErrorAccumulator()
    accumulator.add(actual, expected)
    return accumulator.stats()


def within_tolerance(stats: ErrorStats, max_abs_error: float | None = None, max_rel_error: float | None = None,
                     max_ulp: int | None = None) -> tuple[bool, str]:
    """(verdict, reason): every given bound holds and there is no NaN mismatch.

    The reason names the first violated bound with the measured value and where it was
    worst (vector and element index); it is empty when the verdict is True.
    """
    where = ""
    if stats.worst:
        where = (f" (vector {stats.worst.get('vector')}, element {stats.worst.get('index')}: "
                 f"{stats.worst.get('actual')!r} vs reference {stats.worst.get('expected')!r})")
    if stats.nan_mismatches:
        return False, f"{stats.nan_mismatches} NaN mismatch(es){where}"
    if max_abs_error is not None and not stats.max_abs_error <= max_abs_error:
        return False, f"max abs error {stats.max_abs_error:.3g} exceeds {max_abs_error:.3g}{where}"
    if max_rel_error is not None and not stats.max_rel_error <= max_rel_error:
        return False, f"max relative error {stats.max_rel_error:.3g} exceeds {max_rel_error:.3g}"
    if max_ulp is not None and stats.max_ulp > max_ulp:
        return False, f"max ULP distance {stats.max_ulp} exceeds {max_ulp}"
    return True, ""
