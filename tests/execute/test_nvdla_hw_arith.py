"""The emulator's `hw-approx` arithmetic against what the NVDLA C model and firmware compute.

The Booth products below are outputs of `cal_fp16_booth` (github.com/nvdla/hw, nvdlav1,
cmod/cmac/NV_NVDLA_cmac.h) compiled on its own and run on random operands (the code is not in
this repository, its outputs are); the reciprocals are nvdla/sw firmware's `recip_kernel_size`
FP16 row (kmd/firmware/pdp.c). Nobody here wrote either.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.execute.nvdla import hw_arith as H

# (negative, weight mantissa, data mantissa, alignment shift, C model product): six below the floor of the
# exact shifted product, six equal to it, six above it
BOOTH = [
    (0, 1957, 12288, 12, 5870), (1, 1620, 2750, 16, -69), (1, 5936, 6856, 16, -622), (1, 9392, 1430, 16, -206),
    (0, 1306, 1763, 16, 34), (1, 7440, 15600, 16, -1772),
    (0, 1546, 16304, 28, 0), (1, 1453, 8092, 0, -11757676), (1, 8224, 1569, 12, -3151), (0, 1086, 2152, 0, 2337072),
    (1, 3752, 5616, 16, -322), (0, 3776, 1645, 16, 94),
    (1, 3776, 2956, 28, 0), (1, 1237, 1104, 24, 0), (1, 4788, 6388, 20, -29), (0, 12296, 2216, 20, 26),
    (0, 8856, 1889, 20, 16), (0, 14104, 3418, 20, 46),
]


def test_cmac_booth_product_equals_the_c_model():
    neg, wt, dat, shift, want = (np.array(col) for col in zip(*BOOTH))
    got = H.cmac_booth_product(neg, wt, dat, shift)
    assert got.tolist() == want.tolist()
    floor = np.where(neg == 1, -(wt * dat), wt * dat) >> shift
    assert sorted(set((got - floor).tolist())) == [-1, 0, 1]  # the C model is not a floor; we follow it
    assert H.cmac_booth_product(1, 16383, 16383, 32).tolist() == 0  # aligned out of 32 bits: dropped


def test_cmac_atomic_sum_truncates_products_of_lower_exponent_groups():
    """256 * (1 + 2^-10) sets the group; (1 + 2^-10) * (2 - 2^-10) * 2^-8 is four binade groups (16 bits)
    below and loses its low bits; alone in an operation the same product is exact."""
    w = np.array([[1 + 2 ** -10, 1 + 2 ** -10]], dtype=np.float32)
    x = np.array([[256.0], [(2 - 2 ** -10) * 2 ** -8]], dtype=np.float32)
    low = float(w[0, 1]) * float(x[1, 0])
    got = float(H.cmac_atomic_sum(w, x)[0, 0]) - 256 * float(w[0, 0])
    assert got != low and abs(got - low) < 2 * 2 ** -18 and got / 2 ** -18 == int(got / 2 ** -18)
    assert float(H.cmac_atomic_sum(w[:, 1:], x[1:])[0, 0]) == low


def test_cacc_to_fp32_rounds_ties_away_from_zero():
    tie = np.array([1 + 2 ** -24, -(1 + 2 ** -24), 1 + 3 * 2 ** -24, 2 ** -140], dtype=np.float64)
    assert H.cacc_to_fp32(tie).tolist() == [1 + 2 ** -23, -(1 + 2 ** -23), 1 + 2 ** -22,
                                            float(np.float32(2 ** -140))]
    assert tie.astype(np.float32)[0] == 1.0  # where round-to-nearest-even (ideal) goes down


def test_fp17_reciprocals_are_the_firmware_table():
    firmware = [0x7C00, 0x7800, 0x7555, 0x7400, 0x7266, 0x7155, 0x7092, 0x7000]  # FP17: 6-bit exponent, bias 31
    decoded = [(1 + (b & 0x3FF) / 1024) * 2.0 ** (((b >> 10) & 0x3F) - 31) for b in firmware]
    assert H.fp17(1.0 / np.arange(1, 9)).tolist() == decoded


def test_pdp_average_rounds_each_partial_sum_to_fp17():
    """2048 + 1 + 1 in FP17 (11 bits): each addition of 1 to 2048 is a tie to even, so the row sum stays
    2048, where the float32 sum is 2050."""
    windows = np.array([2048.0, 1.0, 1.0], dtype=np.float32).reshape(1, 3, 1, 1, 1)
    assert H.pdp_average_fp17(windows).item() == float(H.fp17(2048 * H.fp17(1 / 3)))
    assert float(windows.sum() / np.float32(3)) != H.pdp_average_fp17(windows).item()


def test_cdp_square_sum_adds_the_neighbours_first():
    """(1 + 1) + 4096^2 is exact in float32; 1 + 4096^2 + 1 from the left is not."""
    x = np.array([1.0, 4096.0, 1.0], dtype=np.float32).reshape(3, 1, 1)
    assert H.cdp_square_sum(x, 3)[1, 0, 0] == 2.0 ** 24 + 2
    assert (np.float32(1) + np.float32(2 ** 24)) + np.float32(1) == 2.0 ** 24


@pytest.mark.parametrize("value,expected", [(1 + 2 ** -11, 1.0), (1 + 3 * 2 ** -11, 1 + 2 ** -9),
                                            (2.0 ** -31, 0.0), (70000.5, 70016.0)])
def test_fp17_is_eleven_bits_to_nearest_even_without_fp16_range(value, expected):
    assert H.fp17(np.array([value])).item() == expected


def test_hw_approx_convolution_over_two_atomic_channel_groups_stays_within_one_ulp():
    """80 input channels (two CMAC operations per tap) of random FP16 data: the block-floating-point
    products move some outputs by at most one FP16 ulp from the exact (float64) convolution."""
    import onnx
    from onnx import TensorProto, helper

    from pipeline.codegen.nvdla.mapping import map_program
    from pipeline.codegen.nvdla.writer import write_loadable
    from pipeline.execute.nvdla.golden import ulp_distance
    from pipeline.execute.nvdla.emulator import emulate
    from pipeline.export import convert
    from pipeline.split.nvdla_legalize import legalize

    rng = np.random.default_rng(5)
    w = rng.normal(size=(4, 80, 3, 3)).astype(np.float16).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "m",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 80, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
                              [onnx.numpy_helper.from_array(w, "w")])
    exported = convert(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    data, _, _ = write_loadable(map_program(legalize(exported.graph, exported.variables, text=exported.text)))
    x = rng.normal(size=(1, 80, 6, 6)).astype(np.float16).astype(np.float32)
    exact = np.zeros((4, 4, 4))
    for i in range(3):
        for j in range(3):
            exact += np.einsum("kc,chw->khw", w[:, :, i, j].astype(np.float64), x[0, :, i:i + 4, j:j + 4])
    hw = emulate(data, {"x": x}, "hw-approx")["y"].reshape(-1)
    assert int(ulp_distance(hw, exact.reshape(-1).astype(np.float16)).max()) <= 1
    assert not np.array_equal(H.cmac_atomic_sum(w[:, :64, 0, 0], x[0, :64].reshape(64, -1)),
                              w[:, :64, 0, 0].astype(np.float64) @ x[0, :64].reshape(64, -1).astype(np.float64))


def test_an_exact_cancellation_keeps_the_sign_of_the_first_operand():
    """FpAdd (hls/include/nvdla_float.h) takes the sign of the larger operand, of the first when the
    magnitudes are equal: the SDP's data + operand and the PDP's FP17 sums give -0 where IEEE gives +0
    (seen on the cmod: conv outputs -3 + bias 3, averages of values summing to 0)."""
    sums = H.sdp_add(np.array([-3.0, 3.0, -0.0, 0.0, -2.0], np.float32), np.array([3.0, -3.0, 0.0, -0.0, 5.0], np.float32))
    assert np.signbit(sums).tolist() == [True, False, True, False, False] and sums[-1] == 3.0
    assert np.signbit(H.fp17_add(np.array([-1.5, 1.5]), np.array([1.5, -1.5]))).tolist() == [True, False]
    assert np.signbit(H.sdp_relu(np.array([-0.0, -1.0, 2.0], np.float32))).tolist() == [False, False, False]
    assert np.isnan(H.sdp_relu(np.array([np.nan], np.float32))).all()
    assert np.signbit(H.fp17(np.array([-2.0 ** -40]))).all()  # flushed below the FP17 normals, sign kept
    # FpMul's zero keeps the product's sign (seen on the cmod: x * hard_sigmoid(x) = -3.04 x 0 is -0)
    assert np.signbit(H.sdp_mul_flush(np.float32([-3.041, -1e-40]) * np.float32([0.0, 1.0]))).all()


def test_pdp_average_leaves_padded_positions_out_of_the_sum():
    """A window row [pad, -0]: the cmod sums only the element (-0, then + the padding value 0: still -0); a
    padded +0 summed first would give +0."""
    windows = np.array([[0.0, -0.0]]).reshape(1, 2, 1, 1, 1)
    valid = np.array([[False, True]]).reshape(1, 2, 1, 1, 1)
    assert np.signbit(H.pdp_average_fp17(windows, valid)).all()
    assert not np.signbit(H.pdp_average_fp17(windows)).any()
