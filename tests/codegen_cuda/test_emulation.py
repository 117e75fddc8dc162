"""Host emulation of generated CUDA items: 0 ULP against the reference semantics, in order and shuffled.

The same .cu the device build compiles is built for the host (g++ -x c++ -ffp-contract=off,
nnef_cuda_emulate.h) and run once with blocks and threads in order and once in a seeded
shuffled order; every output must have the bits of pipeline.semantics.interpret (nobody wrote
the reference and the generator together: the generator never imports it), and of the C
generator's code for the same model.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pipeline.nnef.tensorfile import read_tensor
from pipeline.project.layout import model_names
from tests.projects import ROOT
from tests.codegen import cghelpers as H
from tests.codegen_cuda import cudahelpers as C

MODELS = tuple(model_names(ROOT))   # every shipped model (models/)
VECTORS = 100

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")


def _inputs(manifest: dict, count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i["name"]: rng.uniform(0.0, 1.0, [count] + i["shape"]).astype(np.float32) for i in manifest["inputs"]}


@pytest.mark.parametrize("model", MODELS)
def test_shipped_model_whole_on_gpu_is_bit_exact(model, exported_project, tmp_path):
    export = exported_project / "artifacts" / model / "export"
    split = C.whole_model(export, tmp_path / "split")
    manifest = C.generate(split, export, tmp_path / "code")
    inputs = _inputs(manifest, VECTORS, 1234)
    in_order, shuffled = C.emulate(tmp_path / "code", manifest, inputs, tmp_path / "run")
    weights = {p.stem: read_tensor(p) for p in export.glob("*.dat")}
    names = [o["name"] for o in manifest["outputs"]]
    expected = H.reference(split / f"{C.ITEM}.nnef", inputs, weights, names)
    H.assert_bit_identical(in_order, expected, f"{model} (blocks and threads in order)")
    H.assert_bit_identical(shuffled, expected, f"{model} (shuffled order)")


def test_lenet5_gpu_item_equals_cpu_item(exported_project, tmp_path):
    """The CUDA emulation and the C generator's code give the same bits on the same vectors."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    export = exported_project / "artifacts" / "lenet5" / "export"
    split = C.whole_model(export, tmp_path / "split")
    manifest = C.generate(split, export, tmp_path / "code")
    inputs = _inputs(manifest, 20, 7)
    gpu = C.emulate(tmp_path / "code", manifest, inputs, tmp_path / "run", seeds=(99,))[0]
    cpu_split = H.single_item(tmp_path / "cpu", "\n".join(
        line for line in (split / f"{C.ITEM}.nnef").read_text().splitlines()[4:-1]),
        {p.stem: read_tensor(p) for p in export.glob("*.dat")}, inputs=["input"], outputs=["prob"])
    H.generate(cpu_split, cpu_split, tmp_path / "ccode", 4)
    cpu = H.run(H.build(tmp_path / "ccode", 4), inputs, tmp_path / "crun", ["prob"])
    H.assert_bit_identical(gpu, cpu, "lenet5 GPU item vs CPU item")


KERNELS = {
    "conv_padded_strided_grouped": (
        """x = external<scalar>(shape = [1, 4, 9, 8]);
        w = variable<scalar>(shape = [6, 2, 3, 2], label = 'w');
        b = variable<scalar>(shape = [1, 6], label = 'b');
        y = conv(x, w, b, border = 'constant', padding = [(1, 2), (0, 1)], stride = [2, 1], dilation = [1, 2], groups = 2);""",
        {"w": (6, 2, 3, 2), "b": (1, 6)}, {"x": (1, 4, 9, 8)}),
    "max_pool_constant_border": (
        """x = external<scalar>(shape = [1, 3, 7, 6]);
        y = max_pool(x, size = [1, 1, 3, 3], border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);""",
        {}, {"x": (1, 3, 7, 6)}),
    "max_pool_ignore_border": (
        """x = external<scalar>(shape = [1, 3, 7, 6]);
        y = max_pool(x, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (2, 2), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);""",
        {}, {"x": (1, 3, 7, 6)}),
    "softmax_and_reductions": (
        """x = external<scalar>(shape = [2, 5, 3]);
        s = softmax(x, axes = [1]);
        m = mean_reduce(x, axes = [1, 2]);
        r = max_reduce(x, axes = [0, 2]);
        y = add(s, m);
        z = sub(y, r);""",
        {}, {"x": (2, 5, 3)}),
    "batch_norm_concat_linear": (
        """x = external<scalar>(shape = [2, 4]);
        mu = variable<scalar>(shape = [1, 4], label = 'mu');
        va = variable<scalar>(shape = [1, 4], label = 'va');
        of = variable<scalar>(shape = [1, 4], label = 'of');
        sc = variable<scalar>(shape = [1, 4], label = 'sc');
        w = variable<scalar>(shape = [3, 8], label = 'w');
        n = batch_normalization(x, mu, va, of, sc, epsilon = 1e-3);
        c = concat([n, x], axis = 1);
        l = linear(c, w, 0.0);
        lo = min(l, 0.5);
        hi = max(l, -0.25);
        y = div(lo, hi);""",
        {"mu": (1, 4), "va": (1, 4), "of": (1, 4), "sc": (1, 4), "w": (3, 8)}, {"x": (2, 4)}),
    "avg_pool_and_box": (
        """x = external<scalar>(shape = [1, 3, 7, 6]);
        a = avg_pool(x, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 2), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
        c = avg_pool(x, size = [1, 1, 3, 2], border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (0, 1)], stride = [1, 1, 1, 2], dilation = [1, 1, 1, 1]);
        s = box(x, size = [1, 1, 2, 2], border = 'constant', padding = [(0, 0), (0, 0), (1, 0), (0, 0)], stride = [1, 1, 1, 1], dilation = [1, 1, 2, 1], normalize = false);""",
        {}, {"x": (1, 3, 7, 6)}),
    "clamp_and_transpose": (  # issue 15: HardSigmoid/HardSwish compositions, channel shuffle
        """x = external<scalar>(shape = [1, 6, 5, 4]);
        va = variable<scalar>(shape = [1, 6], label = 'va');
        vb = variable<scalar>(shape = [1, 6], label = 'vb');
        t = mul(x, 0.16666667);
        u = add(t, 0.5);
        h = clamp(u, 0.0, 1.0);
        s = mul(x, h);
        k = clamp(x, va, vb);
        g = reshape(x, shape = [1, 2, 3, 5, 4], axis_start = 0, axis_count = -1);
        p = transpose(g, axes = [0, 2, 1, 3, 4]);
        q = transpose(x, axes = [0, 2, 1]);
        n = nearest_upsample(x, factor = [2, 3]);""",
        {"va": (1, 6), "vb": (1, 6)}, {"x": (1, 6, 5, 4)}),
    "multilinear_upsample": (  # issue 15: Resize linear (half-pixel, align_corners), 1-D and 2-D, odd sizes
        """x = external<scalar>(shape = [1, 3, 5, 4]);
        v = external<scalar>(shape = [2, 2, 3]);
        z = external<scalar>(shape = [1, 2, 1, 3]);
        a = multilinear_upsample(x, factor = [2, 2], method = 'symmetric', border = 'replicate');
        c = multilinear_upsample(x, factor = [3, 1], method = 'aligned', border = 'replicate');
        d = multilinear_upsample(v, factor = [4], method = 'symmetric', border = 'replicate');
        e = multilinear_upsample(z, factor = [3, 2], method = 'aligned', border = 'constant');""",
        {}, {"x": (1, 3, 5, 4), "v": (2, 2, 3), "z": (1, 2, 1, 3)}),
    "deconv": (  # issue 15: ConvTranspose; strides, pads, output padding, dilation, groups, depthwise, 1-D
        """x = external<scalar>(shape = [1, 4, 5, 6]);
        u = external<scalar>(shape = [2, 6, 4, 4]);
        v = external<scalar>(shape = [1, 3, 7]);
        f1 = variable<scalar>(shape = [4, 3, 3, 3], label = 'f1');
        b1 = variable<scalar>(shape = [1, 3], label = 'b1');
        f2 = variable<scalar>(shape = [4, 2, 3, 2], label = 'f2');
        b2 = variable<scalar>(shape = [1, 4], label = 'b2');
        f3 = variable<scalar>(shape = [6, 1, 3, 3], label = 'f3');
        f4 = variable<scalar>(shape = [3, 5, 4], label = 'f4');
        f5 = variable<scalar>(shape = [4, 2, 3, 3], label = 'f5');
        d1 = deconv(x, f1, b1, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], output_shape = [], groups = 1);
        d2 = deconv(x, f2, b2, border = 'constant', padding = [(0, 1), (2, 0)], stride = [2, 3], dilation = [1, 2], output_shape = [], groups = 2);
        d3 = deconv(u, f3, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [2, 2], dilation = [1, 1], output_shape = [2, 6, 8, 8], groups = 6);
        d4 = deconv(v, f4, 0.25, border = 'constant', padding = [(2, 1)], stride = [3], dilation = [1], output_shape = [], groups = 1);
        d5 = deconv(x, f5, 0.0, border = 'constant', padding = [(0, 1), (0, 1)], stride = [2, 2], dilation = [1, 1], output_shape = [1, 4, 10, 12], groups = 2);
        d6 = deconv(x, f1, b1, border = 'ignore', padding = [(0, 0), (1, 2)], stride = [1, 2], dilation = [2, 1], output_shape = [], groups = 1);
        d7 = deconv(u, f3, 0.0, border = 'constant', padding = [(0, 0), (0, 0)], stride = [3, 1], dilation = [1, 1], output_shape = [], groups = 0);""",
        {"f1": (4, 3, 3, 3), "b1": (1, 3), "f2": (4, 2, 3, 2), "b2": (1, 4), "f3": (6, 1, 3, 3), "f4": (3, 5, 4),
         "f5": (4, 2, 3, 3)}, {"x": (1, 4, 5, 6), "u": (2, 6, 4, 4), "v": (1, 3, 7)}),
    "transcendentals": (
        """x = external<scalar>(shape = [4, 64]);
        e = exp(x);
        l = log(x);
        t = tanh(x);
        s = sigmoid(x);
        p = softplus(x);
        q = sqrt(x);
        w = pow(x, t);
        r = round(x);
        f = floor(x);""",
        {}, {"x": (4, 64)}),
}
MULTIPLE_OUTPUTS = {"deconv": ["d1", "d2", "d3", "d4", "d5", "d6", "d7"], "multilinear_upsample": ["a", "c", "d", "e"], "clamp_and_transpose": ["h", "s", "k", "p", "q", "n"], "avg_pool_and_box": ["a", "c", "s"], "transcendentals": ["e", "l", "t", "s", "p", "q", "w", "r", "f"]}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_bit_exact_with_special_values(name, tmp_path):
    body, variables, externals = KERNELS[name]
    rng = np.random.default_rng(5)
    weights = {k: rng.normal(0, 1, s).astype(np.float32) for k, s in variables.items()}
    if "va" in weights:
        weights["va"] = np.abs(weights["va"])
    outputs = MULTIPLE_OUTPUTS.get(name) or [line.split("=")[0].strip() for line in body.strip().splitlines()][-1:]
    text = (f"version 1.0;\n\ngraphitem {C.ITEM} g( {', '.join(externals)} ) -> ( {', '.join(outputs)} )\n{{\n"
            + "\n".join(f"    {line.strip()}" for line in body.strip().splitlines()) + "\n}\n")
    split = C.one_item(tmp_path / "split", text)
    for label, value in weights.items():
        from pipeline.nnef.tensorfile import write_tensor
        write_tensor(split / f"{label}.dat", value)
    manifest = C.generate(split, split, tmp_path / "code")
    count = 24
    inputs = {k: rng.normal(0, 2, (count,) + s).astype(np.float32) for k, s in externals.items()}
    for value in inputs.values():            # -0, +-inf, NaN and a subnormal in some vectors
        flat = value.reshape(count, -1)
        flat[1, 0], flat[2, 1], flat[3, 2], flat[4, 0], flat[5, 3] = -0.0, np.inf, -np.inf, np.nan, 1e-40
    results = C.emulate(tmp_path / "code", manifest, inputs, tmp_path / "run")
    expected = H.reference(split / f"{C.ITEM}.nnef", inputs, weights, outputs)
    for result in results:
        H.assert_bit_identical(result, expected, name)


def test_every_unsupported_operation_is_listed_in_one_error(tmp_path):
    """Issue 15: one CODEGEN-E001 names every operation the CUDA generator lacks."""
    from pipeline.codegen.shared.errors import CodegenError

    text = ("version 1.0;\n\ngraphitem GPU0 g( x ) -> ( y )\n{\n"
            "    x = external<scalar>(shape = [1, 1, 4, 4]);\n"
            "    a = area_downsample(x, factor = [2, 2]);\n"
            "    b = relu(a);\n"
            "    y = nearest_downsample(b, factor = [2, 2]);\n}\n")
    split = C.one_item(tmp_path / "split", text)
    with pytest.raises(CodegenError) as info:
        C.generate(split, split, tmp_path / "code")
    message = info.value.message
    assert info.value.code == "CODEGEN-E001" and "2 operation(s)" in message, message
    assert "'area_downsample' at" in message and "'nearest_downsample' at" in message and "'relu' at" not in message
