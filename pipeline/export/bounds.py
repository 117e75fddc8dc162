"""What the export validation measures against the network's exact result, and the error bounds it checks.

`BoundRun` accumulates, per output, over the validation's first vectors:

* on the first ENCLOSURE_VECTORS: the enclosure of the exact real-number result
  (pipeline.numerics.enclosure), and each side's distance to it (the reference semantics', known to
  within the ball's width, and onnxruntime's): the measured rounding the tolerance rule uses;
* on the first BOUND_VECTORS: both error bounds (pipeline.numerics.sensitivity: the reference's
  arithmetic and onnxruntime's), element by element against each side's distance: an element whose
  distance certainly exceeds its bound (the distance's lower end above it) fails the bound check; the
  worst-case (deterministic) figure, the known shift, the remainder, the decisions whose margin the
  estimated spread reaches, and the float64 yardstick's distance to the enclosure (onnx.reference,
  nobody here wrote it: the enclosure's independent cross-check) are recorded.

The enclosure's width grows with depth (about the square root of each layer's fan-in per layer, from 2^-97 of
the values: docs/compare.md): where it is not finite, or wider than WIDTH_SHARE of the distance it measures, the
float64 yardstick's value takes its place as a point from that vector on (an estimate, as before issue 41),
recorded as `enclosure.measure` with the reason.

A bound is used only while it discriminates (pipeline.numerics.tolerance.bound_discrimination: finite
and at most 100 times the side's measured distance on the same vectors); otherwise it is reported as
not discriminating with its figures and the bound checks say `not run` (docs/compare.md).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.numerics.arithmetic import ONNXRUNTIME, REFERENCE
from pipeline.numerics.enclosure import DESCRIPTION as ENCLOSURE_DESCRIPTION
from pipeline.numerics.doubled import Ball
from pipeline.numerics.doubled import exact as exact_ball
from pipeline.numerics.enclosure import Enclosure, EnclosureUnavailable
from pipeline.numerics.metrics import _json_float
from pipeline.numerics.sensitivity import FAILURE_PROBABILITY, LAMBDA, BoundUnavailable, Sensitivity
from pipeline.numerics.tolerance import (DISCRIMINATION_RATIO, EffectiveTolerance, bound_discrimination,
                                         effective_tolerance)

# The enclosure runs on this many of the validation vectors, the bounds on the first BOUND_VECTORS of them.
ENCLOSURE_VECTORS = 20
BOUND_VECTORS = 3
# The enclosure measures while its width is at most this share of the larger distance it brackets (counted as at
# least one float32 rounding of the output's largest magnitude).
WIDTH_SHARE = 0.1
SIDES = ("reference", "onnxruntime")


class BoundRun:
    """The enclosure and both bounds on the first vectors, accumulated per output (module docstring)."""

    def __init__(self, model: onnx.ModelProto, outputs: Mapping[str, str]) -> None:
        self.vectors = 0
        self.bound_vectors = 0
        self.unavailable = ""
        self.bound_unavailable = ""
        self.not_discriminating: dict[str, dict[str, Any]] = {}
        self.measures: dict[str, dict[str, Any]] = {name: {} for name in outputs}
        self.magnitude: dict[str, float] = {name: 0.0 for name in outputs}
        self.decisions = {"count": 0, "near": {}}
        self.yardstick_distance = 0.0
        self.yardstick_unavailable = ""
        self.width = 0.0
        self.fallback = ""
        try:
            self.enclosure: Enclosure | None = Enclosure(model)
        except EnclosureUnavailable as error:  # an operator without a rule: the yardstick measures
            self.enclosure, self.fallback = None, f"from vector 0: {error.code}: {error}"
        try:
            self.bounds: Sensitivity | None = Sensitivity(model, [REFERENCE, ONNXRUNTIME])
        except BoundUnavailable as error:
            self.bounds, self.bound_unavailable = None, f"{error.code}: {error}"
        self._model = model
        self._yardstick: Any = None

    def _cross_check(self, vector: Mapping[str, np.ndarray], exact: Mapping[str, Any]) -> None:
        """The float64 yardstick's distance to the enclosure (a disagreement means one of them is wrong)."""
        from pipeline.numerics.yardstick import Yardstick

        try:
            if self._yardstick is None:
                self._yardstick = Yardstick(self._model)
            values = self._yardstick.run(vector)
        except Exception as error:  # onnx.reference refusing the model: recorded
            self.yardstick_unavailable = f"{type(error).__name__}: {error}"
            return
        for name, ball in exact.items():
            if name in values:
                _, upper = ball.distance(values[name])
                self.yardstick_distance = max(self.yardstick_distance, float(upper.max(initial=0.0)))

    def _drop_bounds(self, why: str) -> None:
        self.bounds, self.bound_unavailable = None, why
        for m in self.measures.values():
            for key in [k for k in m if "bound" in k or k in ("computed_tolerance",) or k.endswith("_shift")
                        or k.endswith("_remainder") or k.endswith("_deterministic")]:
                del m[key]

    def _fall_back(self, why: str) -> None:
        """From this vector on, the float64 yardstick's value stands for the exact result (an estimate)."""
        self.enclosure = None
        self.fallback = f"from vector {self.vectors}: {why}"

    def _yardstick_point(self, vector: Mapping[str, np.ndarray]) -> dict[str, Ball] | None:
        from pipeline.numerics.yardstick import Yardstick

        try:
            if self._yardstick is None:
                self._yardstick = Yardstick(self._model)
            values = self._yardstick.run(vector)
        except Exception as error:  # onnx.reference refusing the model too: nothing to measure against
            self.unavailable = f"{self.fallback}; the float64 yardstick: {type(error).__name__}: {error}"
            self._drop_bounds(f"no measure of the exact result: {self.unavailable}")
            return None
        for name in self.measures:
            if not np.all(np.isfinite(values[name])):
                self.unavailable = f"{self.fallback}; the float64 yardstick's value of '{name}' is not finite"
                self._drop_bounds(f"no measure of the exact result: {self.unavailable}")
                return None
        return {name: exact_ball(np.asarray(values[name], np.float64)) for name in self.measures}

    def _too_wide(self, exact: Mapping[str, Ball], sides: Mapping[str, Mapping[str, np.ndarray]]) -> str:
        for name in self.measures:
            ball = exact[name]
            width = float(ball.width().max(initial=0.0))
            floor = 2.0 ** -24 * float(np.abs(ball.mid()).max(initial=0.0))
            distance = max(float(ball.distance(np.asarray(values[name], np.float64).reshape(ball.shape))[1].max(
                initial=0.0)) for values in sides.values())
            if not width <= WIDTH_SHARE * max(distance, floor):
                return (f"the enclosure of '{name}' is {width:.3g} wide, more than {WIDTH_SHARE} of the distance "
                        f"{max(distance, floor):.3g} it measures")
        return ""

    def add(self, vector: Mapping[str, np.ndarray], ours: Mapping[str, np.ndarray],
            ort: Mapping[str, np.ndarray]) -> None:
        if self.unavailable:
            return
        sides = {"reference": ours, "onnxruntime": ort}
        exact = None
        if self.enclosure is not None:
            try:
                exact = self.enclosure.run(vector)
            except EnclosureUnavailable as error:  # not finite (too deep for double-word balls), a Sqrt of a
                self._fall_back(f"{error.code}: {error}")  # negative ball
            if exact is not None and (why := self._too_wide(exact, sides)):
                exact = None
                self._fall_back(why)
        if exact is None:
            exact = self._yardstick_point(vector)
            if exact is None:
                return
        bounds = None
        if self.bounds is not None and self.bound_vectors < BOUND_VECTORS:
            try:
                results, reports = self.bounds.run(vector)
                bounds = {"reference": results[REFERENCE.name], "onnxruntime": results[ONNXRUNTIME.name]}
                report = reports[ONNXRUNTIME.name]
                self.decisions["count"] += report.decisions
                for origin, count in report.undecided.items():
                    self.decisions["near"][origin] = self.decisions["near"].get(origin, 0) + count
                if not self.fallback:
                    self._cross_check(vector, exact)
            except BoundUnavailable as error:
                if error.code == "BOUND-E005":
                    self.not_discriminating = {"*": {"figure": "inf", "why": str(error)}}
                    self._drop_bounds(f"not discriminating: {error} ({error.code})")
                else:
                    self._drop_bounds(f"{error.code}: {error}")
        self.vectors += 1
        for name, m in self.measures.items():
            ball = exact[name]
            y = ball.mid()
            self.width = max(self.width, float(ball.width().max(initial=0.0)))
            self.magnitude[name] = max(self.magnitude[name], float(np.abs(y).max(initial=0.0)))
            scale = np.maximum(np.abs(y), np.finfo(np.float32).tiny)
            distances = {}
            for side, values in sides.items():
                lower, upper = ball.distance(np.asarray(values[name], np.float64).reshape(y.shape))
                distances[side] = (lower, upper)
                _grow(m, f"{side}_max_abs", float(upper.max(initial=0.0)))
                _grow(m, f"{side}_max_rel", float((upper / scale).max(initial=0.0)))
                if bounds is not None:
                    _grow(m, f"{side}_bound_vectors_max_abs", float(upper.max(initial=0.0)))
            _grow(m, "rounding_sum_max_abs", float((distances["reference"][1] + distances["onnxruntime"][1]).max(
                initial=0.0)))
            if bounds is None:
                continue
            for side in SIDES:
                b = bounds[side][name]
                bound = b.probabilistic
                lower, upper = distances[side]
                _grow(m, f"{side}_bound_max", float(bound.max(initial=0.0)))
                _grow(m, f"{side}_deterministic_max", float(b.deterministic.max(initial=0.0)))
                _grow(m, f"{side}_remainder_max", float(b.remainder.max(initial=0.0)))
                with np.errstate(divide="ignore", invalid="ignore"):
                    _grow(m, f"{side}_to_bound", float(np.nan_to_num(upper / bound, nan=np.inf).max(initial=0.0)))
                m[f"{side}_over_bound"] = m.get(f"{side}_over_bound", 0) + int((lower > bound).sum())
            _grow(m, "computed_tolerance", float((bounds["reference"][name].probabilistic
                                                  + bounds["onnxruntime"][name].probabilistic).max(initial=0.0)))
        if bounds is not None:
            self.bound_vectors += 1
            self._judge_discrimination()

    def _judge_discrimination(self) -> None:
        """Drop the bounds once one of them does not discriminate on some output."""
        failing: dict[str, dict[str, Any]] = {}
        for name, m in self.measures.items():
            for side in SIDES:
                bound, measured = m[f"{side}_bound_max"], m[f"{side}_bound_vectors_max_abs"]
                telling, why = bound_discrimination(bound, measured, self.magnitude[name])
                if not telling:
                    failing[f"{name}.{side}"] = {"figure": _json_float(bound), "measured": measured, "why": why}
        if not failing:
            return
        self.not_discriminating = failing
        first = next(iter(failing))
        output, side = first.rsplit(".", 1)
        self.bounds = None
        self.bound_unavailable = (f"not discriminating: output '{output}', {side}: {failing[first]['why']}; "
                                  f"judged on {self.bound_vectors} vector(s), no further vector computes it")
        for m in self.measures.values():
            m.pop("computed_tolerance", None)

    def tolerance(self, name: str, limit: float) -> EffectiveTolerance:
        m = self.measures[name]
        why = self.bound_unavailable or (f"no enclosure ({self.unavailable})" if self.unavailable else "")
        return effective_tolerance(limit, m.get("computed_tolerance"), m.get("rounding_sum_max_abs"), why)

    def summary(self, name: str) -> dict[str, Any]:
        return {key: _json_float(float(value)) if isinstance(value, float) else value
                for key, value in sorted(self.measures[name].items())}

    def describe(self) -> dict[str, Any]:
        return {"method": ENCLOSURE_DESCRIPTION, "vectors": self.vectors, "unavailable": self.unavailable,
                "max_width": self.width, "width_share": WIDTH_SHARE,
                "measure": (f"the float64 yardstick, an estimate ({self.fallback})" if self.fallback
                            else "the enclosure"),
                "yardstick_cross_check": {"max_distance": self.yardstick_distance,
                                          "unavailable": self.yardstick_unavailable,
                                          "runtime": "onnx.reference in float64 (pipeline.numerics.yardstick)"},
                "bound": {"method": "first-order error bound through the network's Jacobian at the vector "
                                    "(pipeline.numerics.sensitivity, docs/compare.md)",
                          "lambda": LAMBDA, "failure_probability_per_element": FAILURE_PROBABILITY,
                          "reference": REFERENCE.to_json(), "onnxruntime": ONNXRUNTIME.to_json(),
                          "unavailable": self.bound_unavailable, "vectors": self.bound_vectors,
                          "discriminating": None if self.bound_vectors == 0 and not self.not_discriminating
                          else not self.not_discriminating,
                          "discrimination_ratio": DISCRIMINATION_RATIO,
                          "decisions": {"count": self.decisions["count"],
                                        "within_spread": dict(sorted(self.decisions["near"].items()))},
                          "not_discriminating": dict(sorted(self.not_discriminating.items()))}}


def _grow(measures: dict[str, Any], key: str, value: float) -> None:
    measures[key] = max(measures.get(key, 0.0), value)
