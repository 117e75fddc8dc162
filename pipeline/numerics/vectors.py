"""Validation input vectors: the one rule every step uses to draw them.

Export validation (ONNX vs reference semantics), the C/CUDA runners and the comparison
step must feed the *same* inputs, so the rule lives here and nowhere else:

    rng = numpy.random.default_rng(seed)
    for each vector v = 0, 1, ..., count - 1:
        for each input name in sorted (code point) order:
            x[name] = rng.uniform(low, high, shape).astype(float32)

i.e. one vector after another, and inside a vector the inputs in name order, all from one
generator stream. `default_rng` is PCG64, whose stream NumPy keeps fixed across versions;
`uniform` draws doubles in [low, high) which are rounded once to float32 (round to nearest
even), so a value may equal `high` after rounding. For a single input this is the same
stream as `rng.uniform(low, high, (count, *shape))` (what models/_tools/measure.py uses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np

RULE = ("numpy.random.default_rng(seed); vector after vector; inputs in sorted name order; "
        "rng.uniform(low, high, shape).astype(float32)")
DISTRIBUTION_KINDS = ("uniform",)


@dataclass(frozen=True)
class Distribution:
    """Where an input's values are drawn from: `uniform` on [low, high)."""

    kind: str
    low: float
    high: float

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class InputSpec:
    """One model input: its name, static shape and value distribution."""

    name: str
    shape: tuple[int, ...]
    distribution: Distribution

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "shape": list(self.shape), "distribution": self.distribution.to_json()}


def _draw(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    dist = spec.distribution
    if dist.kind != "uniform":
        raise ValueError(f"input '{spec.name}': unsupported distribution kind {dist.kind!r}")
    return rng.uniform(dist.low, dist.high, spec.shape).astype(np.float32)


def iter_vectors(inputs: Mapping[str, InputSpec] | Sequence[InputSpec], count: int,
                 seed: int) -> Iterator[dict[str, np.ndarray]]:
    """Yield `count` input vectors ({name: float32 array}) by the rule above."""
    specs = list(inputs.values()) if isinstance(inputs, Mapping) else list(inputs)
    ordered = sorted(specs, key=lambda s: s.name)
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield {spec.name: _draw(rng, spec) for spec in ordered}


def draw_vectors(inputs: Mapping[str, InputSpec] | Sequence[InputSpec], count: int,
                 seed: int) -> list[dict[str, np.ndarray]]:
    """All `count` vectors as a list (see `iter_vectors`)."""
    return list(iter_vectors(inputs, count, seed))
