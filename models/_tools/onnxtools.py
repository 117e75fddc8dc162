"""Shared helpers for the scripts that build the shipped example models (models/<m>/).

Not part of the `pipeline` package and never imported by it or by the tests: the model
scripts (`models/<m>/train.py`, `models/<m>/build.py`) add this folder to `sys.path`.
It has no torch dependency; the torch-specific code lives in the training scripts.

What lives here:
- `digits32`: scikit-learn's bundled digits data set, preprocessed to 32x32 and split with
  a fixed seed (the one definition the training scripts share; tests/models re-implements
  it independently from the READMEs' description and compares the images' sha256).
- `finalize`: turn an exported ONNX model into the shipped form: readable, sanitised tensor
  names, IR version 10, one fixed opset, no doc strings, no value_info, initializers in
  order of first use, node names equal to their first output; then `onnx.checker`
  (full_check) and the project's operator / dtype / static-shape restrictions.
- `write_model`: deterministic serialisation, returns the SHA-256 of the bytes written.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 10  # onnxruntime 1.31 refuses IR 14 (onnx.helper's default)
OPSET = 13  # default; resnet8 uses 15 (see strip_batchnorm_momentum)

# The ONNX operators the exporter (issue 3) supports; shipped models use nothing else.
ALLOWED_OPS = frozenset(
    """Conv ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm MatMul
    Relu LeakyRelu PRelu Sigmoid Tanh Softmax LogSoftmax Add Sub Mul Div Sum Max Min Concat
    Split Slice Flatten Reshape Transpose Squeeze Unsqueeze BatchNormalization Clip Pad LRN
    Identity Dropout ReduceMean Constant""".split()
) | {"HardSigmoid", "HardSwish"} | {"Shape", "Gather"}  # issue 15; Shape/Gather only as folded shape arithmetic

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

# --------------------------------------------------------------------------------------
# Data: scikit-learn's digits, 8x8 -> 32x32
# --------------------------------------------------------------------------------------

DIGITS_SPLIT_SEED = 0
DIGITS_TEST_SIZE = 360  # 20 % of the 1,797 images


def preprocess_digits(images: np.ndarray, channels: int = 1) -> np.ndarray:
    """8x8 images with grey levels 0..16 -> float32 [N, channels, 32, 32] in [0, 1].

    1. scale: x / 16 (exact in float32: the 17 levels k/16 are dyadic);
    2. upsample 8x8 -> 24x24 by nearest neighbour (each pixel becomes a 3x3 block);
    3. pad 4 zero pixels on each side -> 32x32 (the digit sits centred, like MNIST in
       LeNet-5's 32x32 field);
    4. replicate to `channels` identical channels (3 for the RGB-shaped ResNet input).
    No interpolation arithmetic, so the result is bit-exact on every platform.
    """
    x = np.asarray(images, dtype=np.float32) / np.float32(16.0)
    x = np.repeat(np.repeat(x, 3, axis=1), 3, axis=2)
    x = np.pad(x, ((0, 0), (4, 4), (4, 4)))
    x = np.ascontiguousarray(np.repeat(x[:, None, :, :], channels, axis=1))
    return x.astype(np.float32)


def digits_split(n: int = 1797) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, test indices): a permutation by numpy's legacy RandomState(0),
    which NumPy keeps stream-stable across versions; the first 360 are the test set."""
    perm = np.random.RandomState(DIGITS_SPLIT_SEED).permutation(n)
    return np.sort(perm[DIGITS_TEST_SIZE:]), np.sort(perm[:DIGITS_TEST_SIZE])


def digits32(channels: int = 1) -> dict[str, np.ndarray]:
    """The preprocessed, split digits data set (needs scikit-learn)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = preprocess_digits(d.images, channels)
    y = np.asarray(d.target, dtype=np.int64)
    tr, te = digits_split(len(y))
    return {"x_train": x[tr], "y_train": y[tr], "x_test": x[te], "y_test": y[te]}


def array_sha256(a: np.ndarray) -> str:
    """SHA-256 of the array's bytes, C order (float32 little-endian for the images)."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


# --------------------------------------------------------------------------------------
# ONNX post-processing
# --------------------------------------------------------------------------------------


def sanitise(name: str) -> str:
    """Lower-case letters, digits and underscores; never starting with a digit."""
    s = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s or s[0].isdigit():
        s = "t_" + s
    return s


def torch_scope_name(node: onnx.NodeProto) -> str:
    """'/s1b1/conv1/Conv' -> 's1b1_conv1'; '/Flatten' -> 'flatten' (the legacy exporter's
    node names are the module scope path followed by the op type)."""
    parts = [p for p in node.name.split("/") if p]
    if len(parts) > 1:
        parts = parts[:-1]
    return sanitise("_".join(parts))


def _materialise_identity_initializers(graph: onnx.GraphProto) -> None:
    """The legacy exporter de-duplicates equal parameters and re-creates the copies with
    `Identity(initializer)` nodes; turn each back into an initializer of its own."""
    inits = {t.name: t for t in graph.initializer}
    keep = []
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            graph.initializer.append(copy)
            inits[copy.name] = copy
        else:
            keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)


def _const_value(graph: onnx.GraphProto, name: str) -> np.ndarray | None:
    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t)
    return None


def fold_constants(graph: onnx.GraphProto) -> int:
    """Evaluate every node whose inputs are all constants (initializers or Constant node
    outputs), e.g. the int64 shape arithmetic the exporter writes for `F.pad`, and replace it
    by initializers (onnx.reference evaluates it). Returns the number of nodes folded."""
    from onnx.reference import ReferenceEvaluator

    consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    keep, folded = [], 0
    for node in graph.node:
        if node.op_type == "Constant":
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
            keep.append(node)
            continue
        if node.input and all((not i) or i in consts for i in node.input):
            inputs = [i for i in node.input if i]
            g = helper.make_graph(
                [node], "fold",
                [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(consts[i].dtype), consts[i].shape) for i in inputs],
                [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
            )
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
            outs = ReferenceEvaluator(m).run(None, {i: consts[i] for i in inputs})
            for o, v in zip(node.output, outs):
                v = np.asarray(v)
                consts[o] = v
                graph.initializer.append(numpy_helper.from_array(v, o))
            folded += 1
            continue
        keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)
    return folded


def fold_pad_into_conv(graph: onnx.GraphProto) -> int:
    """Fold `Pad(x, pads, 0)` (constant mode, zero value, spatial pads only) feeding a
    single Conv into that Conv's `pads` attribute; torch has no asymmetric Conv padding,
    so a Keras/TF-style "same" convolution is written `F.pad` + conv and exported as
    Pad + Conv. Returns the number of Pads folded."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    folded = 0
    drop: set[int] = set()
    for pad in graph.node:
        if pad.op_type != "Pad":
            continue
        mode = next((a.s.decode() for a in pad.attribute if a.name == "mode"), "constant")
        users = consumers.get(pad.output[0], [])
        if mode != "constant" or len(users) != 1 or users[0].op_type != "Conv":
            continue
        pads = _const_value(graph, pad.input[1])
        value = _const_value(graph, pad.input[2]) if len(pad.input) > 2 and pad.input[2] else None
        if pads is None or (value is not None and float(value) != 0.0):
            continue
        pads = [int(p) for p in pads]
        rank = len(pads) // 2
        begin, end = pads[:rank], pads[rank:]
        if begin[:2] != [0, 0] or end[:2] != [0, 0] or min(pads) < 0:
            continue
        conv = users[0]
        old = next((list(a.ints) for a in conv.attribute if a.name == "pads"), [0] * (2 * (rank - 2)))
        if any(a.name == "auto_pad" and a.s not in (b"", b"NOTSET") for a in conv.attribute):
            continue
        new = [o + p for o, p in zip(old, begin[2:] + end[2:])]
        kept = [a for a in conv.attribute if a.name != "pads"]
        del conv.attribute[:]
        conv.attribute.extend(kept + [helper.make_attribute("pads", new)])
        conv.attribute.sort(key=lambda a: a.name)
        conv.input[0] = pad.input[0]
        drop.add(id(pad))
        folded += 1
    keep = [n for n in graph.node if id(n) not in drop]
    used = {i for n in keep for i in n.input}
    keep = [n for n in keep if not (n.op_type == "Constant" and n.output[0] not in used)]
    del graph.node[:]
    graph.node.extend(keep)
    return folded


def strip_batchnorm_momentum(graph: onnx.GraphProto) -> int:
    """Drop BatchNormalization's `momentum` attribute: it only matters for updating running
    statistics in training (the shipped models are inference graphs).

    Beware: onnx.reference's BatchNormalization-9 (used for opsets 9-13) normalises with
    batch statistics whenever `momentum` is set, and the schema default (0.9) always sets
    it, so for opsets 9-13 onnx.reference disagrees with onnxruntime and torch by O(1)
    (onnx/onnx PR #8442, open). That is why resnet8 is exported at opset 15, where
    BatchNormalization-15 has an explicit training_mode (default 0) that onnx.reference
    honours."""
    count = 0
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            kept = [a for a in node.attribute if a.name != "momentum"]
            if len(kept) != len(node.attribute):
                del node.attribute[:]
                node.attribute.extend(kept)
                count += 1
    return count


def finalize(
    model: onnx.ModelProto,
    *,
    node_namer: Callable[[onnx.NodeProto], str] | None = None,
    rename: Mapping[str, str] | None = None,
    producer_name: str,
    producer_version: str,
    opset: int = OPSET,
) -> onnx.ModelProto:
    """Return the shipped form of `model` (see the module docstring).

    Tensor names: graph inputs and outputs keep theirs; every other node output is named
    by `node_namer(node)` (default: the torch scope name); initializers are sanitised;
    `rename` overrides any of these (keys: original names). Duplicate names are an error.
    """
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    _materialise_identity_initializers(g)
    fold_constants(g)
    fold_pad_into_conv(g)
    strip_batchnorm_momentum(g)
    namer = node_namer or torch_scope_name
    rename = dict(rename or {})

    io_names = {v.name for v in g.input} | {v.name for v in g.output}
    mapping: dict[str, str] = {}
    for t in g.initializer:
        mapping[t.name] = rename.get(t.name, sanitise(t.name))
    for node in g.node:
        for i, out in enumerate(node.output):
            if out in io_names:
                mapping[out] = rename.get(out, out)
            else:
                base = namer(node)
                mapping[out] = rename.get(out, base if i == 0 else f"{base}_{i}")
    for n in io_names:
        mapping.setdefault(n, rename.get(n, n))
    seen: dict[str, str] = {}
    for old, new in mapping.items():
        if new in seen and seen[new] != old:
            raise ValueError(f"name clash: {seen[new]!r} and {old!r} both map to {new!r}")
        if not NAME_RE.match(new):
            raise ValueError(f"unsanitised tensor name {new!r} (from {old!r})")
        seen[new] = old

    for node in g.node:
        node.input[:] = [mapping.get(n, n) if n else n for n in node.input]
        node.output[:] = [mapping[n] for n in node.output]
        node.name = node.output[0]
        node.ClearField("doc_string")
    for v in list(g.input) + list(g.output):
        v.name = mapping.get(v.name, v.name)
        v.ClearField("doc_string")

    # Initializers: renamed, in order of first use, unused ones dropped.
    inits = {mapping[t.name]: t for t in g.initializer}
    order: list[str] = []
    for node in g.node:
        for n in node.input:
            if n in inits and n not in order:
                order.append(n)
    new_inits = []
    for n in order:
        t = onnx.TensorProto()
        t.CopyFrom(inits[n])
        t.name = n
        t.ClearField("doc_string")
        new_inits.append(t)
    del g.initializer[:]
    g.initializer.extend(new_inits)
    del g.value_info[:]
    g.ClearField("doc_string")
    m.ClearField("doc_string")
    m.ir_version = IR_VERSION
    del m.opset_import[:]
    m.opset_import.extend([helper.make_opsetid("", opset)])
    m.producer_name = producer_name
    m.producer_version = producer_version
    m.ClearField("model_version")
    m.ClearField("domain")
    del m.metadata_props[:]
    # Graph output shapes from shape inference (the exporter leaves some symbolic).
    inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    known = {v.name: v for v in inferred.graph.value_info}
    known.update({v.name: v for v in inferred.graph.output})
    for v in g.output:
        if v.name in known:
            v.type.CopyFrom(known[v.name].type)
    validate(m)
    return m


def validate(model: onnx.ModelProto) -> None:
    """onnx.checker (full_check) plus the project's restrictions: supported operators only,
    float32 tensors (int64 only as shape-like inputs of Reshape/Pad/Slice/...), static shapes,
    batch 1, sanitised unique names."""
    onnx.checker.check_model(model, full_check=True)
    g = model.graph
    bad = sorted({n.op_type for n in g.node} - ALLOWED_OPS)
    if bad:
        raise ValueError(f"operators outside the supported list: {bad}")
    for v in list(g.input) + list(g.output):
        tt = v.type.tensor_type
        if tt.elem_type != TensorProto.FLOAT:
            raise ValueError(f"{v.name}: not float32")
        dims = tt.shape.dim
        if not dims or any(not d.HasField("dim_value") for d in dims):
            raise ValueError(f"{v.name}: dynamic or missing shape")
        if dims[0].dim_value != 1:
            raise ValueError(f"{v.name}: batch must be 1")
    for t in g.initializer:
        if t.data_type != TensorProto.FLOAT:
            raise ValueError(f"initializer {t.name}: not float32")
    names = [n.output[0] for n in g.node]
    if len(set(names)) != len(names):
        raise ValueError("duplicate node output names")
    for n in names + [t.name for t in g.initializer] + [v.name for v in g.input]:
        if not NAME_RE.match(n):
            raise ValueError(f"unsanitised name {n!r}")


def model_bytes(model: onnx.ModelProto) -> bytes:
    return model.SerializeToString(deterministic=True)


def write_model(model: onnx.ModelProto, path: Path | str) -> str:
    """Write the model (deterministic protobuf serialisation, no external data);
    return its SHA-256."""
    data = model_bytes(model)
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return hashlib.sha256(data).hexdigest()


def count_parameters(model: onnx.ModelProto) -> int:
    return int(sum(numpy_helper.to_array(t).size for t in model.graph.initializer))
