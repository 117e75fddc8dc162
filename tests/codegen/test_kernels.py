"""Every C kernel against the reference semantics, bit for bit, on random shapes and attributes.

Each family is one small graphitem with several independent instructions (so one compile
covers many variants); inputs mix random values with -0, NaN, infinities and subnormals
where the operation's rules for them matter. Both vector widths available on this host
are compiled and compared.
"""

from __future__ import annotations


import numpy as np
import pytest


from tests.codegen import cghelpers as H

RNG = np.random.default_rng(2024)
SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-40, 3e38, -3e38], np.float32)


def data(shape: tuple[int, ...], count: int = 3, specials: bool = True, scale: float = 1.0) -> np.ndarray:
    x = (RNG.standard_normal((count, *shape)) * scale).astype(np.float32)
    if specials:
        flat = x.reshape(-1)
        picks = RNG.choice(flat.size, size=max(1, flat.size // 20), replace=False)
        flat[picks] = RNG.choice(SPECIALS, size=picks.size)
    return x


def weights(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


CASES: dict[str, dict] = {
    "conv": {
        "inputs": {"x": (1, 4, 9, 11), "u": (2, 6, 7, 7), "v": (1, 3, 12)},
        "outputs": ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"],
        "variables": {"f1": weights(6, 4, 3, 3), "b1": weights(1, 6), "f2": weights(10, 2, 3, 2), "b2": weights(1, 10),
                      "f3": weights(6, 1, 3, 3), "f4": weights(5, 6, 1, 1), "f5": weights(7, 3, 4),
                      "f6": np.where(RNG.random((6, 4, 3, 3)) < 0.1, np.inf, weights(6, 4, 3, 3)).astype(np.float32),
                      "f7": weights(20, 4, 5, 5), "b7": weights(1, 20)},
        "body": """
            x = external<scalar>(shape = [1, 4, 9, 11]);
            u = external<scalar>(shape = [2, 6, 7, 7]);
            v = external<scalar>(shape = [1, 3, 12]);
            f1 = variable<scalar>(shape = [6, 4, 3, 3], label = 'f1');
            b1 = variable<scalar>(shape = [1, 6], label = 'b1');
            f2 = variable<scalar>(shape = [10, 2, 3, 2], label = 'f2');
            b2 = variable<scalar>(shape = [1, 10], label = 'b2');
            f3 = variable<scalar>(shape = [6, 1, 3, 3], label = 'f3');
            f4 = variable<scalar>(shape = [5, 6, 1, 1], label = 'f4');
            f5 = variable<scalar>(shape = [7, 3, 4], label = 'f5');
            f6 = variable<scalar>(shape = [6, 4, 3, 3], label = 'f6');
            f7 = variable<scalar>(shape = [20, 4, 5, 5], label = 'f7');
            b7 = variable<scalar>(shape = [1, 20], label = 'b7');
            c1 = conv(x, f1, b1, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
            c2 = conv(x, f2, b2, border = 'ignore', padding = [(2, 0), (0, 3)], stride = [2, 3], dilation = [2, 1], groups = 2);
            c3 = conv(u, f3, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 0);
            c4 = conv(u, f4, 0.5, border = 'constant', padding = [(0, 0), (0, 0)], stride = [2, 2], dilation = [1, 1], groups = 1);
            c5 = conv(v, f5, 0.0, border = 'constant', padding = [(2, 1)], stride = [2], dilation = [1], groups = 1);
            c6 = conv(x, f6, b1, border = 'constant', padding = [(1, 2), (2, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
            c7 = conv(x, f1, b1, border = 'replicate', padding = [(2, 1), (1, 2)], stride = [1, 2], dilation = [1, 1], groups = 1);
            c8 = conv(x, f1, b1, border = 'reflect', padding = [(1, 1), (2, 2)], stride = [2, 1], dilation = [1, 1], groups = 1);
            c9 = conv(x, f1, 0.0, border = 'reflect-even', padding = [(3, 3), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
            c10 = conv(x, f7, b7, border = 'constant', padding = [(2, 2), (2, 2)], stride = [1, 1], dilation = [1, 1], groups = 1);
        """,
    },
    "deconv": {  # issue 15: transposed convolution; strides, pads, output padding, dilation, groups, 1-D, auto
        "inputs": {"x": (1, 4, 5, 6), "u": (2, 6, 4, 4), "v": (1, 3, 7)},
        "outputs": ["d1", "d2", "d3", "d4", "d5", "d6", "d7"],
        "variables": {"f1": weights(4, 3, 3, 3), "b1": weights(1, 3), "f2": weights(4, 2, 3, 2), "b2": weights(1, 4),
                      "f3": weights(6, 1, 3, 3), "f4": weights(3, 5, 4), "f5": weights(4, 2, 3, 3),
                      "f6": np.where(RNG.random((4, 3, 3, 3)) < 0.1, np.inf, weights(4, 3, 3, 3)).astype(np.float32)},
        "body": """
            x = external<scalar>(shape = [1, 4, 5, 6]);
            u = external<scalar>(shape = [2, 6, 4, 4]);
            v = external<scalar>(shape = [1, 3, 7]);
            f1 = variable<scalar>(shape = [4, 3, 3, 3], label = 'f1');
            b1 = variable<scalar>(shape = [1, 3], label = 'b1');
            f2 = variable<scalar>(shape = [4, 2, 3, 2], label = 'f2');
            b2 = variable<scalar>(shape = [1, 4], label = 'b2');
            f3 = variable<scalar>(shape = [6, 1, 3, 3], label = 'f3');
            f4 = variable<scalar>(shape = [3, 5, 4], label = 'f4');
            f5 = variable<scalar>(shape = [4, 2, 3, 3], label = 'f5');
            f6 = variable<scalar>(shape = [4, 3, 3, 3], label = 'f6');
            d1 = deconv(x, f1, b1, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], output_shape = [], groups = 1);
            d2 = deconv(x, f2, b2, border = 'constant', padding = [(0, 1), (2, 0)], stride = [2, 3], dilation = [1, 2], output_shape = [], groups = 2);
            d3 = deconv(u, f3, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], output_shape = [2, 6, 8, 8], groups = 6);
            d4 = deconv(v, f4, 0.25, border = 'constant', padding = [(2, 1)], stride = [3], dilation = [1], output_shape = [], groups = 1);
            d5 = deconv(x, f5, 0.0, border = 'constant', padding = [(0, 1), (0, 1)], stride = [2, 2], dilation = [1, 1], output_shape = [1, 4, 10, 12], groups = 2);
            d6 = deconv(x, f6, b1, border = 'ignore', padding = [(0, 0), (1, 2)], stride = [1, 2], dilation = [2, 1], output_shape = [], groups = 1);
            d7 = deconv(u, f3, 0.0, border = 'constant', padding = [(0, 0), (0, 0)], stride = [3, 1], dilation = [1, 1], output_shape = [], groups = 0);
        """,
    },
    "upsample": {  # issue 15: Resize nearest (integer factors) exports to nearest_upsample
        "inputs": {"x": (1, 3, 4, 5), "v": (2, 2, 3)},
        "outputs": ["n1", "n2", "n3"],
        "variables": {},
        "body": """
            x = external<scalar>(shape = [1, 3, 4, 5]);
            v = external<scalar>(shape = [2, 2, 3]);
            n1 = nearest_upsample(x, factor = [2, 2]);
            n2 = nearest_upsample(x, factor = [3, 1]);
            n3 = nearest_upsample(v, factor = [4]);
        """,
    },
    "multilinear": {  # issue 15: Resize linear exports to multilinear_upsample (half-pixel, align_corners)
        "inputs": {"x": (1, 3, 4, 5), "v": (2, 2, 3), "z": (1, 2, 1, 3)},
        "outputs": ["m1", "m2", "m3", "m4", "m5", "m6"],
        "variables": {},
        "body": """
            x = external<scalar>(shape = [1, 3, 4, 5]);
            v = external<scalar>(shape = [2, 2, 3]);
            z = external<scalar>(shape = [1, 2, 1, 3]);
            m1 = multilinear_upsample(x, factor = [2, 2], method = 'symmetric', border = 'replicate');
            m2 = multilinear_upsample(x, factor = [3, 1], method = 'symmetric', border = 'replicate');
            m3 = multilinear_upsample(v, factor = [4], method = 'symmetric', border = 'replicate');
            m4 = multilinear_upsample(x, factor = [2, 3], method = 'aligned', border = 'replicate');
            m5 = multilinear_upsample(z, factor = [3, 2], method = 'aligned', border = 'constant');
            m6 = multilinear_upsample(z, factor = [2, 5], method = 'symmetric', border = 'replicate');
        """,
    },
    "pool": {
        "inputs": {"x": (1, 3, 10, 13), "w": (2, 5, 6)},
        "outputs": ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"],
        "variables": {},
        "body": """
            x = external<scalar>(shape = [1, 3, 10, 13]);
            w = external<scalar>(shape = [2, 5, 6]);
            p1 = max_pool(x, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
            p2 = max_pool(x, size = [1, 1, 3, 3], border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);
            p3 = avg_pool(x, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
            p4 = avg_pool(x, size = [1, 1, 3, 2], border = 'constant', padding = [(0, 0), (0, 0), (1, 0), (0, 1)], stride = [1, 1, 3, 2], dilation = [1, 1, 1, 2]);
            p5 = box(x, size = [1, 2, 2, 2], border = 'replicate', padding = [(0, 0), (1, 0), (0, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1], normalize = false);
            p6 = max_pool(w, size = [1, 3, 2], border = 'reflect', padding = [(0, 0), (1, 1), (0, 1)], stride = [1, 1, 2], dilation = [1, 1, 1]);
            p7 = avg_pool(w, size = [2, 2, 2], border = 'ignore', padding = [(0, 0), (1, 1), (1, 1)], stride = [1, 2, 2], dilation = [1, 1, 1]);
            p8 = max_pool(x, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
            p9 = avg_pool(x, size = [1, 1, 12, 3], border = 'ignore', padding = [(0, 0), (0, 0), (2, 2), (0, 0)], stride = [1, 1, 1, 3], dilation = [1, 1, 1, 1]);
        """,
    },
    "linalg": {
        "inputs": {"a": (3, 7), "b": (2, 4, 5), "c": (2, 5, 6), "d": (1, 40)},
        "outputs": ["l1", "l2", "l3", "m1", "m2", "m3", "m4"],
        "variables": {"w1": weights(37, 7), "k1": weights(1, 37), "w2": weights(70, 40), "mb": weights(6, 5)},
        "body": """
            a = external<scalar>(shape = [3, 7]);
            b = external<scalar>(shape = [2, 4, 5]);
            c = external<scalar>(shape = [2, 5, 6]);
            d = external<scalar>(shape = [1, 40]);
            w1 = variable<scalar>(shape = [37, 7], label = 'w1');
            k1 = variable<scalar>(shape = [1, 37], label = 'k1');
            w2 = variable<scalar>(shape = [70, 40], label = 'w2');
            mb = variable<scalar>(shape = [6, 5], label = 'mb');
            l1 = linear(a, w1, k1);
            l2 = linear(d, w2, 0.0);
            l3 = linear(a, w1, 1.5);
            m1 = matmul(b, c, transposeA = false, transposeB = false);
            m2 = matmul(c, c, transposeA = true, transposeB = false);
            m3 = matmul(b, b, transposeA = false, transposeB = true);
            m4 = matmul(a, a, transposeA = true, transposeB = false);
        """,
    },
    "elementwise": {
        "inputs": {"x": (2, 3, 5), "y": (2, 3, 5), "s": (2, 3)},
        "outputs": ["e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "e12", "e13", "e14", "e15",
                    "e16", "e17", "e18", "e19", "e20", "e21", "e22", "e23", "e24", "e25", "e26", "e27", "e28"],
        "variables": {"al": weights(1, 3), "mu": weights(1, 3), "va": np.abs(weights(1, 3)), "of": weights(1, 3),
                      "sc": weights(1, 3)},
        "body": """
            x = external<scalar>(shape = [2, 3, 5]);
            y = external<scalar>(shape = [2, 3, 5]);
            s = external<scalar>(shape = [2, 3]);
            al = variable<scalar>(shape = [1, 3], label = 'al');
            mu = variable<scalar>(shape = [1, 3], label = 'mu');
            va = variable<scalar>(shape = [1, 3], label = 'va');
            of = variable<scalar>(shape = [1, 3], label = 'of');
            sc = variable<scalar>(shape = [1, 3], label = 'sc');
            e1 = add(x, y);
            e2 = sub(x, s);
            e3 = mul(x, 2.5);
            e4 = div(x, y);
            e5 = max(x, y);
            e6 = min(s, x);
            e7 = relu(x);
            e8 = clamp(x, -0.5, 0.75);
            e9 = leaky_relu(x, alpha = 0.125);
            e10 = prelu(x, al);
            e11 = elu(x, alpha = 1.0);
            e12 = sigmoid(x);
            e13 = tanh(x);
            e14 = exp(x);
            e15 = log(x);
            e16 = sqrt(x);
            e17 = neg(x);
            e18 = abs(x);
            e19 = batch_normalization(x, mu, va, of, sc, epsilon = 1e-05);
            e20 = softplus(x);
            e21 = pow(x, y);
            e22 = rsqrt(x);
            e23 = round(x);
            e24 = floor(x);
            e25 = ceil(x);
            e26 = sign(x);
            e27 = copy(x);
            e28 = add_n([x, y, x]);
        """,
    },
    "reduce": {
        "inputs": {"x": (2, 5, 3, 7), "z": (3, 10)},
        "outputs": ["r1", "r2", "r3", "r4", "r5", "r6", "s1", "s2"],
        "variables": {},
        "body": """
            x = external<scalar>(shape = [2, 5, 3, 7]);
            z = external<scalar>(shape = [3, 10]);
            r1 = sum_reduce(x, axes = [1, 3], normalize = false);
            r2 = mean_reduce(x, axes = [2, 3]);
            r3 = max_reduce(x, axes = [0, 2]);
            r4 = min_reduce(x, axes = [3]);
            r5 = sum_reduce(x, axes = [0, 1, 2, 3], normalize = true);
            r6 = mean_reduce(z, axes = [0]);
            s1 = softmax(z, axes = [1]);
            s2 = softmax(x, axes = [1, 2]);
        """,
    },
    "shape": {
        "inputs": {"x": (2, 3, 4), "y": (2, 5, 4)},
        "outputs": ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12", "t13"],
        "variables": {"k": weights(2, 3, 4)},
        "body": """
            x = external<scalar>(shape = [2, 3, 4]);
            y = external<scalar>(shape = [2, 5, 4]);
            k = variable<scalar>(shape = [2, 3, 4], label = 'k');
            t1 = concat([x, y, x], axis = 1);
            t2 = transpose(y, axes = [2, 0, 1]);
            t3 = slice(y, axes = [1, 2], begin = [-4, 3], end = [5, 0], stride = [2, -1]);
            t4 = pad(x, padding = [(0, 0), (2, 1), (1, 3)], border = 'reflect', value = 0.0);
            t5 = pad(x, padding = [(1, 0), (0, 2), (1, 1)], border = 'constant', value = -2.5);
            t6 = tile(x, repeats = [1, 2, 3]);
            [t7, t8] = split(y, axis = 1, ratios = [2, 3]);
            t9 = stack([x, k], axis = 1);
            t10 = reshape(x, shape = [6, 4], axis_start = 0, axis_count = -1);
            t11 = unsqueeze(x, axes = [0, 3]);
            t12 = squeeze(t11, axes = [0]);
            t13 = local_response_normalization(y, size = [1, 3, 1], alpha = 0.0001, beta = 0.75, bias = 1.0);
        """,
    },
}


@pytest.fixture(scope="module", params=sorted(CASES))
def family(request, tmp_path_factory):
    name = request.param
    case = CASES[name]
    folder = H.single_item(tmp_path_factory.mktemp(name), case["body"], case["variables"],
                           inputs=list(case["inputs"]), outputs=case["outputs"])
    inputs = {n: data(shape, specials=name not in ("conv", "deconv") or n != "v") for n, shape in case["inputs"].items()}
    if name == "conv":  # a NaN and a -0 in one vector only, to see them propagate through the sums
        inputs["x"][1, 0, 0, 0] = np.nan
    expected = H.reference(folder / "CPU0.nnef", inputs, case["variables"], case["outputs"])
    return name, case, folder, inputs, expected


@pytest.mark.parametrize("lanes", H.lanes_available())
def test_family_bit_identical(family, lanes, tmp_path):
    name, case, folder, inputs, expected = family
    code = tmp_path / "code"
    H.generate(folder, folder, code, lanes, folder)
    binary = H.build(code, lanes)
    actual = H.run(binary, inputs, tmp_path, case["outputs"])
    H.assert_bit_identical(actual, expected, f"{name} (lanes {lanes})")


def test_portable_build_equals_vector_build(family, tmp_path):
    """NNEF_PORTABLE: the same code with plain C99 lanes instead of vector types, same bits."""
    name, case, folder, inputs, expected = family
    code = tmp_path / "code"
    H.generate(folder, folder, code, 4, folder)
    binary = H.build(code, 4, defines=["NNEF_PORTABLE"])
    H.assert_bit_identical(H.run(binary, inputs, tmp_path, case["outputs"]), expected, f"{name} portable")


def test_unsupported_operation_is_codegen_e001(tmp_path):
    from pipeline.codegen.shared.errors import CodegenError

    folder = H.single_item(tmp_path / "u", """
        x = external<scalar>(shape = [1, 4]);
        y = argmax_reduce(x, axes = [1]);
    """, outputs=["y"])
    with pytest.raises(CodegenError) as info:
        H.generate(folder, folder, tmp_path / "code", 4, folder)
    assert info.value.code in ("CODEGEN-E001", "CODEGEN-E002")
    assert info.value.location.file.endswith("CPU0.nnef") and info.value.location.line > 0


def test_unknown_op_names_op_location_and_supported_list(tmp_path):
    from pipeline.codegen.shared.errors import CodegenError

    folder = H.single_item(tmp_path / "u", """
        x = external<scalar>(shape = [1, 1, 4, 4]);
        y = area_downsample(x, factor = [2, 2]);
    """, outputs=["y"])
    with pytest.raises(CodegenError) as info:
        H.generate(folder, folder, tmp_path / "code", 4, folder)
    assert info.value.code == "CODEGEN-E001"
    assert "area_downsample" in info.value.message and "conv" in info.value.message
    assert info.value.location.file.endswith("CPU0.nnef") and info.value.location.line > 0


def test_every_unsupported_operation_is_listed_in_one_error(tmp_path):
    """Issue 15: one CODEGEN-E001 names every operation the C generator lacks, with its line."""
    from pipeline.codegen.shared.errors import CodegenError

    folder = H.single_item(tmp_path / "u", """
        x = external<scalar>(shape = [1, 1, 4, 4]);
        a = area_downsample(x, factor = [2, 2]);
        b = relu(a);
        y = nearest_downsample(b, factor = [2, 2]);
    """, outputs=["y"])
    with pytest.raises(CodegenError) as info:
        H.generate(folder, folder, tmp_path / "code", 4, folder)
    message = info.value.message
    assert info.value.code == "CODEGEN-E001" and "2 operation(s)" in message, message
    assert "'area_downsample' at" in message and "'nearest_downsample' at" in message and "'relu' at" not in message
    assert info.value.location.line == 6  # the first one (line 6 of CPU0.nnef)
