"""The lookup tables of the SDP (Y unit) and the CDP, evaluated as the hardware indexes them.

Read from the NVDLA C model (github.com/nvdla/hw, nvdlav1): cmod/hls/sdp/sdp_y_idx.cpp (index and
fraction of both tables, hit/underflow/overflow, the priority muxing), cmod/hls/sdp/sdp_y_inp.cpp and
cmod/hls_wrapper/sdp_hls_wrapper.cpp (interpolation, and the flow value y0 + (x - offset) * slope),
cmod/hls_wrapper/cdp_hls_wrapper.cpp `HLS_CDP_lookup_lut` (the CDP's). For FP16 data the start and end
fields are float32 bit patterns, the lookup input is float32:

- linear table: d = x - start (float32); d <= 0 (or NaN) is an underflow; d * 2^(-frac_bits) gives the
  index and the fraction; an index at the last sample or beyond is an overflow;
- exponential table: index = exponent(d) - exp_offset, fraction = d's mantissa; below 0 an underflow,
  64 or more an overflow;
- both tables hit or miss; the underflow priority picks when both underflow, the overflow priority when
  both overflow, the hybrid priority when both hit or one underflows while the other overflows, else the
  table that hits; 0 is the exponential (LE) table, 1 the linear-only (LO) table;
- a hit interpolates between the sample and the next; an underflow gives the first sample plus
  (x - start (+ 2^exp_offset for the exponential table)) times the FP16 underflow slope, an overflow the
  last sample plus (x - end) times the overflow slope.

Arithmetic: `ideal` interpolates in float64 (the result is rounded by whoever writes it); `sdp-fp17` as
sdp_y_inp.cpp ((1 - f) * y0 + f * y1, every step an FP17 rounding); `cdp-fp17` as the CDP
(y0 + (y1 - y0) * f with f truncated to 16 bits, hw_arith.lut_interpolate_fp17).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.execute.nvdla import hw_arith as H

LE, LO = 0, 1
METHOD_EXPONENT = 0
ARITHMETIC = ("ideal", "sdp-fp17", "cdp-fp17")


def _int8(field: int) -> int:
    return ((field & 0xFF) ^ 0x80) - 0x80


def _f32(bits: int) -> np.float32:
    return np.uint32(bits & 0xFFFFFFFF).view(np.float32)


def _f16(bits: int) -> float:
    return float(np.uint16(bits & 0xFFFF).view(np.float16))


def _table(values: Any) -> np.ndarray:
    return np.array(list(values), dtype=np.int16).view(np.float16).astype(np.float64)


def _linear(x: np.ndarray, start: np.float32, frac_bits: int, last: int) -> tuple[np.ndarray, ...]:
    d = (x - start).astype(np.float32)
    under = ~(d > 0)
    scaled = np.ldexp(d.astype(np.float64), -frac_bits)
    index = np.floor(np.where(under, 0, scaled))
    over = ~under & (index >= last)
    return under, over, np.clip(index, 0, last).astype(np.int64), np.where(under | over, 0.0, scaled - index)


def _exponential(x: np.ndarray, start: np.float32, offset: int, last: int) -> tuple[np.ndarray, ...]:
    d = (x - start).astype(np.float32)
    under = ~(d > 0)
    mant, exp = np.frexp(np.where(under, np.float32(1), d).astype(np.float64))
    index = (exp - 1) - offset
    under = under | (index < 0)
    over = ~under & (index >= last)
    index = np.where(under, 0, np.clip(index, 0, last)).astype(np.int64)
    return under, over, index, np.where(under | over, 0.0, 2.0 * mant - 1.0)


def lookup(lut: Any, x: np.ndarray, arithmetic: str = "ideal") -> np.ndarray:
    """The table's value at every element of `x` (float64 holding what the unit hands on)."""
    if arithmetic not in ARITHMETIC:
        raise ValueError(arithmetic)
    x = np.asarray(x, dtype=np.float32)
    le, lo = _table(lut.linear_exp_table), _table(lut.linear_only_table)
    le_start, le_end = _f32(lut.linear_exp_start), _f32(lut.linear_exp_end)
    lo_start, lo_end = _f32(lut.linear_only_start), _f32(lut.linear_only_end)
    if lut.method == METHOD_EXPONENT:
        le_under, le_over, le_index, le_frac = _exponential(x, le_start, _int8(lut.linear_exp_offset), len(le) - 1)
        le_flow_start = np.float32(le_start + np.float32(2.0 ** _int8(lut.linear_exp_offset)))
    else:
        le_under, le_over, le_index, le_frac = _linear(x, le_start, _int8(lut.linear_exp_offset), len(le) - 1)
        le_flow_start = le_start
    lo_under, lo_over, lo_index, lo_frac = _linear(x, lo_start, _int8(lut.linear_only_offset), len(lo) - 1)
    le_hit, lo_hit = ~(le_under | le_over), ~(lo_under | lo_over)
    hybrid = LO if lut.hybrid_priority else LE
    choice = np.where(le_under & lo_under, LO if lut.underflow_priority else LE,
                      np.where(le_over & lo_over, LO if lut.overflow_priority else LE,
                               np.where(le_hit & ~lo_hit, LE, np.where(lo_hit & ~le_hit, LO, hybrid))))
    use_lo = choice == LO
    frac = np.where(use_lo, lo_frac, le_frac)
    under = np.where(use_lo, lo_under, le_under)
    over = np.where(use_lo, lo_over, le_over)
    y0 = np.where(use_lo, lo[np.minimum(lo_index, len(lo) - 1)], le[np.minimum(le_index, len(le) - 1)])
    y1 = np.where(use_lo, lo[np.minimum(lo_index + 1, len(lo) - 1)], le[np.minimum(le_index + 1, len(le) - 1)])
    offset = np.where(under, np.where(use_lo, lo_start, le_flow_start), np.where(use_lo, lo_end, le_end))
    lo_slope = np.where(under, _f16(lut.linear_only_underflow_slope), _f16(lut.linear_only_overflow_slope))
    le_slope = np.where(under, _f16(lut.linear_exp_underflow_slope), _f16(lut.linear_exp_overflow_slope))
    slope = np.where(use_lo, lo_slope, le_slope)
    flow = under | over
    if arithmetic == "ideal":
        hit_value = y0 + (y1 - y0) * frac
        gap = x.astype(np.float64) - offset.astype(np.float32).astype(np.float64)
        flow_value = y0 + np.where(slope == 0, 0.0, gap * slope)
    else:
        if arithmetic == "sdp-fp17":
            f = np.asarray(frac, dtype=np.float64)
            a0 = np.where(f == 0, 1.0, H.fp17(1.0 - f))
            hit_value = H.fp17(H.fp17(a0 * y0) + H.fp17(H.fp17(f) * y1))
        else:
            hit_value = H.lut_interpolate_fp17(y0, y1, frac)
        gap = H.fp17((x - offset.astype(np.float32)).astype(np.float32).astype(np.float64))
        flow_value = H.fp17(H.fp17(gap * H.fp17(slope)) + y0)
        flow_value = np.where(slope == 0, y0, flow_value)
    return np.where(flow, flow_value, hit_value)
