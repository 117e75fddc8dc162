"""Convolution register tiles (kernels/tiling.py) at shapes that leave remainders, 0 ULP against the reference.

Every tile is cut short somewhere: output channels not a multiple of the tile's channels,
output rows not a multiple of its rows, a row whose last vector is shifted back, a channel
block with empty lanes; depthwise convolutions with several rows per tile, stride-2 windows
read with two loads and a shuffle (replicate border) or from the phase-split copy (even columns,
then odd ones: odd, even and no left padding, dilation 3, a row tail that is not a whole vector
pair; a 1x1 kernel), dilation, 1x1, input planes skewed against cache-set aliasing, a reduction cut into
passes over input channels (partial sums stored and reloaded), 12-accumulator tiles (6 channels
x 2 vectors) over 64 x 3 x 3 terms with a 5-channel and a 1-vector remainder, whole output planes in one
tile (2x2, 2x3, 1x1 kernels, stride 2, grouped and dilated: taps written out, padded taps skipped, large
weights prefetched) and a replicate border that keeps the padded copy. A planted reordering of one tiled kernel's
sum (input channels in decreasing order) must be caught by the same comparison: the test can
fail.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from pipeline.codegen.c.kernels.conv import channel_chunk, plane_skew
from pipeline.codegen.c.kernels.tiling import (MAX_ACCUMULATORS, MAX_CHANNEL_ACCUMULATORS, PHASE_SPLIT_FACTOR,
                                               WIDE_ACCUMULATORS, channels_tile, phase_split_factor, positions_tile,
                                               tile_cycles)
from tests.codegen import cghelpers as H

RNG = np.random.default_rng(1313)
SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-40, 3e38, -3e38], np.float32)


def _weights(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _data(shape: tuple[int, ...], count: int = 2, rarity: int = 40) -> np.ndarray:
    """Normal values with one in `rarity` replaced by a special (NaN, +-inf, +-0, subnormal, near overflow)."""
    x = RNG.standard_normal((count, *shape)).astype(np.float32)
    flat = x.reshape(-1)
    picks = RNG.choice(flat.size, size=max(1, flat.size // rarity), replace=False)
    flat[picks] = RNG.choice(SPECIALS, size=picks.size)
    return x


VARIABLES = {
    "f1": _weights(9, 5, 3, 3), "b1": _weights(1, 9),      # 9 channels: a 4-channel tile leaves 1
    "f2": _weights(13, 5, 3, 3), "b2": _weights(1, 13),    # stride 2 in both axes
    "f3": _weights(12, 1, 3, 3), "b3": _weights(1, 12),    # depthwise, several rows per tile
    "f4": _weights(12, 1, 3, 3),                           # depthwise, stride 2 (two loads and a shuffle)
    "f5": _weights(20, 5, 1, 1), "b5": _weights(1, 20),    # 1x1, channel blocks with empty lanes
    "f6": _weights(6, 5, 3, 2),                            # dilation 2, asymmetric kernel
    "f7": _weights(18, 4, 3, 3), "b7": _weights(1, 18),   # grouped: 3 groups of 6
    "f9": _weights(10, 64, 1, 1), "b9": _weights(1, 10),  # 1x1 over 64 16x16 planes (1 KiB apart): skewed copy
    "f10": _weights(12, 32, 3, 1),                        # 2 groups of 32 channels, 20x16 padded planes: skewed
    "f11": _weights(12, 1, 2, 3),                         # depthwise, width stride 2, even left padding, dilation 3
    "f12": _weights(4, 32, 1, 1), "b12": _weights(1, 4),  # 2 groups, width stride 2, no padding, skewed planes
    "f13": _weights(5, 96, 3, 3), "b13": _weights(1, 5),  # 96 channels' rows overflow L1: passes over channels
    "f14": _weights(8, 64, 1, 1), "b14": _weights(1, 8),  # 1x1 stride 2: across columns on the phase-split copy
    "f15": _weights(11, 64, 3, 3), "b15": _weights(1, 11),  # 64 x 3 x 3 terms: 6-channel wide tiles, 5 left
    "f16": _weights(20, 24, 3, 3), "b16": _weights(1, 20),  # 2x3 outputs: whole planes, a channel-block remainder
    "f17": _weights(12, 24, 3, 3),                          # 4x4 -> 2x2 stride 2 (ResNet-18's l4_0_conv1 shape)
    "f18": _weights(10, 24, 1, 1),                          # 1x1 over 2x3 planes: no tap skipped
    "f20": _weights(128, 128, 3, 3), "b20": _weights(1, 128),  # 576 KiB of weights over 2x2: prefetched
    "f21": _weights(10, 12, 3, 3), "b21": _weights(1, 10),  # 2 groups of 5 over 2x3 planes, dilation 2
    "f22": _weights(12, 16, 3, 3), "b22": _weights(1, 12),  # 4x4 outputs: bands of 3 rows and 1 row
    "f23": _weights(9, 16, 3, 3),                           # 8x8 -> 4x4, stride 2 (ResNet-18's l3_0_conv1 shape)
}
OUTPUTS = [f"c{i}" for i in range(1, 24)]
BODY = """
    x = external<scalar>(shape = [1, 5, 13, 19]);
    u = external<scalar>(shape = [1, 12, 21, 34]);
    v = external<scalar>(shape = [1, 64, 16, 16]);
    z = external<scalar>(shape = [1, 96, 6, 16]);
    w = external<scalar>(shape = [1, 64, 5, 20]);
    s = external<scalar>(shape = [1, 24, 2, 3]);
    t = external<scalar>(shape = [1, 24, 4, 4]);
    r = external<scalar>(shape = [1, 128, 2, 2]);
    q = external<scalar>(shape = [1, 16, 4, 4]);
    o = external<scalar>(shape = [1, 16, 8, 8]);
    f1 = variable<scalar>(shape = [9, 5, 3, 3], label = 'f1');
    b1 = variable<scalar>(shape = [1, 9], label = 'b1');
    f2 = variable<scalar>(shape = [13, 5, 3, 3], label = 'f2');
    b2 = variable<scalar>(shape = [1, 13], label = 'b2');
    f3 = variable<scalar>(shape = [12, 1, 3, 3], label = 'f3');
    b3 = variable<scalar>(shape = [1, 12], label = 'b3');
    f4 = variable<scalar>(shape = [12, 1, 3, 3], label = 'f4');
    f5 = variable<scalar>(shape = [20, 5, 1, 1], label = 'f5');
    b5 = variable<scalar>(shape = [1, 20], label = 'b5');
    f6 = variable<scalar>(shape = [6, 5, 3, 2], label = 'f6');
    f7 = variable<scalar>(shape = [18, 4, 3, 3], label = 'f7');
    b7 = variable<scalar>(shape = [1, 18], label = 'b7');
    f9 = variable<scalar>(shape = [10, 64, 1, 1], label = 'f9');
    b9 = variable<scalar>(shape = [1, 10], label = 'b9');
    f10 = variable<scalar>(shape = [12, 32, 3, 1], label = 'f10');
    f11 = variable<scalar>(shape = [12, 1, 2, 3], label = 'f11');
    f12 = variable<scalar>(shape = [4, 32, 1, 1], label = 'f12');
    b12 = variable<scalar>(shape = [1, 4], label = 'b12');
    f13 = variable<scalar>(shape = [5, 96, 3, 3], label = 'f13');
    b13 = variable<scalar>(shape = [1, 5], label = 'b13');
    f14 = variable<scalar>(shape = [8, 64, 1, 1], label = 'f14');
    b14 = variable<scalar>(shape = [1, 8], label = 'b14');
    f15 = variable<scalar>(shape = [11, 64, 3, 3], label = 'f15');
    b15 = variable<scalar>(shape = [1, 11], label = 'b15');
    f16 = variable<scalar>(shape = [20, 24, 3, 3], label = 'f16');
    b16 = variable<scalar>(shape = [1, 20], label = 'b16');
    f17 = variable<scalar>(shape = [12, 24, 3, 3], label = 'f17');
    f18 = variable<scalar>(shape = [10, 24, 1, 1], label = 'f18');
    f20 = variable<scalar>(shape = [128, 128, 3, 3], label = 'f20');
    b20 = variable<scalar>(shape = [1, 128], label = 'b20');
    f21 = variable<scalar>(shape = [10, 12, 3, 3], label = 'f21');
    b21 = variable<scalar>(shape = [1, 10], label = 'b21');
    f22 = variable<scalar>(shape = [12, 16, 3, 3], label = 'f22');
    b22 = variable<scalar>(shape = [1, 12], label = 'b22');
    f23 = variable<scalar>(shape = [9, 16, 3, 3], label = 'f23');
    c1 = conv(x, f1, b1, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c2 = conv(x, f2, b2, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], groups = 1);
    c3 = conv(u, f3, b3, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 0);
    c4 = conv(u, f4, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], groups = 0);
    c5 = conv(x, f5, b5, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c6 = conv(x, f6, 0.25, border = 'constant', padding = [(2, 2), (1, 1)], stride = [1, 1], dilation = [2, 2], groups = 1);
    c7 = conv(u, f7, b7, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 2], dilation = [1, 1], groups = 3);
    c8 = conv(u, f4, 0.0, border = 'replicate', padding = [(0, 1), (0, 1)], stride = [2, 2], dilation = [1, 1], groups = 0);
    c9 = conv(v, f9, b9, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c10 = conv(v, f10, 0.0, border = 'constant', padding = [(2, 2), (0, 0)], stride = [1, 1], dilation = [2, 1], groups = 2);
    c11 = conv(u, f11, -0.5, border = 'constant', padding = [(0, 0), (2, 1)], stride = [1, 2], dilation = [1, 3], groups = 0);
    c12 = conv(v, f12, b12, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 2], dilation = [1, 1], groups = 2);
    c13 = conv(z, f13, b13, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c14 = conv(v, f14, b14, border = 'constant', padding = [(0, 0), (0, 0)], stride = [2, 2], dilation = [1, 1], groups = 1);
    c15 = conv(w, f15, b15, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c16 = conv(s, f16, b16, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c17 = conv(t, f17, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], groups = 1);
    c18 = conv(s, f18, 0.5, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c19 = conv(s, f16, b16, border = 'replicate', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c20 = conv(r, f20, b20, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c21 = conv(s, f21, b21, border = 'constant', padding = [(2, 2), (2, 2)], stride = [1, 1], dilation = [2, 2], groups = 2);
    c22 = conv(q, f22, b22, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    c23 = conv(o, f23, -1.5, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], groups = 1);
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = H.single_item(tmp_path_factory.mktemp("tiles"), BODY, VARIABLES, inputs=["x", "u", "v", "z", "w", "s", "t", "r", "q", "o"],
                           outputs=OUTPUTS)
    inputs = {"x": _data((1, 5, 13, 19)), "u": _data((1, 12, 21, 34)), "v": _data((1, 64, 16, 16)), "z": _data((1, 96, 6, 16)),
              "w": _data((1, 64, 5, 20)), "s": _data((1, 24, 2, 3)), "t": _data((1, 24, 4, 4), rarity=200),  # most outputs finite: a reordering shows
              "r": _data((1, 128, 2, 2)), "q": _data((1, 16, 4, 4), rarity=200), "o": _data((1, 16, 8, 8))}
    expected = H.reference(folder / "CPU0.nnef", inputs, VARIABLES, OUTPUTS)
    return folder, inputs, expected


def _generate(case, tmp_path, lanes: int):
    folder, _, _ = case
    code = tmp_path / "code"
    H.generate(folder, folder, code, lanes, folder)
    return code, code / "CPU0" / "nnef_item_CPU0.c"


@pytest.mark.parametrize("lanes", H.lanes_available())
def test_tiles_with_remainders_bit_identical(case, lanes, tmp_path):
    folder, inputs, expected = case
    code, item = _generate(case, tmp_path, lanes)
    text = item.read_text()
    # the paths this test means to exercise are the ones generated (the shapes were chosen for 4 and 8
    # lanes; at 16, AVX-512's, other tiles fit them and only the bits are compared)
    if lanes <= 8:
        assert "output rows times" in text and "nnef_vload_even(" in text and "output channels in blocks of" in text
        assert re.search(r"1 output channels times [2-9] output rows", text), "no multi-row depthwise tile"
        skewed = text.count("1 rows below each channel plane against cache-set aliasing")
        assert skewed == 4, "c9, c10, c12, c14 not skewed"
        # stride-2 columns from the phase-split copy: odd (c4) and even (c11) left padding, none (c12); c14, a
        # 1x1 kernel over 8 output channels, across columns only without the 3x3 kernels' penalty
        for name in ("c4", "c11", "c12", "c14"):
            start = text.index(f"static void nnef_op_{name}(")
            assert "phase split" in text[start:text.index("\n}\n", start)], name
            assert "each element written once" in text[start:text.index("\n}\n", start)], name
        assert "nnef_vload(xr0 + x0 + 0 + xj)" in text
        start = text.index("static void nnef_op_c13(")
        assert re.search(r"input channels in [2-9] passes of", text[start:text.index("\n}\n", start)]), "c13 in one pass"
        # wide tiles (12 accumulators) over 64 x 3 x 3 terms: c15's 11 channels as 6 + 5, rows of 2 vectors and
        # a remainder vector
        start = text.index("static void nnef_op_c15(")
        assert "6 output channels times 1 output rows times 2 vectors" in text[start:text.index("\n}\n", start)]
        # whole output planes in one tile (c16-c18, c20), the taps written out with the positions they reach, weights
        # of 512 KiB or more prefetched ahead (c20); not with a border that reads real values in the padding (c19)
        for name, total in (("c16", 6), ("c17", 4), ("c18", 6), ("c19", None), ("c20", 4), ("c21", 2 * 3)):
            start = text.index(f"static void nnef_op_{name}(")
            body = text[start:text.index("\n}\n", start)]
            assert (f"times all {total} output positions" in body) == (total is not None), name
            assert ("NNEF_PREFETCH(wc + " in body) == (name == "c20"), name
        start = text.index("static void nnef_op_c17(")
        body = text[start:text.index("\n}\n", start)]
        # the 25 of 36 (tap, position) pairs inside the input, per channel block; no padded copy
        assert body.count("nnef_vset1(xc[") == 25 * body.count("const float *const wb =") > 0
        assert "scratch" not in body.split("{", 1)[0], "c17 reads its input without a padded copy"
        # 4x4 planes in bands of 3 output rows and 1 row, 1 channel vector (with 4 lanes a row is a whole vector:
        # across output columns)
        for name in ("c22", "c23") if lanes == 8 else ():
            start = text.index(f"static void nnef_op_{name}(")
            body = text[start:text.index("\n}\n", start)]
            assert f"blocks of {lanes} (1 vectors) times 3 output rows of 4 positions" in body, name
            assert body.count("float t[12][") == body.count("float t[4][") > 0, name
    actual = H.run(H.build(code, lanes), inputs, tmp_path, OUTPUTS)
    H.assert_bit_identical(actual, expected, f"conv tiles (lanes {lanes})")


def test_tiles_portable_build_bit_identical(case, tmp_path):
    """NNEF_PORTABLE: plain C99 lanes (the stride-2 loads element by element), the same bits."""
    folder, inputs, expected = case
    code, _ = _generate(case, tmp_path, 4)
    actual = H.run(H.build(code, 4, defines=["NNEF_PORTABLE"]), inputs, tmp_path, OUTPUTS)
    H.assert_bit_identical(actual, expected, "conv tiles portable")


@pytest.mark.parametrize("name, loop, planted", [
    ("c1", r"for \(int c = 0; c < 5; \+\+c\)", "for (int c = 4; c >= 0; --c)"),
    ("c11", r"for \(int j = 0; j < 3; \+\+j\)", "for (int j = 2; j >= 0; --j)"),  # phase-split copy
    ("c14", r"for \(int c = 0; c < 64; \+\+c\)", "for (int c = 63; c >= 0; --c)"),  # 1x1, phase-split copy
    ("c15", r"for \(int c = 0; c < 64; \+\+c\)", "for (int c = 63; c >= 0; --c)"),  # 12-accumulator tiles
    ("c16", r"for \(int c = 0; c < 24; \+\+c\)", "for (int c = 23; c >= 0; --c)"),  # whole planes, taps written out
    ("c17", r"for \(int c = 0; c < 24; \+\+c\)", "for (int c = 23; c >= 0; --c)"),  # whole planes, stride 2
    ("c22", r"for \(int c = 0; c < 16; \+\+c\)", "for (int c = 15; c >= 0; --c)"),  # bands of rows
])
def test_planted_reordering_is_caught(case, tmp_path, name, loop, planted):
    """One tiled kernel with its input channels (c1) or kernel columns (c11, stride 2 from the
    phase-split copy) summed in decreasing order: same terms, another order, so other
    roundings; the 0-ULP comparison must see it."""
    folder, inputs, expected = case
    lanes = H.lanes_available()[-1]
    code, item = _generate(case, tmp_path, lanes)
    text = item.read_text()
    start = text.index(f"static void nnef_op_{name}(")
    end = text.index("\n}\n", start)
    body, count = re.subn(loop, planted, text[start:end])
    assert count >= 1, "the planted change did not apply"
    item.write_text(text[:start] + body + text[end:])
    actual = H.run(H.build(code, lanes), inputs, tmp_path, OUTPUTS)
    with pytest.raises(AssertionError):
        H.assert_bit_identical({name: actual[name]}, {name: expected[name]}, "planted reordering")
    others = [o for o in OUTPUTS if o != name]
    H.assert_bit_identical({o: actual[o] for o in others}, {o: expected[o] for o in others}, "others")


def test_tile_choice_stays_within_registers_and_covers_remainders():
    for channels, vectors, rows, loads in [(9, 3, 13, 1), (64, 4, 32, 1), (1, 2, 16, 2), (128, 2, 16, 1), (1, 1, 7, 1)]:
        r, t, q, cost = positions_tile(channels, vectors, rows, loads)
        assert 1 <= r * t * q <= MAX_ACCUMULATORS and r <= channels and t <= rows and q <= vectors
        # the cost counts every output: never below the arithmetic bound of the whole layer
        assert cost >= channels * rows * vectors / 2
    for channels, positions in [(20, 95), (512, 4), (6, 784)]:
        vb, p, cost = channels_tile(channels, 8, positions)
        assert 1 <= vb * p <= MAX_CHANNEL_ACCUMULATORS and p <= positions
        assert cost >= -(-channels // 8) * positions / 2
    # 12 accumulators only as 6 channels x 2 vectors of a row over 64 x 3 x 3 terms or more
    assert positions_tile(64, 2, 16, 1, 64 * 9)[:3] == (6, 1, 2) and positions_tile(64, 2, 16, 1, 32 * 9)[:3] == (4, 1, 2)
    assert positions_tile(128, 2, 16, 1, 64 * 9)[:3] == (6, 1, 2) and positions_tile(64, 4, 32, 1, 64 * 9)[:3] == (6, 1, 2)
    for channels, vectors, rows in [(128, 1, 8), (5, 2, 6), (64, 2, 16)]:
        r, t, q, _ = positions_tile(channels, vectors, rows, 1, 96 * 9 if channels != 64 else 63 * 9)
        assert r * t * q <= MAX_ACCUMULATORS
    assert WIDE_ACCUMULATORS == 12
    # whole planes: every position in the tile (the weights read once), none past 12 accumulators
    assert MAX_CHANNEL_ACCUMULATORS == 12  # conv's bands of rows: 12 // 4 = 3 rows of a 4x4 plane
    assert channels_tile(512, 8, 4, whole=True)[:2] == (2, 4) and channels_tile(20, 8, 6, whole=True)[:2] == (1, 6)
    assert channels_tile(20, 8, 6)[:2] == (3, 4) and channels_tile(64, 8, 13, whole=True)[0] == 0
    assert tile_cycles(1, 1) == 3 and tile_cycles(4, 2) == 4 and tile_cycles(0, 5) == 0
    # the empirical phase-split penalty: kernels of 2+ columns only (a 1-column kernel reads one phase)
    assert phase_split_factor(1) == 1 and phase_split_factor(3) == phase_split_factor(7) == PHASE_SPLIT_FACTOR > 1


def test_plane_skew_breaks_power_of_two_plane_distances():
    """Planes 1 KiB (16x16) or 4 KiB (32x32) apart whose tile lines overflow the 8 ways of the
    sets they fall in get rows that make the distance no multiple of 256 bytes; planes that do
    not alias, or whose lines fit (few channels), are left as they are."""
    assert plane_skew(128, 16, 16, 1) == 1 and plane_skew(32, 32, 32, 1) == 1 and plane_skew(256, 8, 8, 2) == 1
    assert plane_skew(64, 18, 18, 3) == 0 and plane_skew(32, 16, 16, 1) == 0 and plane_skew(16, 6, 6, 3) == 0
    assert plane_skew(4, 32, 32, 1) == 0 and plane_skew(5, 32, 32, 1) == 1  # 1 set: 4 x 2 lines fit, 5 x 2 do not
    for cg, hp, wp, rows in [(64, 16, 16, 1), (64, 12, 16, 3), (128, 4, 32, 1)]:
        e = plane_skew(cg, hp, wp, rows)
        assert e and ((hp + e) * wp * 4) % 256


def test_channel_chunk_only_where_rows_overflow_l1():
    """The plain CNN's 64-channel 32x32 layer (3 rows of 34 floats: 9 lines a channel) in 2
    passes, its 128-channel 16x16 one in 4; layers whose rows fit, or rows ending in a shifted
    vector, in one."""
    assert channel_chunk(64, 3, 34, 8, 32) == 32 and channel_chunk(128, 3, 18, 8, 16) == 32
    assert channel_chunk(32, 3, 66, 8, 64) == 32 and channel_chunk(64, 3, 18, 8, 16) == 64
    assert channel_chunk(128, 3, 18, 8, 12) == 128
