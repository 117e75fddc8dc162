"""Regression (issue 15): parameters shared and copied between layers as torch's exporter writes
them, through export -> split -> codegen -> build -> run, 0 ULP against the reference.

torch.onnx.export deduplicates equal initializers: efficientnet_b0's squeeze-excitation
blocks of one stage share their fc biases, and later blocks get them through `Identity`
nodes (our export writes `b1_fc2_bias = copy(b0_fc2_bias)`, a view of the first block's
constant array) or name the same initializer directly. The models here, built with
onnx.helper, are two such blocks of the same shape, each behind a 1x1 convolution, on a
2x2 feature map: GlobalAveragePool -> Conv 1x1 -> x * Sigmoid(x) -> Conv 1x1 -> Sigmoid ->
Mul(scale, x). Their two excitation multiplications compile to identical functions called
with the same arena offsets, which is what made GCC 12 delete both calls under the former
qualified flags (docs/codegen.md "Why -fno-delete-null-pointer-checks"): the output was
then the stale arena, not the model's.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CHANNELS, REDUCED, SIDE, BLOCKS, VECTORS = 32, 8, 2, 2, 6
DEPLOY = f"""schema_version: 1
model: {{model}}
description: two squeeze-excitation blocks sharing their fc biases ({{sharing}}), issue 15
inputs:
  input:
    shape: [1, {CHANNELS}, {SIDE}, {SIDE}]
    distribution: {{{{kind: uniform, low: -1.0, high: 1.0}}}}
validation:
  vectors: {VECTORS}
  seed: 15
  tolerance:
    max_abs_error: 1.0e-5
    max_rel_error: null
deployments:
  single:
    items: [{{{{name: CPU0, target: cpu}}}}]
    default_item: CPU0
    sync: event
met:
  runs: 10
  budget_us: 1000000
"""


def squeeze_excitation_model(sharing: str, seed: int = 0) -> onnx.ModelProto:
    """Two SE blocks; block 1 takes block 0's fc1/fc2 biases through Identity nodes
    (`sharing="identity"`, torch's exporter) or by naming the same initializer (`"same"`)."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    initializers: dict[str, np.ndarray] = {}

    def weight(name: str, shape: tuple[int, ...], scale: float) -> str:
        initializers[name] = rng.normal(0.0, scale, shape).astype(np.float32)
        return name

    def add(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    x = "input"
    shared = {"fc1": weight("b0.fc1.bias", (REDUCED,), 0.1), "fc2": weight("b0.fc2.bias", (CHANNELS,), 0.1)}
    for block in range(BLOCKS):
        p = f"b{block}"
        x = add("Conv", [x, weight(f"{p}.pw.weight", (CHANNELS, CHANNELS, 1, 1), 0.3),
                         weight(f"{p}.pw.bias", (CHANNELS,), 0.1)], f"{p}_pw", kernel_shape=[1, 1])
        biases = dict(shared)
        if block and sharing == "identity":
            biases = {k: add("Identity", [v], f"{p}.{k}.bias") for k, v in shared.items()}
        pooled = add("GlobalAveragePool", [x], f"{p}_gap")
        fc1 = add("Conv", [pooled, weight(f"{p}.fc1.weight", (REDUCED, CHANNELS, 1, 1), 0.3), biases["fc1"]],
                  f"{p}_fc1", kernel_shape=[1, 1])
        silu = add("Mul", [fc1, add("Sigmoid", [fc1], f"{p}_act_sigmoid")], f"{p}_act")
        fc2 = add("Conv", [silu, weight(f"{p}.fc2.weight", (CHANNELS, REDUCED, 1, 1), 0.3), biases["fc2"]],
                  f"{p}_fc2", kernel_shape=[1, 1])
        x = add("Mul", [add("Sigmoid", [fc2], f"{p}_scale"), x], f"{p}_out")
    add("Identity", [x], "output")
    shape = [1, CHANNELS, SIDE, SIDE]
    graph = helper.make_graph(nodes, "shared_se", [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("shared")
    (root / "requirements").symlink_to(H.ROOT / "requirements")
    return root


@pytest.mark.parametrize("sharing", ["identity", "same"])
def test_shared_and_copied_parameters_are_bit_exact(project, sharing):
    from pipeline.compare.reference import reference_outputs
    from pipeline.project.deploy import load_deploy
    from pipeline.export.step import run_export_step
    from pipeline.split.step import run_split_step
    from pipeline.numerics.vectors import draw_vectors

    model = f"se_{sharing}"
    folder = project / "models" / model
    folder.mkdir(parents=True)
    onnx.save(squeeze_excitation_model(sharing), folder / "model.onnx")
    (folder / "deploy.yaml").write_text(DEPLOY.format(model=model, sharing=sharing), encoding="utf-8")
    export_results = run_export_step(model, project)
    assert all(r.verdict.value != "fail" for r in export_results), [r.reason for r in export_results]
    graph = (project / "artifacts" / model / "export" / "graph.nnef").read_text(encoding="utf-8")
    if sharing == "identity":  # a shared parameter's Identity is folded (issue 29): a variable of its own, same bytes
        declared = re.search(r"\b(b1_fc2_bias\w*) = variable<scalar>\(shape = \[[^]]*\], label = '(\w+)'\);", graph)
        assert declared and not re.search(r"= copy\(b0_", graph), graph
        export = project / "artifacts" / model / "export"
        first = re.search(r"\b(b0_fc2_bias\w*) = variable<scalar>\(shape = \[[^]]*\], label = '(\w+)'\);", graph)
        assert (export / f"{declared.group(2)}.dat").read_bytes() == (export / f"{first.group(2)}.dat").read_bytes()
    run_split_step(model, project, vectors=1)

    lanes = max(H.lanes_available())
    code = project / "code" / model
    generated = H.generate(project / "artifacts" / model / "split" / "single",
                           project / "artifacts" / model / "export", code, lanes, project)
    outputs = [o["name"] for o in generated.manifest["outputs"]]
    binary = H.build(code, lanes)
    spec = load_deploy(folder / "deploy.yaml")
    vectors = draw_vectors(spec.inputs, VECTORS, spec.validation.seed)
    inputs = {name: np.stack([v[name] for v in vectors]) for name in spec.inputs}
    got = H.run(binary, inputs, project / "run" / model, outputs)
    expected = reference_outputs(model, project, inputs)
    H.assert_bit_identical(got, expected, f"{model} ({lanes} lanes)")
