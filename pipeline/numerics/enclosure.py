"""The enclosure: for every output element of the network on one input vector, a ball that certainly
contains the exact real-number result.

The network's real-number meaning: its weights and inputs are the real numbers their float32 (or
float64) values denote, every operator is its mathematical definition (pipeline.numerics.graph expands
composite operators into theirs), and nothing rounds. `Enclosure(model).run(inputs)` evaluates that in
double-word ball arithmetic (pipeline.numerics.doubled, products), each operation's result containing
the exact result for every point of its operands' balls, so the output balls contain the exact output.
Their radii are about 2^-100 of the magnitudes involved, amplified by the network's |W| products: for
every network measured (docs/compare.md, "The enclosure") at least 10^6 times below the float32 error,
and recorded (`width`) where they are used.

The distance from any float32 result r to the exact result x is then known to within the ball's
width: |r - x| lies in `Ball.distance(r)` = [lower, upper]. That replaces the float64 yardstick's
estimate as the measure every bound check uses; the yardstick (onnx.reference in float64, nobody here
wrote it) is kept as the enclosure's independent cross-check (it must lie within float64 rounding of
the ball).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.numerics import doubled as D
from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Graph, GraphRefused, prepare
from pipeline.numerics.products import single_thread
from pipeline.numerics.rules import Context, NoRule, rule_of

DESCRIPTION = ("double-word ball arithmetic (about 2^-100 relative, every rounding bounded): Ozaki's error-free "
               "splitting for products and sums, python-flint arb for transcendental functions")


class EnclosureUnavailable(Exception):
    """An operator or value the enclosure has no rule for (BOUND-E001 / E002)."""

    def __init__(self, message: str, code: str = "BOUND-E001") -> None:
        super().__init__(message)
        self.code = code


def _constant(value: np.ndarray) -> Any:
    value = np.asarray(value)
    if value.dtype.kind == "f":
        return D.exact(value.astype(np.float64))
    return value


class Enclosure:
    """`run({input: float32 array}) -> {output: Ball}` (module docstring)."""

    def __init__(self, model: onnx.ModelProto | Graph) -> None:
        try:
            self.graph = model if isinstance(model, Graph) else prepare(model)
            for op in self.graph.ops:
                rule_of(op)
        except (GraphRefused, NoRule) as error:
            raise EnclosureUnavailable(str(error), getattr(error, "code", "BOUND-E001")) from None
        self.ctx = Context(self.graph)
        self.constants = {name: _constant(v) for name, v in self.graph.constants.items()}
        flint = D._flint()
        for name, real in self.graph.reals.items():
            self.constants[name] = D.from_arb(np.array([real.make(flint)], dtype=object)).map(lambda a: a.reshape(()))
        self._last = self._last_readers()

    def _last_readers(self) -> dict[str, int]:
        last: dict[str, int] = {}
        for index, op in enumerate(self.graph.ops):
            for name in op.inputs:
                last[name] = index
        return last

    def run(self, inputs: Mapping[str, np.ndarray], keep: set[str] | None = None) -> dict[str, Ball]:
        """Every graph output's ball (and those of the tensors named in `keep`)."""
        env: dict[str, Any] = dict(self.constants)
        for name, value in inputs.items():
            env[name] = D.exact(np.asarray(value, np.float32).astype(np.float64))
        wanted = set(self.graph.outputs) | (keep or set())
        with single_thread(), np.errstate(over="ignore", invalid="ignore"):
            for index, op in enumerate(self.graph.ops):
                ins = [env[name] if name else None for name in op.inputs]
                try:
                    outs = rule_of(op).enclose(op, ins, self.ctx)
                except NoRule as error:
                    raise EnclosureUnavailable(str(error), error.code) from None
                for name, value in zip(op.outputs, outs):
                    if name:
                        env[name] = value
                for name in set(op.inputs):
                    if name and self._last.get(name) == index and name not in wanted and name not in self.constants:
                        del env[name]
        found = {name: env[name] for name in wanted if name in env}
        for name, value in found.items():
            if isinstance(value, Ball) and not np.all(np.isfinite(value.rad)):
                raise EnclosureUnavailable(f"the enclosure of '{name}' is not finite", "BOUND-E005")
        return {name: found[name] for name in sorted(found)}


def widest(ball: Ball) -> float:
    """The largest width of a ball array (for the record)."""
    return float(np.max(ball.width(), initial=0.0))
