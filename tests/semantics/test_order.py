"""The documented evaluation order, stated as plain scalar loops, must give the kernels'
results bit for bit. These loops are what the C and CUDA generators mirror: one float32
operation at a time, in exactly this order (compile with -ffp-contract=off).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, one, rand, run, same_bits

from pipeline.semantics import transcendental

RNG = np.random.default_rng(77)
ZERO = F32(0.0)


def _inside(i: int, n: int) -> bool:
    return 0 <= i < n


def _source(i: int, n: int, border: str) -> int | None:
    """Input index read at position i (None: padding that is skipped / constant 0)."""
    if 0 <= i < n:
        return i
    if border in ("constant", "ignore"):
        return None
    if border == "replicate":
        return min(max(i, 0), n - 1)
    if border == "reflect":
        period = 2 * (n - 1)
        m = i % period if period else 0
        return m if m < n else period - m
    period = 2 * n  # reflect-even
    m = i % period
    return m if m < n else period - 1 - m


def scalar_conv2d(x, w, b, padding, stride, dilation, groups, border):
    n_batch, channels, height, width = x.shape
    outs, cg, kh, kw = w.shape
    groups = groups or channels
    og = outs // groups
    (pt, pb), (pl, pr) = padding
    oh = (height + pt + pb - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (width + pl + pr - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.empty((n_batch, outs, oh, ow), F32)
    for n, o, i, j in itertools.product(range(n_batch), range(outs), range(oh), range(ow)):
        acc = ZERO
        for c in range(cg):
            for a in range(kh):
                for e in range(kw):
                    yi = _source(i * stride[0] + a * dilation[0] - pt, height, border)
                    xi = _source(j * stride[1] + e * dilation[1] - pl, width, border)
                    if yi is None or xi is None:
                        continue  # padded tap: skipped
                    acc = acc + w[o, c, a, e] * x[n, (o // og) * cg + c, yi, xi]
        out[n, o, i, j] = acc + b[0, o]
    return out


CONV_ORDER_CASES = [
    ((1, 3, 6, 6), (4, 3, 3, 3), [(1, 1), (1, 1)], [1, 1], [1, 1], 1, "constant"),
    ((2, 4, 7, 6), (6, 2, 3, 2), [(0, 2), (1, 0)], [2, 1], [1, 2], 2, "ignore"),
    ((1, 3, 5, 5), (6, 1, 3, 3), [(2, 1), (1, 2)], [1, 2], [1, 1], 0, "replicate"),
    ((1, 2, 5, 6), (2, 2, 3, 3), [(2, 2), (3, 1)], [1, 1], [1, 1], 1, "reflect"),
    ((1, 2, 4, 5), (2, 2, 2, 3), [(3, 1), (1, 4)], [1, 1], [1, 1], 1, "reflect-even"),
]


@pytest.mark.parametrize("case", CONV_ORDER_CASES, ids=[c[-1] for c in CONV_ORDER_CASES])
def test_conv_order(case):
    xs, ws, padding, stride, dilation, groups, border = case
    x, w = rand(RNG, *xs), rand(RNG, *ws)
    b = rand(RNG, 1, ws[0])
    ours = one("conv", {"input": x, "filter": w, "bias": b}, border=border, padding=padding,
               stride=stride, dilation=dilation, groups=groups)
    assert same_bits(ours, scalar_conv2d(x, w, b, padding, stride, dilation, groups, border))


def scalar_deconv2d(x, w, b, padding, stride, dilation, groups, out_hw):
    n_batch, channels, height, width = x.shape
    _, og, kh, kw = w.shape
    cg = channels // groups
    (pt, _), (pl, _) = padding
    out = np.empty((n_batch, og * groups) + tuple(out_hw), F32)
    for n, o, y0, y1 in itertools.product(range(n_batch), range(og * groups), range(out_hw[0]), range(out_hw[1])):
        g, j = divmod(o, og)
        acc = ZERO
        for c in range(cg):
            for a in range(kh):
                for e in range(kw):
                    # input position i with i*s + a*d - p = y
                    num0 = y0 + pt - a * dilation[0]
                    num1 = y1 + pl - e * dilation[1]
                    if num0 % stride[0] or num1 % stride[1]:
                        continue
                    i0, i1 = num0 // stride[0], num1 // stride[1]
                    if not (_inside(i0, height) and _inside(i1, width)):
                        continue
                    acc = acc + w[g * cg + c, j, a, e] * x[n, g * cg + c, i0, i1]
        out[n, o, y0, y1] = acc + b[0, o]
    return out


def test_deconv_order():
    x, w = rand(RNG, 1, 4, 3, 4), rand(RNG, 4, 2, 3, 2)
    b = rand(RNG, 1, 4)
    padding, stride, dilation = [(1, 0), (0, 1)], [2, 1], [1, 2]
    ours = one("deconv", {"input": x, "filter": w, "bias": b}, border="constant", padding=padding,
               stride=stride, dilation=dilation, groups=2, output_shape=[1, 4, 7, 6])
    assert same_bits(ours, scalar_deconv2d(x, w, b, padding, stride, dilation, 2, (7, 6)))


def test_linear_and_matmul_order():
    x, w, b = rand(RNG, 3, 17), rand(RNG, 5, 17), rand(RNG, 1, 5)
    expected = np.empty((3, 5), F32)
    for n, o in itertools.product(range(3), range(5)):
        acc = ZERO
        for k in range(17):
            acc = acc + x[n, k] * w[o, k]
        expected[n, o] = acc + b[0, o]
    assert same_bits(one("linear", {"input": x, "filter": w, "bias": b}), expected)

    a, bm = rand(RNG, 2, 9, 4), rand(RNG, 2, 3, 9)  # C = A^T B^T
    expected = np.empty((2, 4, 3), F32)
    for z, m, n in itertools.product(range(2), range(4), range(3)):
        acc = ZERO
        for k in range(9):
            acc = acc + a[z, k, m] * bm[z, n, k]
        expected[z, m, n] = acc
    assert same_bits(one("matmul", {"A": a, "B": bm}, transposeA=True, transposeB=True), expected)


def test_large_linear_takes_the_per_k_path(monkeypatch):
    from pipeline.semantics import linear_algebra

    x, w = rand(RNG, 4, 33), rand(RNG, 6, 33)
    first = one("linear", {"input": x, "filter": w, "bias": 0.0})
    monkeypatch.setattr(linear_algebra, "_ALL_PRODUCTS_LIMIT", 0)
    assert same_bits(first, one("linear", {"input": x, "filter": w, "bias": 0.0}))


@pytest.mark.parametrize("border", ["constant", "ignore", "replicate"])
def test_avg_pool_and_max_pool_order(border):
    x = rand(RNG, 1, 2, 5, 6)
    x[0, 1, 2, 3] = np.nan
    size, padding, stride, dilation = [1, 1, 3, 2], [(0, 0), (0, 0), (1, 2), (0, 1)], [1, 1, 2, 1], [1, 1, 1, 2]
    attrs = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    avg = one("avg_pool", {"input": x}, **attrs)
    mx = one("max_pool", {"input": x}, **attrs)
    exp_avg = np.empty_like(avg)
    exp_max = np.empty_like(mx)
    for pos in np.ndindex(*avg.shape):
        acc, count, m = ZERO, 0, F32(-np.inf)
        for tap in itertools.product(*(range(k) for k in size)):
            idx = [pos[a] * stride[a] + tap[a] * dilation[a] - padding[a][0] for a in range(4)]
            src = [_source(i, x.shape[a], border) for a, i in enumerate(idx)]
            if None in src:
                if border == "constant":
                    t = ZERO  # a real tap of value +0 (counts, and competes in max)
                else:
                    continue  # 'ignore': no tap
            else:
                t = x[tuple(src)]
            acc = acc + t
            count += 1
            if t > m or (t != t and m == m):
                m = t
        divisor = F32(np.prod(size)) if border != "ignore" else F32(max(count, 1))
        exp_avg[pos] = acc / divisor
        exp_max[pos] = m
    assert same_bits(avg, exp_avg)
    assert same_bits(mx, exp_max)


def test_reduce_order_multi_axis():
    x = rand(RNG, 3, 4, 5, 2)
    total = one("sum_reduce", {"input": x}, axes=[3, 1], normalize=False)
    mean = one("mean_reduce", {"input": x}, axes=[1, 3])
    mx = one("max_reduce", {"input": x}, axes=[1, 3])
    am = one("argmax_reduce", {"input": x}, axes=[1, 3])
    for a, c in itertools.product(range(3), range(5)):
        acc, m, best = ZERO, F32(-np.inf), 0
        for r, (b, d) in enumerate(itertools.product(range(4), range(2))):  # row-major over axes 1, 3
            t = x[a, b, c, d]
            acc = acc + t
            if t > m or (t != t and m == m):
                m, best = t, r
        assert same_bits(total[a, 0, c, 0], acc)
        assert same_bits(mean[a, 0, c, 0], acc / F32(8))
        assert same_bits(mx[a, 0, c, 0], m) and am[a, 0, c, 0] == best


def test_softmax_order():
    x = rand(RNG, 2, 3, 4, scale=5.0)
    ours = one("softmax", {"x": x}, axes=[1, 2])
    for n in range(2):
        m = F32(-np.inf)
        for i, j in itertools.product(range(3), range(4)):
            m = x[n, i, j] if x[n, i, j] > m else m
        e = transcendental.exp(x[n] - m)
        s = ZERO
        for i, j in itertools.product(range(3), range(4)):
            s = s + e[i, j]
        assert same_bits(ours[n], (e / s).astype(F32))


def test_batch_normalization_order():
    x = rand(RNG, 2, 3, 4, 4)
    mean, var, offset, scale = rand(RNG, 1, 3), np.abs(rand(RNG, 1, 3)), rand(RNG, 1, 3), rand(RNG, 1, 3)
    ours = one("batch_normalization", {"input": x, "mean": mean, "variance": var, "offset": offset, "scale": scale},
               epsilon=1e-5)
    eps = F32(1e-5)
    for n, c, i, j in np.ndindex(*x.shape):
        expected = offset[0, c] + (scale[0, c] * (x[n, c, i, j] - mean[0, c])) / np.sqrt(var[0, c] + eps)
        assert same_bits(ours[n, c, i, j], F32(expected))


def test_local_response_normalization_order():
    x = rand(RNG, 1, 6, 3, 3)
    alpha, beta, bias, size = 1e-2, 0.75, 1.0, [1, 4, 1, 1]  # even size: padding (1, 2) on channels
    ours = one("local_response_normalization", {"input": x}, size=size, alpha=alpha, beta=beta, bias=bias)
    for n, c, i, j in np.ndindex(*x.shape):
        acc = ZERO
        for k in range(4):
            cc = c + k - 1
            if 0 <= cc < 6:
                acc = acc + x[n, cc, i, j] * x[n, cc, i, j]
        sigma = F32(bias) + F32(alpha) * (acc / F32(4))
        expected = x[n, c, i, j] / transcendental.pow(np.asarray(sigma), np.asarray(F32(beta)))
        assert same_bits(ours[n, c, i, j], F32(expected))


def test_l2_normalization_and_moments_order():
    x = rand(RNG, 2, 5)
    ours = one("l2_normalization", {"input": x}, axes=[1], bias=0.0, epsilon=1e-12)
    mean, var = run("moments", {"input": x}, axes=[1])
    for n in range(2):
        acc = ZERO
        for k in range(5):
            acc = acc + x[n, k] * x[n, k]
        sigma = np.sqrt(acc)
        denom = sigma if sigma > F32(1e-12) else F32(1e-12)
        assert same_bits(ours[n], (x[n] / denom).astype(F32))
        s = ZERO
        for k in range(5):
            s = s + x[n, k]
        mu = s / F32(5)
        v = ZERO
        for k in range(5):
            v = v + (x[n, k] - mu) * (x[n, k] - mu)
        assert same_bits(mean[n, 0], mu) and same_bits(var[n, 0], v / F32(5))


def test_add_n_is_a_right_fold():
    a, b, c = rand(RNG, 4), rand(RNG, 4), rand(RNG, 4)
    ours = one("add_n", {"x": [a, b, c]})
    assert same_bits(ours, (a + (b + (c + F32(0.0)))).astype(F32))
