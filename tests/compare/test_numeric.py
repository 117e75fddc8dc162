"""Numeric comparison: bit identity (signed zero, NaN), first divergence, tolerance, top-1."""

from __future__ import annotations

import numpy as np

from pipeline.compare.numeric import compare, first_divergence, same_bits, top1


def arrays(*rows):
    return np.asarray(rows, np.float32)


def test_identical_passes_exact():
    a = arrays([1.0, -0.0, np.nan], [2.0, 3.0, np.inf])
    result = compare({"y": a}, {"y": a.copy()}, exact=True)
    assert result.passed and result.measured()["max_ulp"] == 0 and result.measured()["bit_identical"]


def test_nan_payloads_are_not_compared_but_nan_vs_number_is():
    a = arrays([np.nan, 1.0])
    b = a.copy()
    b.reshape(-1).view(np.uint32)[0] = 0xFFC00001
    assert same_bits(a, b).all()
    c = arrays([1.0, 1.0])
    result = compare({"y": a}, {"y": c}, exact=True)
    assert not result.passed and result.measured()["nan_mismatches"] == 1


def test_signed_zero_is_zero_ulp_but_not_bit_identical():
    result = compare({"y": arrays([0.0, 1.0])}, {"y": arrays([-0.0, 1.0])}, exact=True)
    out = result.outputs[0]
    assert out.stats.max_ulp == 0 and out.signed_zero_mismatches == 1 and not out.passed
    assert "vector 0, element [0]" in out.reason and "0x80000000" in out.reason


def test_first_divergence_is_the_first_in_vector_then_row_major_order():
    expected = np.zeros((3, 2, 2), np.float32)
    actual = expected.copy()
    actual[2, 0, 0] = 1.0
    actual[1, 1, 1] = np.nextafter(np.float32(0), np.float32(1))
    d = first_divergence("y", actual, expected)
    assert (d.vector, d.flat_index, d.index, d.ulp) == (1, 3, [1, 1], 1)


def test_tolerance_mode_names_the_first_element_beyond_it():
    e = np.zeros((2, 4), np.float32)
    a = e.copy()
    a[0, 1] = 1e-7
    a[1, 2] = 1e-3
    ok = compare({"y": a}, {"y": e}, max_abs_error=1e-6)
    assert not ok.passed and "vector 1, element [2]" in ok.outputs[0].reason
    assert compare({"y": a}, {"y": e}, max_abs_error=1e-2).passed


def test_top1():
    e = arrays([0.1, 0.9, 0.0], [0.5, 0.2, 0.3])
    a = arrays([0.1, 0.8, 0.0], [0.2, 0.5, 0.3])
    assert top1(a, e) == (1, 2)


def test_the_report_names_a_negative_infinity_and_the_bit_identity_of_each_output():
    """A -inf divergence is written "-inf" in the JSON report (not a misspelling a reader cannot parse), and each
    output's record says whether it is bit-identical under the key the evidence reads."""
    e = arrays([1.0, 2.0])
    a = arrays([-np.inf, 2.0])
    result = compare({"y": a}, {"y": e}, exact=True)
    record = result.to_json()["outputs"][0]
    assert record["bit_identical"] is False and record["first_divergence"]["actual"] == "-inf"
    assert record["first_divergence"]["expected"] == 1.0
    same = compare({"y": e}, {"y": e.copy()}, exact=True).to_json()["outputs"][0]
    assert same["bit_identical"] is True and same["first_divergence"] is None
