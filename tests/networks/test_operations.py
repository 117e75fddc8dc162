"""Issue 29's operations one at a time, on networks built here: each through export, C and the CUDA
host emulation bit-exact with the reference semantics, and within a few float32 roundings of
onnxruntime: Erf (special values too), Gelu in both forms, LayerNormalization over one and two axes,
with and without bias, Softmax on the first, middle and last axis, batched MatMul with broadcast batch
axes and a constant operand, Gather with scalar, vector, 2-D and negative constant indices, Pow with
exponents 2, 3 and general, Sqrt, the identity Cast; and a refusal that lists only the data path's
blockers, then the folded nodes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from pipeline.export import convert
from pipeline.export.errors import ExportError
from tests.codegen import cghelpers as H
from tests.codegen_cuda import cudahelpers as C
from tests.networks import chainhelpers as N
from tests.networks import netbuild as B

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc and g++ are needed (Debian packages gcc, g++)")

RNG = np.random.default_rng(2929)
node = helper.make_node


def _case(nodes, inputs, outputs, weights=None, opset=17):
    return B.model(nodes, inputs, outputs, weights or {}, opset=opset)


CASES = {
    "erf": lambda: _case([node("Erf", ["x"], ["y"])], {"x": [3, 40]}, {"y": [3, 40]}),
    "gelu_exact": lambda: _case([node("Gelu", ["x"], ["y"])], {"x": [2, 30]}, {"y": [2, 30]}, opset=20),
    "gelu_tanh": lambda: _case([node("Gelu", ["x"], ["y"], approximate="tanh")], {"x": [2, 30]}, {"y": [2, 30]},
                               opset=20),
    "layernorm_last_axis": lambda: _case([node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)],
                                         {"x": [2, 5, 16]}, {"y": [2, 5, 16]},
                                         {"s": B.normal(RNG, 16), "b": B.normal(RNG, 16)}),
    "layernorm_two_axes_no_bias": lambda: _case([node("LayerNormalization", ["x", "s"], ["y"], axis=-2, epsilon=1e-3)],
                                                {"x": [3, 4, 6]}, {"y": [3, 4, 6]}, {"s": B.normal(RNG, 4, 6)}),
    "softmax_axes": lambda: _case([node("Softmax", ["x"], ["a"], axis=0), node("Softmax", ["x"], ["b"], axis=1),
                                   node("Softmax", ["x"], ["c"], axis=-1), node("Add", ["a", "b"], ["ab"]),
                                   node("Add", ["ab", "c"], ["y"])], {"x": [3, 4, 5]}, {"y": [3, 4, 5]}),
    "batched_matmul": lambda: _case([node("MatMul", ["x", "z"], ["p"]), node("MatMul", ["p", "w"], ["y"])],
                                    {"x": [2, 3, 4, 5], "z": [1, 3, 5, 6]}, {"y": [2, 3, 4, 2]},
                                    {"w": B.normal(RNG, 6, 2)}),
    "gather_indices": lambda: _case([node("Gather", ["x", "i0"], ["g0"], axis=1), node("Gather", ["x", "i1"], ["g1"], axis=2),
                                     node("Gather", ["x", "i2"], ["g2"], axis=0), node("Gather", ["x", "i3"], ["g3"], axis=-1),
                                     node("Flatten", ["g0"], ["f0"], axis=0), node("Flatten", ["g1"], ["f1"], axis=0),
                                     node("Flatten", ["g2"], ["f2"], axis=0), node("Flatten", ["g3"], ["f3"], axis=0),
                                     node("Concat", ["f0", "f1", "f2", "f3"], ["y"], axis=1)],
                                    {"x": [3, 4, 5]}, {"y": [1, 15 + 36 + 80 + 12]},
                                    {"i0": np.array(2, np.int64), "i1": np.array([4, 0, -1], np.int64),
                                     "i2": np.array([[2, 0], [1, 1]], np.int64), "i3": np.array(-2, np.int64)}),
    "pow_sqrt_cast": lambda: _case([node("Pow", ["x", "two"], ["p2"]), node("Pow", ["x", "three"], ["p3"]),
                                    node("Mul", ["x", "x"], ["xx"]),
                                    node("Pow", ["xx", "half"], ["ph"]), node("Sqrt", ["xx"], ["sq"]),
                                    node("Cast", ["sq"], ["cs"], to=TensorProto.FLOAT),
                                    node("Sum", ["p2", "p3", "ph", "cs"], ["y"])],
                                   {"x": [4, 8]}, {"y": [4, 8]},
                                   {"two": np.array(2.0, np.float32), "three": np.array(3.0, np.float32),
                                    "half": np.array(0.5, np.float32)}),
}
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -3.0, 3.99, 4.0, -4.01, 0.921875], np.float32)


@pytest.mark.parametrize("case", sorted(CASES))
def test_operation_through_the_chain(case, tmp_path):
    model = CASES[case]()
    inputs = N.vectors(model, count=5, low=-3.0, high=3.0)
    if case == "erf":
        inputs["x"][0, 0, :SPECIALS.size] = SPECIALS
    run = N.through_chain(model, tmp_path, inputs)
    theirs = N.onnxruntime_outputs(model, inputs)["y"]
    scale = max(1.0, float(np.abs(theirs).max()))
    np.testing.assert_allclose(run.reference["y"], theirs, atol=2e-6 * scale, rtol=0, err_msg=case)


def test_erf_kernels_reproduce_the_reference_on_every_kind_of_float(tmp_path):
    """Random bit patterns (NaN, infinities, subnormals included) and the branch ends, through the C
    (vector lanes and scalar tail) and the CUDA emulation: the bits of pipeline.semantics."""
    patterns = RNG.integers(0, 1 << 32, 4 * 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([patterns, SPECIALS, np.float32([np.nan])]).astype(np.float32)
    x = np.resize(x, (2, 4, 501))
    body = "x = external<scalar>(shape = [4, 501]);\ny = erf(x);"
    split = H.single_item(tmp_path / "c", body)
    expected = H.reference(split / f"{H.ITEM}.nnef", {"x": x}, {}, ["y"])
    for lanes in H.lanes_available():
        H.generate(split, split, tmp_path / f"code{lanes}", lanes, tmp_path)
        got = H.run(H.build(tmp_path / f"code{lanes}", lanes), {"x": x}, tmp_path / f"run{lanes}", ["y"])
        H.assert_bit_identical(got, expected, f"C, {lanes} lanes")
    text = (f"version 1.0;\n\ngraphitem {C.ITEM} g( x ) -> ( y )\n{{\n    x = external<scalar>(shape = [4, 501]);\n"
            "    y = erf(x);\n}\n")
    cuda = C.one_item(tmp_path / "cuda", text)
    manifest = C.generate(cuda, cuda, tmp_path / "cuda_code")
    for got in C.emulate(tmp_path / "cuda_code", manifest, {"x": x}, tmp_path / "cuda_run"):
        H.assert_bit_identical(got, expected, "CUDA emulation")


def test_refusal_lists_only_the_data_path_blockers():
    """A Hardmax on the data path blocks; a Mod and a Sqrt of constants do not: they are folded, and the
    refusal does not name them (issue 38: naming folded operators read as false blockers)."""
    model = _case([node("Mod", ["a", "b"], ["m"]), node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
                   node("Sqrt", ["mf"], ["s"]), node("Mul", ["x", "s"], ["xs"]),
                   node("Hardmax", ["xs"], ["y"], name="blocker")], {"x": [2, 3]}, {"y": [2, 3]},
                  {"a": np.array(7, np.int64), "b": np.array(3, np.int64)})
    with pytest.raises(ExportError) as error:
        convert(model)
    text = str(error.value)
    assert error.value.code == "EXPORT-E003" and text.startswith("node 'blocker'")
    listed = text.split("[")[0]
    assert "1 unsupported operator: Hardmax at node 'blocker'" in listed
    assert "Mod" not in listed and "Sqrt" not in listed and "folded" not in listed


def test_an_unsupported_operator_on_constants_is_folded_and_the_export_succeeds():
    model = _case([node("Mod", ["a", "b"], ["m"]), node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
                   node("Sqrt", ["mf"], ["s"]), node("Mul", ["x", "s"], ["y"])], {"x": [2, 3]}, {"y": [2, 3]},
                  {"a": np.array(7, np.int64), "b": np.array(3, np.int64)})
    result = convert(model)
    assert [op.name for op in result.graph.operations] == ["external", "mul"]
    assert "y = mul(x, 1.0);" in result.text  # sqrt(float(7 mod 3)), a literal


CUDA_KERNELS = """
    x = external<scalar>(shape = [2, 3, 5, 4]);
    a = variable<scalar>(shape = [1, 3], label = 'a');
    p0 = pad(x, padding = [(0, 0), (0, 1), (2, 1), (1, 3)], border = 'constant', value = 0.5);
    p1 = pad(x, padding = [(0, 0), (0, 0), (2, 3), (1, 0)], border = 'replicate', value = 0.0);
    p2 = pad(x, padding = [(0, 0), (1, 1), (4, 6), (3, 3)], border = 'reflect', value = 0.0);
    p3 = pad(x, padding = [(0, 0), (2, 0), (5, 1), (0, 4)], border = 'reflect-even', value = 0.0);
    l = leaky_relu(x, alpha = 0.1);
    r = prelu(x, a);
    n = local_response_normalization(x, size = [1, 3, 1, 1], alpha = 0.0002, beta = 0.75, bias = 1.0);
    m = local_response_normalization(x, size = [1, 2, 3, 1], alpha = 0.5, beta = 0.5, bias = 2.0);
"""
CUDA_OUTPUTS = ["p0", "p1", "p2", "p3", "l", "r", "n", "m"]


def test_cuda_pad_prelu_leaky_relu_lrn_reproduce_the_reference(tmp_path):
    """The CUDA kernels added for the networks issue 29 ran (AveragePool with ceil rows and
    count_include_pad exports a pad; LeakyRelu, PRelu, LRN): every border of pad, -0, NaN, infinities."""
    x = RNG.standard_normal((6, 2, 3, 5, 4)).astype(np.float32)
    flat = x.reshape(6, -1)
    flat[1, :4] = [-0.0, np.nan, np.inf, -np.inf]
    weights = {"a": np.array([[0.25, -1.5, 0.0]], np.float32)}
    text = (f"version 1.0;\n\ngraphitem {C.ITEM} g( x ) -> ( {', '.join(CUDA_OUTPUTS)} )\n{{\n"
            + "\n".join(f"    {line.strip()}" for line in CUDA_KERNELS.strip().splitlines()) + "\n}\n")
    split = C.one_item(tmp_path / "split", text)
    from pipeline.nnef.tensorfile import write_tensor

    write_tensor(split / "a.dat", weights["a"])
    manifest = C.generate(split, split, tmp_path / "code")
    expected = H.reference(split / f"{C.ITEM}.nnef", {"x": x}, weights, CUDA_OUTPUTS)
    for got in C.emulate(tmp_path / "code", manifest, {"x": x}, tmp_path / "run"):
        H.assert_bit_identical(got, expected, "CUDA emulation")


def test_a_constant_node_onnx_reference_cannot_evaluate_goes_to_its_converter():
    """onnx.reference 1.23 fails on Unsqueeze at opset 8 (it picks its opset-13 form); the Squeeze before
    it is folded, the Unsqueeze converted, and ONNX shape inference still sees every folded value (an
    IR 3 model declares initializers as graph inputs too)."""
    model = _case([node("Squeeze", ["k"], ["s"], axes=[0]), node("Unsqueeze", ["s"], ["u"], axes=[0]),
                   node("Add", ["x", "u"], ["y"])], {"x": [1, 4]}, {"y": [1, 4]},
                  {"k": np.arange(4, dtype=np.float32).reshape(1, 4)}, opset=8)
    model.ir_version = 3
    model.graph.input.extend([helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 4])])
    result = convert(model)
    assert [op.name for op in result.graph.operations] == ["external", "variable", "unsqueeze", "add"]
    folded = [n["op_type"] for n in result.provenance["nodes"] if n.get("folded") is not None]
    assert folded == ["Squeeze"]
