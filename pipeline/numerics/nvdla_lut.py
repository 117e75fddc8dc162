"""Lookup tables of the loadable (`dla_lut_param`, kmd/firmware/include/dla_interface.h), in the hardware's terms.

What the fields mean is the NVDLA C model's (github.com/nvdla/hw, nvdlav1, cmod/hls/sdp/sdp_y_idx.cpp
and sdp_y_inp.cpp for the SDP's Y unit, cmod/hls_wrapper/cdp_hls_wrapper.cpp `HLS_CDP_lookup_lut` for
the CDP), as the firmware programs them (kmd/firmware/common.c `update_lut`): for an FP16 pipeline the
start/end fields hold float32 bit patterns, the input x (float32) is looked up as d = x - start:

- linear-only (LO) table, 257 samples: index and fraction of d * 2^(-frac_bits) (`linear_only_offset`
  is the union's int8 `frac_bits`); d <= 0 is an underflow, an index of 256 or more an overflow;
- linear-exponential (LE) table, 65 samples, exponent method: index = exponent(d) - `exp_offset`,
  the fraction is d's mantissa; below the offset an underflow, 64 or more an overflow;
- both tables' results are chosen by the priority fields (underflow, overflow, hybrid: 0 LE, 1 LO);
  a hit interpolates linearly between the sample and the next, an underflow or overflow gives the
  first or last sample plus (x - start (+ 2^exp_offset) or x - end) times the FP16 slope.

NVIDIA's compiler programs sigmoid and tanh the same way (umd/core/src/compiler/LutManager.cpp:
linear method, LO table only over [-16, 16) and [-4, 4)); the samples here are computed, not copied.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

LE_SAMPLES, LO_SAMPLES = 65, 257
METHOD_EXPONENT, METHOD_LINEAR = 0, 1
PRIORITY_LE, PRIORITY_LO = 0, 1
DISABLED_BITS = -128  # frac_bits of a table the compiler disables (LutManager.cpp)


def f32_bits(value: float) -> int:
    return int(np.asarray(value, dtype="<f4").view("<u4"))


def fp16_bits(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values, dtype=np.float64).astype("<f2").view("<i2")]


def _int8(value: int) -> int:
    """The union `dla_lut_offset`: an int8 in its low byte, the reserved high byte 0."""
    return value & 0xFF


# Activation lookup tables of the SDP's Y unit: (function, start of the linear-only table, frac_bits).
ACTIVATIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float, int]] = {
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), -16.0, -3),  # 256 intervals of 1/8 over [-16, 16)
    "tanh": (np.tanh, -4.0, -5),                                # 256 intervals of 1/32 over [-4, 4)
}


def activation_lut(fn: str) -> dict[str, Any]:
    """The SDP lookup table of sigmoid or tanh: the LO table alone (linear method, LE disabled), samples rounded
    to nearest FP16, flat beyond its ends (slopes 0: the first or last sample)."""
    function, start, frac_bits = ACTIVATIONS[fn]
    step = 2.0 ** frac_bits
    xs = start + step * np.arange(LO_SAMPLES, dtype=np.float64)
    return {"linear_exp_table": [0] * LE_SAMPLES, "linear_only_table": fp16_bits(function(xs)),
            "linear_exp_offset": _int8(DISABLED_BITS), "linear_only_offset": _int8(frac_bits),
            "linear_exp_start": 0, "linear_exp_end": 0, "linear_only_start": f32_bits(start),
            "linear_only_end": f32_bits(start + step * (LO_SAMPLES - 1)), "hybrid_priority": PRIORITY_LO,
            "underflow_priority": PRIORITY_LO, "overflow_priority": PRIORITY_LO, "method": METHOD_LINEAR}


LRN_EXP_OFFSET = -10  # the LE table's first octave: 2^-10
LRN_LO_FRAC_BITS = -18  # 256 intervals of 2^-18 cover [0, 2^-10]


def lrn_lut(size: int, alpha: float, beta: float, bias: float) -> dict[str, Any]:
    """The CDP lookup table of f(s) = (bias + alpha / size * s)^-beta, s the squared sum over the window: the LE
    table (exponent method) at s = 2^(-10 + i), i = 0..64; the LO table over [0, 2^-10] below it (an underflow of
    both at s = 0 takes the LO table's first sample, f(0)); above 2^54 the last LE sample."""
    def fn(s: np.ndarray) -> np.ndarray:
        return (np.float64(bias) + np.float64(alpha) / size * s) ** -np.float64(beta)

    lo_end = 2.0 ** LRN_EXP_OFFSET
    lo = fn(np.arange(LO_SAMPLES, dtype=np.float64) * lo_end / (LO_SAMPLES - 1))
    le = fn(2.0 ** (LRN_EXP_OFFSET + np.arange(LE_SAMPLES, dtype=np.float64)))
    return {"linear_exp_table": fp16_bits(le), "linear_only_table": fp16_bits(lo),
            "linear_exp_offset": _int8(LRN_EXP_OFFSET), "linear_only_offset": _int8(LRN_LO_FRAC_BITS),
            "linear_exp_start": 0, "linear_exp_end": f32_bits(2.0 ** (LRN_EXP_OFFSET + LE_SAMPLES - 1)),
            "linear_only_start": 0, "linear_only_end": f32_bits(lo_end), "hybrid_priority": PRIORITY_LE,
            "underflow_priority": PRIORITY_LO, "overflow_priority": PRIORITY_LE, "method": METHOD_EXPONENT}
