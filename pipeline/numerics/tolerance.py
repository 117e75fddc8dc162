"""The one tolerance rule for "float32 reference (or the code bit-identical to it) against onnxruntime".

Used by the export validation (reference semantics vs onnxruntime) and by the compare step
(executed code vs onnxruntime), so the same numbers cannot pass one and fail the other
(docs/compare.md, "The tolerance rule"):

* the deploy.yaml tolerance (`limit`) is the largest difference the user accepts;
* the computed tolerance is bound(ours) + bound(onnxruntime), the error bounds of
  pipeline.numerics.sensitivity (max over the bound vectors and elements), used only while they
  discriminate (pipeline.export.bounds);
* the measured rounding is |ours - exact| + |onnxruntime - exact| over the enclosure vectors (the
  exact result enclosed by pipeline.numerics.enclosure; the float64 yardstick's value where the
  enclosure is too wide, an estimate, validation.json `enclosure.measure`);
* the effective tolerance is the computed one (or the measured rounding, where that is larger on
  vectors the bound was not computed on) when it is tighter than the limit, else the limit;
* the limit is *justified* when the computed tolerance fits under it, or else when the measured
  rounding fits under it; a limit below the measured rounding is a limit that float32 evaluation
  cannot meet, and the rule says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EffectiveTolerance:
    """The absolute tolerance a comparison applies, where it comes from, and whether it is justified."""

    effective: float
    limit: float
    computed: float | None
    measured_rounding: float | None
    basis: str
    justified: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The rule's figures; a non-finite one (never expected: such a bound is not discriminating) as text."""
        def number(value: float | None) -> float | str | None:
            return value if value is None or math.isfinite(value) else str(value)

        return {"effective_max_abs_error": number(self.effective), "limit_max_abs_error": number(self.limit),
                "computed_max_abs_error": number(self.computed),
                "measured_rounding_max_abs_error": number(self.measured_rounding),
                "basis": self.basis, "justified": self.justified, "reason": self.reason}


def effective_tolerance(limit: float, computed: float | None, measured_rounding: float | None = None,
                        unavailable: str = "") -> EffectiveTolerance:
    """The rule (module docstring). `computed` None: no bound (`unavailable` says why)."""
    if computed is not None and computed <= limit and (measured_rounding is None or measured_rounding <= limit):
        reason = f"computed bound {computed:.3e} <= deploy.yaml limit {limit:.3e}"
        effective = computed
        if measured_rounding is not None and measured_rounding > computed:
            effective = measured_rounding
            reason += (f"; the measured rounding of both sides {measured_rounding:.3e}, on vectors the bound was not "
                       "computed on, is larger and is applied")
        return EffectiveTolerance(effective, limit, computed, measured_rounding, "computed bound", True, reason)
    if computed is None:
        why = f"no computed bound ({unavailable or 'not evaluated'})"
    else:
        why = f"computed bound {computed:.3e} exceeds the deploy.yaml limit {limit:.3e}"
    if measured_rounding is None:
        return EffectiveTolerance(limit, limit, computed, None, "deploy.yaml limit", False,
                                  f"{why}; rounding not measured against the exact result")
    if measured_rounding <= limit:
        return EffectiveTolerance(limit, limit, computed, measured_rounding, "deploy.yaml limit", True,
                                  f"{why}; the limit covers the measured rounding of both sides "
                                  f"({measured_rounding:.3e} against the exact result)")
    return EffectiveTolerance(limit, limit, computed, measured_rounding, "deploy.yaml limit", False,
                              f"{why}, and the measured rounding of both sides against the exact result "
                              f"({measured_rounding:.3e}) exceeds it too: float32 evaluation cannot meet this limit "
                              f"(rounding, not a defect, if export.bound_reference and export.bound_onnxruntime pass; "
                              f"a deploy.yaml validation.tolerance.max_abs_error of at least {measured_rounding:.1e} "
                              f"would be justified by the measured rounding)")


# A computed bound more than this many times the measured distance to the exact result says
# nothing a tolerance could use: it is reported as not discriminating and no longer computed.
DISCRIMINATION_RATIO = 100.0
UNIT_ROUNDOFF = 2.0 ** -24


def bound_discrimination(bound: float, measured: float, magnitude: float) -> tuple[bool, str]:
    """Whether a computed forward error bound discriminates: finite and at most DISCRIMINATION_RATIO
    times the measured distance to the exact result. The distance counts as at least one float32
    rounding of the output's largest magnitude (a float32 result that happens to be exact on the
    validation vectors is no reason to refuse a bound of a few roundings); '' or why not."""
    floor = max(measured, UNIT_ROUNDOFF * magnitude, 2.0 ** -149)
    if not math.isfinite(bound):
        return False, f"bound {bound} is not finite"
    if bound > DISCRIMINATION_RATIO * floor:
        return False, (f"bound {bound:.3e} is {bound / floor:.3g} times the measured distance {floor:.3e} to the "
                       f"exact result (more than {DISCRIMINATION_RATIO:g} times)")
    return True, ""


def spread(values: np.ndarray) -> float:
    """max over elements of (max - min over vectors) of `values` [vectors, ...]: what the validation can see."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] < 2:
        return 0.0
    with np.errstate(invalid="ignore"):
        per_element = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
    return float(np.nanmax(per_element)) if per_element.size else 0.0


def discriminating(spread_value: float, tolerance: float) -> tuple[bool, str]:
    """A validation discriminates an output when its spread across the vectors exceeds the tolerance."""
    if spread_value > tolerance:
        return True, ""
    return False, (f"the output varies by at most {spread_value:.3e} across the validation vectors, not more than "
                   f"the tolerance {tolerance:.3e}: a constant output would pass this validation")
