"""The emulator's lookup tables, as the NVDLA C model indexes them (cmod/hls/sdp/sdp_y_idx.cpp, sdp_y_inp.cpp,
hls_wrapper/cdp_hls_wrapper.cpp): tables built here by hand (not by the writer) at values whose lookups are
exact, then the writer's sigmoid/tanh/LRN tables against their functions."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.codegen.nvdla import reader as R
from pipeline.numerics.nvdla_lut import activation_lut, lrn_lut
from pipeline.execute.nvdla.lut import lookup


def _bits32(v: float) -> int:
    return int(np.asarray(v, "<f4").view("<u4"))


def _lut(**fields) -> R.Lut:
    lut = R.Lut()
    for name, value in fields.items():
        target = getattr(lut, name)
        if isinstance(value, list):
            for i, v in enumerate(value):
                target[i] = v
        else:
            setattr(lut, name, value)
    return lut


def _f16(values) -> list[int]:
    return [int(v) for v in np.asarray(values, np.float64).astype("<f2").view("<i2")]


LO = np.arange(257, dtype=np.float64)           # sample i = i
LE = 1000.0 + np.arange(65, dtype=np.float64)  # sample i = 1000 + i (at x = 2^(i - 10) in _both)


def _linear_only(priorities=(1, 1, 1), slopes=(0, 0)) -> R.Lut:
    """LO table over [-16, 16) in steps of 1/8 (frac_bits -3), LE table disabled (NVIDIA's sigmoid layout)."""
    return _lut(linear_only_table=_f16(LO), linear_exp_table=_f16(np.zeros(65)), linear_exp_offset=0x80,
                linear_only_offset=(-3) & 0xFF, linear_only_start=_bits32(-16.0), linear_only_end=_bits32(16.0),
                hybrid_priority=priorities[0], underflow_priority=priorities[1], overflow_priority=priorities[2],
                method=1, linear_only_underflow_slope=_f16([slopes[0]])[0] & 0xFFFF,
                linear_only_overflow_slope=_f16([slopes[1]])[0] & 0xFFFF)


@pytest.mark.parametrize("arithmetic", ["ideal", "sdp-fp17", "cdp-fp17"])
def test_the_linear_table_indexes_by_the_distance_from_its_start_in_steps_of_2_to_the_frac_bits(arithmetic):
    lut = _linear_only()
    x = np.array([-16.0, -15.875, -15.0, 0.0, 0.0625, 15.875, 15.9375])
    # index (x + 16) * 8, interpolated linearly: samples are their index, so the value is (x + 16) * 8; x = -16 is an
    # underflow (d = 0) giving sample 0 plus slope 0
    assert lookup(lut, x, arithmetic).tolist() == [0.0, 1.0, 8.0, 128.0, 128.5, 255.0, 255.5]


def test_underflow_and_overflow_give_the_end_samples_plus_the_slope_times_the_distance():
    lut = _linear_only(slopes=(0.5, 2.0))
    x = np.array([-20.0, 16.0, 18.0, 1e4])
    # below: sample 0 + (x - start) * 0.5; the last sample (256) is an overflow, from the end register:
    # 256 + (x - 16) * 2
    assert lookup(lut, x).tolist() == [-2.0, 256.0, 260.0, 256.0 + (1e4 - 16) * 2]


def _both(priorities) -> R.Lut:
    """LE table (exponent method, samples at 2^(i - 10)) over [2^-10, 2^54], LO table over [0, 2^-10] in 2^-18 steps."""
    return _lut(linear_exp_table=_f16(LE), linear_only_table=_f16(LO), linear_exp_offset=(-10) & 0xFF,
                linear_only_offset=(-18) & 0xFF, linear_exp_start=0, linear_exp_end=_bits32(2.0 ** 54),
                linear_only_start=0, linear_only_end=_bits32(2.0 ** -10), hybrid_priority=priorities[0],
                underflow_priority=priorities[1], overflow_priority=priorities[2], method=0)


def test_the_exponential_table_indexes_by_the_exponent_and_the_priorities_choose_between_tables():
    lut = _both((0, 1, 0))
    x = np.array([2.0 ** -10, 1.5 * 2.0 ** -10, 1.0, 3.0, 2.0 ** -12, 0.0, 2.0 ** 60])
    got = lookup(lut, x)
    # LE hits: index exponent + 10, fraction the mantissa: 2^-10 -> LE[0]; 1.5 * 2^-10 -> halfway from LE[0] to LE[1];
    # 1 -> LE[10]; 3 -> halfway between LE[11] and LE[12]
    assert got[:4].tolist() == [1000.0, 1000.5, 1010.0, 1011.5]
    # 2^-12: LE underflows, LO hits (index 64); 0: both underflow, the underflow priority (LO) gives LO[0]; 2^60: both
    # overflow, the overflow priority (LE) gives LE[64]
    assert got[4:].tolist() == [64.0, 0.0, 1064.0]
    assert lookup(_both((0, 0, 0)), np.array([0.0])).tolist() == [1000.0]


@pytest.mark.parametrize("fn, function", [("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("tanh", np.tanh)])
def test_the_writer_s_activation_tables_hold_their_function_at_the_samples(fn, function):
    lut = R.decode(R.Lut, bytes(_packed(activation_lut(fn))))
    start, step = (-16.0, 1 / 8) if fn == "sigmoid" else (-4.0, 1 / 32)
    samples = start + step * np.arange(256)
    got = lookup(lut, samples.astype(np.float32))
    assert np.array_equal(got[1:], function(samples[1:]).astype(np.float16).astype(np.float64))


def test_the_writer_s_lrn_table_in_the_hardware_s_terms():
    lut = R.decode(R.Lut, bytes(_packed(lrn_lut(5, 1e-4, 0.75, 1.0))))
    s = np.array([0.0, 2.0 ** -11, 2.0 ** -10, 1.0, 4.0, 2.0 ** 54, 2.0 ** 60])
    want = (1.0 + 1e-4 / 5 * np.minimum(s, 2.0 ** 54)) ** -0.75
    assert np.max(np.abs(lookup(lut, s) - want)) <= 2.0 ** -11


def _packed(fields):
    from pipeline.codegen.nvdla.firmware import LUT
    return LUT.pack(fields)
