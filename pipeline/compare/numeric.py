"""Numeric comparison of executed outputs with a reference, over every vector (docs/compare.md).

Built on pipeline.numerics.metrics (max/mean abs error, max relative error, ULP distance with
-0 == +0 and the NaN rules); added here: the *first* diverging element in (vector, flat
index) order with both values and its ULP distance, exact bit identity (which also tells
-0 from +0; NaN payloads are not compared, docs/semantics/index.md), and top-1 agreement
for classification outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from pipeline.numerics.metrics import ErrorAccumulator, ErrorStats, ulp_distance, within_tolerance


@dataclass
class Divergence:
    """The first element where two results are not bit-identical (NaN == NaN)."""

    output: str
    vector: int
    flat_index: int
    index: list[int]
    actual: float
    expected: float
    ulp: int

    def describe(self) -> str:
        return (f"output {self.output}, vector {self.vector}, element {self.index} (flat {self.flat_index}): "
                f"{self.actual!r} ({_hex(self.actual)}) vs {self.expected!r} ({_hex(self.expected)}), "
                f"{self.ulp} ULP")

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "vector": self.vector, "flat_index": self.flat_index, "index": self.index,
                "actual": _json(self.actual), "expected": _json(self.expected),
                "actual_bits": _hex(self.actual), "expected_bits": _hex(self.expected), "ulp": self.ulp}


def _hex(value: float) -> str:
    return f"0x{int(np.array([value], np.float32).view(np.uint32)[0]):08x}"


def _json(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def same_bits(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise bit identity, any NaN equal to any NaN."""
    a = np.ascontiguousarray(actual, np.float32)
    e = np.ascontiguousarray(expected, np.float32)
    return (a.view(np.uint32) == e.view(np.uint32)) | (np.isnan(a) & np.isnan(e))


def first_divergence(name: str, actual: np.ndarray, expected: np.ndarray) -> Divergence | None:
    """The first non-identical element of [N, ...] arrays, vector by vector, row-major."""
    same = same_bits(actual, expected)
    if same.all():
        return None
    flat_vectors = same.reshape(same.shape[0], -1)
    vector = int(np.argmax(~flat_vectors.all(axis=1)))
    flat = int(np.argmax(~flat_vectors[vector]))
    a = float(np.asarray(actual, np.float32)[vector].reshape(-1)[flat])
    e = float(np.asarray(expected, np.float32)[vector].reshape(-1)[flat])
    index = [int(i) for i in np.unravel_index(flat, actual.shape[1:])] if actual.ndim > 1 else []
    ulp = int(ulp_distance(np.array([a], np.float32), np.array([e], np.float32))[0])
    return Divergence(name, vector, flat, index, a, e, ulp)


def first_exceeding(name: str, actual: np.ndarray, expected: np.ndarray, max_abs_error: float | None
                    ) -> Divergence | None:
    """The first element (vector by vector, row-major) that is a NaN mismatch or differs by more
    than `max_abs_error`."""
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.isnan(a) ^ np.isnan(e)
        if max_abs_error is not None:
            diff = np.abs(a - e)
            bad |= ~(np.isnan(a) | np.isnan(e)) & ~(diff <= max_abs_error) & ~(a == e)
    if not bad.any():
        return None
    mask = np.zeros_like(bad)
    position = np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape)
    mask[position] = True
    return first_divergence(name, np.where(mask, actual, expected).astype(np.float32), np.asarray(expected, np.float32))


def top1(actual: np.ndarray, expected: np.ndarray) -> tuple[int, int]:
    """(vectors whose arg-max agrees, vectors), per vector over the flattened output; NaN-safe
    (np.argmax takes the first maximum, which a NaN is)."""
    a = np.asarray(actual, np.float32).reshape(actual.shape[0], -1)
    e = np.asarray(expected, np.float32).reshape(expected.shape[0], -1)
    return int(np.count_nonzero(np.argmax(a, axis=1) == np.argmax(e, axis=1))), int(a.shape[0])


@dataclass
class OutputComparison:
    name: str
    stats: ErrorStats
    bit_identical: bool
    signed_zero_mismatches: int
    divergence: Divergence | None
    top1_agree: int
    vectors: int
    passed: bool = True
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"output": self.name, "vectors": self.vectors, **self.stats.to_json(),
                "bit_identical": self.bit_identical, "signed_zero_mismatches": self.signed_zero_mismatches,
                "first_divergence": self.divergence.to_json() if self.divergence else None,
                "top1_agreement": self.top1_agree, "top1_vectors": self.vectors,
                "verdict": "pass" if self.passed else "fail", "reason": self.reason}


@dataclass
class Comparison:
    """Every output of one executable against one reference."""

    outputs: list[OutputComparison] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def first_failure(self) -> OutputComparison | None:
        return next((o for o in self.outputs if not o.passed), None)

    def measured(self) -> dict[str, Any]:
        stats = [o.stats for o in self.outputs]
        return {
            "outputs": len(self.outputs),
            "vectors": max((o.vectors for o in self.outputs), default=0),
            "max_abs_error": max((s.max_abs_error for s in stats), default=0.0),
            "mean_abs_error": max((s.mean_abs_error for s in stats), default=0.0),
            "max_rel_error": max((s.max_rel_error for s in stats), default=0.0),
            "max_ulp": max((s.max_ulp for s in stats), default=0),
            "nan_mismatches": sum(s.nan_mismatches for s in stats),
            "bit_identical": all(o.bit_identical for o in self.outputs),
            "top1_agreement": min((o.top1_agree / o.vectors for o in self.outputs if o.vectors), default=1.0),
        }

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.measured(), "outputs": [o.to_json() for o in self.outputs]}


def compare(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], *, exact: bool = False,
            max_abs_error: float | None = None, max_rel_error: float | None = None,
            max_abs_errors: Mapping[str, float] | None = None) -> Comparison:
    """Compare [N, ...] outputs by name. `exact`: pass only when bit-identical (0 ULP and the
    same sign of zero; any NaN equal to any NaN); otherwise within the given tolerances
    (`max_abs_errors`: per output, where given, instead of `max_abs_error`)."""
    result = Comparison()
    for name in sorted(expected):
        a = np.asarray(actual[name], np.float32)
        e = np.asarray(expected[name], np.float32)
        if a.shape != e.shape:
            raise ValueError(f"output {name}: shapes differ, {list(a.shape)} vs {list(e.shape)}")
        accumulator = ErrorAccumulator()
        for v in range(e.shape[0]):
            accumulator.add(a[v], e[v], vector=v)
        stats = accumulator.stats()
        identical = same_bits(a, e)
        ulps = ulp_distance(a, e)
        signed_zeros = int(np.count_nonzero(~identical & (ulps == 0)))
        divergence = first_divergence(name, a, e)
        agree, vectors = top1(a, e)
        item = OutputComparison(name, stats, bool(identical.all()), signed_zeros, divergence, agree, vectors)
        if exact:
            item.passed = divergence is None
            if divergence is not None:
                item.reason = f"not bit-identical: first divergence at {divergence.describe()}"
        else:
            limit = (max_abs_errors or {}).get(name, max_abs_error)
            ok, why = within_tolerance(stats, limit, max_rel_error)
            item.passed = ok
            if not ok:
                first = first_exceeding(name, a, e, limit)
                item.reason = f"output {name}: {why}" + (f"; first element beyond the tolerance: {first.describe()}"
                                                         if first else "")
        result.outputs.append(item)
    return result
