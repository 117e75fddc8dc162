"""Pooling register tiles (kernels/pool.py) and the plane-by-plane padded copies (kernels/padding.py), 0 ULP.

A pool's outputs are computed in tiles of up to 8 independent output vectors (several vectors of
a row times several rows) whose running maxima or sums interleave tap by tap; the shapes here
leave every remainder: rows that do not fill the last tile, vectors of a row past the last whole
tile (a row of 9 vectors), scalar columns past the last vector, rows shorter than a vector (one
partial vector at 16 lanes, its lanes past the row never stored), a pool with no loop axis, stride 2
(two loads and a shuffle), `ignore` (-inf copy) and `constant` (+0 copy) borders, divisor tables.
The padded copies write each plane's border rows, each row's border columns and the row itself
once (pools, pad, convolutions; the phase-split copy of stride-2 convolutions likewise). Inputs
carry NaN, ±inf, subnormals and many signed zeros (ties a running maximum must break by taking
the first). Planted reorderings (the window columns of a tiled max pool and of a tiled average
pool taken in decreasing order) must be caught.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.codegen import cghelpers as H

RNG = np.random.default_rng(1414)
SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-40, 3e38, -3e38], np.float32)


def _data(shape: tuple[int, ...], count: int = 2, zeros: float = 0.0) -> np.ndarray:
    x = RNG.standard_normal((count, *shape)).astype(np.float32)
    flat = x.reshape(-1)
    picks = RNG.choice(flat.size, size=flat.size // 40, replace=False)
    flat[picks] = RNG.choice(SPECIALS, size=picks.size)
    if zeros:   # signed zeros: a max pool window of +0 and -0 keeps the first
        picks = RNG.choice(flat.size, size=int(flat.size * zeros), replace=False)
        flat[picks] = RNG.choice(np.array([0.0, -0.0], np.float32), size=picks.size)
    return x


SHAPES = {"x": (1, 5, 13, 19), "u": (1, 12, 21, 34), "s": (1, 2, 5, 75), "w": (1, 1, 45), "m": (1, 3, 18, 33),
          "r": (1, 6, 8, 8)}
OUTPUTS = [f"p{i}" for i in range(1, 10)] + ["q1", "q2", "q3"]
BODY = """
    x = external<scalar>(shape = [1, 5, 13, 19]);
    u = external<scalar>(shape = [1, 12, 21, 34]);
    s = external<scalar>(shape = [1, 2, 5, 75]);
    w = external<scalar>(shape = [1, 1, 45]);
    m = external<scalar>(shape = [1, 3, 18, 33]);
    p1 = max_pool(u, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    p2 = avg_pool(x, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
    p3 = box(u, size = [1, 1, 2, 2], border = 'constant', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1], normalize = false);
    p4 = max_pool(x, size = [1, 1, 2, 2], border = 'constant', padding = [(0, 0), (0, 0), (0, 0), (0, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    p5 = avg_pool(s, size = [1, 1, 3, 3], border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
    p6 = max_pool(w, size = [1, 1, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1)], stride = [1, 1, 1], dilation = [1, 1, 1]);
    p7 = max_pool(m, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
    p8 = pad(x, padding = [(0, 0), (0, 0), (2, 1), (3, 9)], border = 'constant', value = 1.5);
    p9 = avg_pool(m, size = [1, 1, 2, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 0), (0, 2)], stride = [1, 1, 1, 2], dilation = [1, 1, 1, 1]);
    r = external<scalar>(shape = [1, 6, 8, 8]);
    q1 = max_pool(r, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
    q2 = max_pool(r, size = [1, 1, 2, 2], border = 'constant', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
    q3 = avg_pool(r, size = [1, 1, 3, 3], border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = H.single_item(tmp_path_factory.mktemp("pools"), BODY, {}, inputs=list(SHAPES), outputs=OUTPUTS)
    inputs = {name: _data(shape, zeros=0.4 if name == "m" else 0.0) for name, shape in SHAPES.items()}
    expected = H.reference(folder / "CPU0.nnef", inputs, {}, OUTPUTS)
    return folder, inputs, expected


def _generate(case, tmp_path, lanes: int):
    folder, _, _ = case
    code = tmp_path / "code"
    H.generate(folder, folder, code, lanes, folder)
    return code, code / "CPU0" / "nnef_item_CPU0.c"


def _function(text: str, name: str) -> str:
    start = text.index(f"static void nnef_op_{name}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("lanes", H.lanes_available())
def test_pool_tiles_bit_identical(case, lanes, tmp_path):
    folder, inputs, expected = case
    code, item = _generate(case, tmp_path, lanes)
    text = item.read_text()
    # the tiles and copies this test means to exercise are the ones generated (shapes chosen for 4 and 8
    # lanes; at 16, AVX-512's, other tiles fit them and only the bits are compared)
    if lanes <= 8:
        assert "acc7 = nnef_vmax_update(" in _function(text, "p1"), "p1 not in tiles of 8"
        assert "acc1 = nnef_vadd(" in _function(text, "p2") and "acc1 = nnef_vadd(" in _function(text, "p5")
        for name in ("p1", "p2", "p5", "p7", "p8"):
            assert "each element written once" in _function(text, name), name
    if lanes == 8:
        assert "nnef_vload_even(" in _function(text, "p1")
        assert "for (int y3 = 64; y3 < 72; y3 += 8)" in _function(text, "p5"), "no vector past the last tile"
    # rows of 8 outputs: whole vectors at 4 and 8 lanes, one partial vector each at 16 (the padded copy
    # has the slack its last row reads); without padding the last row would read past the input: one
    # output at a time
    for name in ("q1", "q3"):
        assert ("one partial vector, 8 of its lanes stored" in _function(text, name)) == (lanes == 16), name
    assert "partial vector" not in _function(text, "q2")
    actual = H.run(H.build(code, lanes), inputs, tmp_path, OUTPUTS)
    H.assert_bit_identical(actual, expected, f"pool tiles (lanes {lanes})")


def test_pool_tiles_portable_build_bit_identical(case, tmp_path):
    """NNEF_PORTABLE: plain C99 lanes, the same bits."""
    folder, inputs, expected = case
    code, _ = _generate(case, tmp_path, 4)
    actual = H.run(H.build(code, 4, defines=["NNEF_PORTABLE"]), inputs, tmp_path, OUTPUTS)
    H.assert_bit_identical(actual, expected, "pool tiles portable")


def test_planted_pool_reordering_is_caught(case, tmp_path):
    """A tiled max pool (p7: ties of +0 and -0 keep the first) and a tiled average pool (p2: another
    order of additions, other roundings) with their window columns taken in decreasing order: the
    0-ULP comparison must see each; the other outputs stay identical."""
    folder, inputs, expected = case
    lanes = H.lanes_available()[-1]
    code, item = _generate(case, tmp_path, lanes)
    text = item.read_text()
    planted_names = ["p7", "p2"]
    for name in planted_names:
        body = _function(text, name)
        planted, count = re.subn(r"for \(int t3 = 0; t3 < 3; \+\+t3\)", "for (int t3 = 2; t3 >= 0; --t3)", body)
        assert count >= 2, f"the planted change did not apply to the tiles of {name}"
        text = text.replace(body, planted)
    item.write_text(text)
    actual = H.run(H.build(code, lanes), inputs, tmp_path, OUTPUTS)
    for name in planted_names:
        with pytest.raises(AssertionError):
            H.assert_bit_identical({name: actual[name]}, {name: expected[name]}, "planted reordering")
    others = [o for o in OUTPUTS if o not in planted_names]
    H.assert_bit_identical({o: actual[o] for o in others}, {o: expected[o] for o in others}, "others")
