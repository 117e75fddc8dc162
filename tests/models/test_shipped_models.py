"""The shipped example models (models/<m>/): ONNX validity, onnxruntime, deploy.yaml, provenance.

Independent of the scripts that made the models (models/<m>/train.py, build.py and
models/_tools/): the preprocessing of the digits data is re-implemented here from its
description in the READMEs, and every figure a README records (sha256, accuracy, the test
images' hash) is re-measured. The accuracy tests need scikit-learn (for its bundled digits
data) and are skipped without it.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from onnx import TensorProto, numpy_helper

from pipeline.export.onnx_model import MIN_OPSET, max_opset
from pipeline.project.layout import model_dir, model_names

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
MODELS = model_names(ROOT)   # every folder under models/ with a model.onnx: found, never listed here
TRAINED = {"lenet5": 1, "resnet8": 3, "inception": 1}  # model -> input channels

# The ONNX operators the exporter supports (issue 3); shipped models use nothing else.
ALLOWED_OPS = set(
    """Conv ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm MatMul
    Relu LeakyRelu PRelu Sigmoid Tanh Softmax LogSoftmax Add Sub Mul Div Sum Max Min Concat
    Split Slice Flatten Reshape Transpose Squeeze Unsqueeze BatchNormalization Clip Pad LRN
    Identity Dropout ReduceMean Constant""".split()
) | {"HardSigmoid", "HardSwish", "Shape", "Gather"}  # issue 15 (Shape, Gather: shape arithmetic the exporter folds)
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` ([0-9x]+) \| `(\w+)` ([0-9x]+) \| ([0-9,]+) \|", re.M)


def documented() -> dict[str, dict]:
    """models/README.md's table: model -> its input and output (name, shape) and node count, as documented."""
    text = (ROOT / "models" / "README.md").read_text(encoding="utf-8")
    return {m.group(1): {"input": (m.group(2), [int(d) for d in m.group(3).split("x")]),
                         "output": (m.group(4), [int(d) for d in m.group(5).split("x")]),
                         "nodes": int(m.group(6).replace(",", ""))} for m in ROW.finditer(text)}


def load(name: str) -> onnx.ModelProto:
    return onnx.load(str(model_dir(name, ROOT) / "model.onnx"))


def spec(name: str) -> dict:
    return yaml.safe_load((model_dir(name, ROOT) / "deploy.yaml").read_text())


def readme(name: str) -> str:
    return (model_dir(name, ROOT) / "README.md").read_text()


def session(name: str):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(model_dir(name, ROOT) / "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])


def shape_of(v: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in v.type.tensor_type.shape.dim]


def test_the_shipped_models_are_found_and_documented():
    """Adding a model is a folder under models/ (model.onnx, deploy.yaml, README.md) and its row in
    models/README.md's table: no test lists the models."""
    assert MODELS, "no model under models/"
    for name in MODELS:
        for file in ("model.onnx", "deploy.yaml", "README.md"):
            assert (model_dir(name, ROOT) / file).is_file(), f"models/{name}/{file} is missing"
    assert sorted(documented()) == MODELS, "models/README.md's table lists exactly the folders under models/"


@pytest.mark.parametrize("name", MODELS)
def test_the_table_of_models_is_true(name):
    row = documented()[name]
    g = load(name).graph
    assert [(v.name, shape_of(v)) for v in g.input] == [row["input"]]
    assert [(v.name, shape_of(v)) for v in g.output] == [row["output"]]
    assert len(g.node) == row["nodes"]


# ---------------------------------------------------------------------------- ONNX


@pytest.mark.parametrize("name", MODELS)
def test_model_passes_the_full_onnx_checker(name):
    model = load(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10  # onnxruntime 1.31 refuses IR 14
    [(domain, version)] = [(o.domain, o.version) for o in model.opset_import]
    assert domain == "" and MIN_OPSET <= version <= max_opset()


@pytest.mark.parametrize("name", MODELS)
def test_model_keeps_to_the_exporters_subset(name):
    model = load(name)
    g = model.graph
    assert {n.op_type for n in g.node} <= ALLOWED_OPS
    for v in list(g.input) + list(g.output):
        assert v.type.tensor_type.elem_type == TensorProto.FLOAT, v.name
        dims = v.type.tensor_type.shape.dim
        assert dims and all(d.HasField("dim_value") for d in dims), f"{v.name}: static shape"
        assert dims[0].dim_value == 1, f"{v.name}: batch 1"
    for t in g.initializer:
        assert t.data_type == TensorProto.FLOAT, t.name
        assert t.data_location != TensorProto.EXTERNAL, t.name
    names = [o for n in g.node for o in n.output] + [t.name for t in g.initializer] + [v.name for v in g.input]
    assert len(names) == len(set(names))
    assert all(NAME.match(n) for n in names), [n for n in names if not NAME.match(n)]
    assert all(n.name == n.output[0] for n in g.node)


@pytest.mark.parametrize("name", MODELS)
def test_model_file_is_small(name):
    assert (model_dir(name, ROOT) / "model.onnx").stat().st_size < 2 * 1024 * 1024


@pytest.mark.parametrize("name", MODELS)
def test_model_runs_in_onnxruntime_with_the_deploy_shapes(name):
    sess = session(name)
    s = spec(name)
    rng = np.random.default_rng(s["validation"]["seed"])
    feeds = {}
    for input_name, inp in s["inputs"].items():
        dist = inp["distribution"]
        feeds[input_name] = rng.uniform(dist["low"], dist["high"], inp["shape"]).astype(np.float32)
    (out,) = sess.run(None, feeds)
    out_name, out_shape = documented()[name]["output"]
    assert [o.name for o in sess.get_outputs()] == [out_name]
    assert list(out.shape) == out_shape
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    if out_name == "prob":
        assert abs(float(out.sum()) - 1.0) < 1e-5


# ---------------------------------------------------------------------------- deploy.yaml


@pytest.mark.parametrize("name", MODELS)
def test_deploy_yaml_is_well_formed_and_names_real_tensors(name):
    s = spec(name)
    model = load(name)
    g = model.graph
    assert s["schema_version"] == 1
    assert s["model"] == name
    assert isinstance(s["description"], str) and s["description"]
    assert {k: v["shape"] for k, v in s["inputs"].items()} == {v.name: shape_of(v) for v in g.input}
    for inp in s["inputs"].values():
        assert inp["distribution"]["kind"] == "uniform"
        assert inp["distribution"]["low"] < inp["distribution"]["high"]
    val = s["validation"]
    assert isinstance(val["vectors"], int) and val["vectors"] > 0
    assert isinstance(val["seed"], int)
    tol = val["tolerance"]
    assert isinstance(tol["max_abs_error"], float) and 0 < tol["max_abs_error"] < 1e-3
    assert tol.get("max_rel_error") is None or isinstance(tol["max_rel_error"], float)
    assert isinstance(s["met"]["runs"], int) and s["met"]["runs"] > 0
    assert isinstance(s["met"]["budget_us"], (int, float)) and s["met"]["budget_us"] > 0

    ops = {n.output[0] for n in g.node}
    deps = s["deployments"]
    assert deps["single"] == {"items": [{"name": "CPU0", "target": "cpu"}],
                              "default_item": "CPU0", "sync": "event"}
    for dep_name, dep in deps.items():
        items = [i["name"] for i in dep["items"]]
        assert len(items) == len(set(items)), dep_name
        assert all(i["target"] in ("cpu", "cuda", "nvdla") for i in dep["items"])
        assert dep["default_item"] in items
        assert dep["sync"] in ("event", "barrier")
        allocated: list[str] = []
        for item, names in (dep.get("allocation") or {}).items():
            assert item in items, f"{dep_name}: unknown item {item}"
            assert set(names) <= ops, f"{dep_name}: not node outputs: {set(names) - ops}"
            allocated += names
        assert len(allocated) == len(set(allocated)), f"{dep_name}: allocated twice"


def test_branch3_paper_allocation():
    dep = spec("branch3")["deployments"]["paper3"]
    assert [i["name"] for i in dep["items"]] == ["ITEM1", "ITEM2", "ITEM3"]
    assert dep["default_item"] == "ITEM1"
    assert dep["allocation"] == {"ITEM2": ["o2", "o3"], "ITEM3": ["o4", "o5"]}
    assert dep["sync"] == "barrier"


# ---------------------------------------------------------------------------- structure


def test_branch3_is_the_papers_network():
    g = load("branch3").graph
    assert [(n.output[0], n.op_type, list(n.input)) for n in g.node] == [
        ("o1", "Conv", ["e1", "v1", "v2"]),
        ("o2", "Conv", ["o1", "v3", "v4"]),
        ("o3", "Conv", ["o2", "v5", "v6"]),
        ("o4", "Conv", ["o1", "v7", "v8"]),
        ("o5", "Conv", ["o4", "v5", "v6"]),  # v5, v6 shared with o3
        ("o6", "Concat", ["o3", "o5"]),
        ("o7", "Flatten", ["o6"]),
        ("out", "Gemm", ["o7", "v9", "v10"]),
    ]
    assert [t.name for t in g.initializer] == [f"v{i}" for i in range(1, 11)]
    assert [v.name for v in g.input] == ["e1"] and [v.name for v in g.output] == ["out"]


def test_lenet5_is_the_papers_network():
    g = load("lenet5").graph
    assert [n.op_type for n in g.node] == [
        "Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten",
        "Gemm", "Relu", "Gemm", "Relu", "Gemm", "Softmax"]
    assert [n.output[0] for n in g.node] == [
        "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten",
        "fc1", "relu3", "fc2", "relu4", "fc3", "prob"]
    shapes = {t.name: list(t.dims) for t in g.initializer}
    assert shapes == {
        "conv1_weight": [6, 1, 5, 5], "conv1_bias": [6],
        "conv2_weight": [16, 6, 5, 5], "conv2_bias": [16],
        "fc1_weight": [120, 400], "fc1_bias": [120],
        "fc2_weight": [84, 120], "fc2_bias": [84],
        "fc3_weight": [10, 84], "fc3_bias": [10],
    }
    # The paper's Petri net: 13 transitions, 11 initial tokens (input + 10 parameters),
    # 24 places (13 results + 11 inputs/parameters).
    assert len(g.node) == 13 and len(g.input) + len(g.initializer) == 11


def test_resnet8_keeps_batchnorm_with_real_statistics():
    g = load("resnet8").graph
    bns = [n for n in g.node if n.op_type == "BatchNormalization"]
    assert len(bns) == 9 and sum(n.op_type == "Add" for n in g.node) == 3
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for bn in bns:
        mean, var = inits[bn.input[3]], inits[bn.input[4]]
        assert np.all(var > 0) and np.ptp(var) > 0 and np.ptp(mean) > 0, bn.name
        assert all(a.name != "momentum" for a in bn.attribute)


def test_inception_has_four_branch_modules():
    g = load("inception").graph
    concats = [n for n in g.node if n.op_type == "Concat"]
    assert len(concats) == 3 and all(len(n.input) == 4 for n in concats)
    stem = g.node[0]
    pads = next(a.ints for a in stem.attribute if a.name == "pads")
    assert list(pads) == [0, 0, 1, 1]  # asymmetric "same" padding
    assert any(n.op_type == "AveragePool" for n in g.node)


# ---------------------------------------------------------------------------- provenance


@pytest.mark.parametrize("name", MODELS)
def test_readme_records_the_shipped_files_sha256(name):
    data = (model_dir(name, ROOT) / "model.onnx").read_bytes()
    m = re.search(r"model\.onnx sha256: `([0-9a-f]{64})`", readme(name))
    assert m, "README records `model.onnx sha256: `...``"
    assert m.group(1) == hashlib.sha256(data).hexdigest()


def test_branch3_build_script_reproduces_the_shipped_bytes(tmp_path):
    out = tmp_path / "branch3.onnx"
    subprocess.run([sys.executable, str(ROOT / "models/branch3/build.py"), "--out", str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    assert out.read_bytes() == (model_dir("branch3", ROOT) / "model.onnx").read_bytes()


def test_mbconv_build_script_reproduces_the_shipped_bytes(tmp_path):
    out = tmp_path / "mbconv.onnx"
    subprocess.run([sys.executable, str(ROOT / "models/mbconv/build.py"), "--out", str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    assert out.read_bytes() == (model_dir("mbconv", ROOT) / "model.onnx").read_bytes()


def test_mbconv_has_the_mobile_constructs():
    """Depthwise convolutions, squeeze-excitation, SiLU, HardSwish, HardSigmoid, a shared bias,
    the channel-shuffle shape chain (issue 15, item 5)."""
    g = load("mbconv").graph
    convs = [n for n in g.node if n.op_type == "Conv"]
    groups = {n.name: next((a.i for a in n.attribute if a.name == "group"), 1) for n in convs}
    assert sum(1 for n, k in groups.items() if k > 1 and n.endswith("_dw")) == 4
    ops = {n.op_type for n in g.node}
    assert {"HardSwish", "HardSigmoid", "Sigmoid", "GlobalAveragePool", "Shape", "Gather", "Reshape"} <= ops
    silu = [n for n in g.node if n.op_type == "Mul" and any(i == n.input[0] for i in
            [m.input[0] for m in g.node if m.op_type == "Sigmoid" and m.output[0] == n.input[1]])]
    assert len(silu) >= 6
    users: dict[str, list[str]] = {}
    for n in convs:
        for name in n.input[1:]:
            users.setdefault(name, []).append(n.name)
    assert users["b3_se_fc2_bias"] == ["b3_se_fc2", "b4_se_fc2"]


def digits32(channels: int):
    """The preprocessing and split the READMEs describe, re-implemented: x / 16, nearest
    upsampling 8x8 -> 24x24, 4 zero pixels of padding on each side, channels replicated;
    test set = the first 360 of numpy RandomState(0).permutation(1797), sorted."""
    datasets = pytest.importorskip("sklearn.datasets", reason="scikit-learn supplies the digits data")
    d = datasets.load_digits()
    x = d.images.astype(np.float32) / np.float32(16)
    x = np.kron(x, np.ones((1, 3, 3), np.float32))
    x = np.pad(x, ((0, 0), (4, 4), (4, 4)))[:, None]
    x = np.ascontiguousarray(np.broadcast_to(x, (len(x), channels, 32, 32)), dtype=np.float32)
    perm = np.random.RandomState(0).permutation(len(x))
    test = np.sort(perm[:360])
    train = np.sort(perm[360:])
    return x[train], d.target[train], x[test], d.target[test]


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_accuracy_on_the_fixed_split_equals_the_readme(name):
    x_train, y_train, x_test, y_test = digits32(TRAINED[name])
    text = readme(name)
    m = re.search(r"test-set images sha256[^`]*`([0-9a-f]{64})`", text)
    assert m and m.group(1) == hashlib.sha256(x_test.tobytes()).hexdigest()
    sess = session(name)
    in_name = sess.get_inputs()[0].name

    def correct(x, y):
        pred = [int(np.argmax(sess.run(None, {in_name: xi[None]})[0])) for xi in x]
        return int(np.sum(np.asarray(pred) == y))

    m = re.search(r"accuracy[^\n]*: train (\d+) / (\d+), test (\d+) / (\d+)", text)
    assert m, "README records `accuracy ...: train N / M, test N / M`"
    assert (correct(x_test, y_test), len(y_test)) == (int(m.group(3)), int(m.group(4)))
    assert (correct(x_train, y_train), len(y_train)) == (int(m.group(1)), int(m.group(2)))
