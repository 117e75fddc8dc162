"""Windowed operators against onnxruntime: the paper's padding example, auto_pad modes,
asymmetric pads, ceil_mode, count_include_pad, dilations, groups, ConvTranspose."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


from tests.export.helpers import check_against_ort, make_model, node, operations, random_inputs, run_nnef, run_ort

from pipeline.export.padding import base_padding, same_padding, window_padding


# ---------------------------------------------------------------- the paper's example

def _max_pool(tmp_path: Path, name: str, **attrs: object) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    model = make_model([node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], **attrs)],
                       {"x": [1, 2, 6, 6]}, {"y": None}, opset=13)
    feeds = random_inputs(model, seed=7)
    directory = tmp_path / name
    export = check_against_ort(model, directory, feeds, atol=0.0, rtol=0.0)
    return (directory / "graph.nnef").read_text(), run_nnef(export, directory, feeds), run_ort(model, feeds)


def test_keras_same_and_pytorch_symmetric_pools_differ_and_both_match_onnxruntime(tmp_path: Path) -> None:
    """Keras "same" (SAME_UPPER) pads bottom/right only; PyTorch pads symmetrically.

    On a 6x6 input with a 3x3 window and stride 2 both give 3x3 outputs, from different
    windows. The export writes each padding exactly (never `padding = []`) and both agree
    with onnxruntime bit for bit (max pooling is exact).
    """
    keras_text, keras_ours, keras_ort = _max_pool(tmp_path, "keras", auto_pad="SAME_UPPER")
    torch_text, torch_ours, torch_ort = _max_pool(tmp_path, "torch", pads=[1, 1, 1, 1])
    assert "padding = [(0, 0), (0, 0), (0, 1), (0, 1)]" in keras_text
    assert "padding = [(0, 0), (0, 0), (1, 1), (1, 1)]" in torch_text
    assert "padding = []" not in keras_text + torch_text
    assert "border = 'ignore'" in keras_text and "border = 'ignore'" in torch_text
    assert keras_ours["y"].shape == torch_ours["y"].shape == (1, 2, 3, 3)
    assert not np.array_equal(keras_ours["y"], torch_ours["y"])
    assert np.array_equal(keras_ours["y"], keras_ort["y"])
    assert np.array_equal(torch_ours["y"], torch_ort["y"])


def test_same_lower_puts_the_odd_unit_first(tmp_path: Path) -> None:
    text, ours, theirs = _max_pool(tmp_path, "lower", auto_pad="SAME_LOWER")
    assert "padding = [(0, 0), (0, 0), (1, 0), (1, 0)]" in text
    assert np.array_equal(ours["y"], theirs["y"])


def test_max_pool_pads_are_ignored_not_zero(tmp_path: Path) -> None:
    """All-negative inputs: a zero-padded max pool would output 0 at the borders."""
    model = make_model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])],
                       {"x": [1, 1, 3, 3]}, {"y": None})
    feeds = {"x": -np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)}
    export = check_against_ort(model, tmp_path / "e", feeds, atol=0.0, rtol=0.0)
    assert (run_nnef(export, tmp_path / "e", feeds)["y"] < 0).all()


# ---------------------------------------------------------------- padding rules (unit)

def test_same_padding_rule() -> None:
    assert same_padding(6, 3, 2, 1, upper=True) == (0, 1)
    assert same_padding(6, 3, 2, 1, upper=False) == (1, 0)
    assert same_padding(5, 3, 1, 1, upper=True) == (1, 1)
    assert same_padding(5, 3, 1, 2, upper=True) == (2, 2)
    assert same_padding(4, 1, 2, 1, upper=True) == (0, 0)


def test_base_padding_rejects_bad_modes() -> None:
    with pytest.raises(ValueError):
        base_padding("SAME", None, [4], [3], [1], [1])
    with pytest.raises(ValueError):
        base_padding("NOTSET", [1], [4, 4], [3, 3], [1, 1], [1, 1])
    assert base_padding("NOTSET", [0, 1, 2, 3], [4, 4], [3, 3], [1, 1], [1, 1]) == [(0, 2), (1, 3)]


def test_window_padding_adds_ceil_rows_at_the_end() -> None:
    padding = window_padding([(0, 0)], [4], [3], [2], [1], [2])
    assert padding.pairs == [(0, 1)] and padding.ceil_extra == [1]
    with pytest.raises(ValueError):  # fewer outputs than the padding gives: not expressible
        window_padding([(2, 2)], [4], [3], [2], [1], [2])


# ---------------------------------------------------------------- Conv

@pytest.mark.parametrize("attrs", [
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    dict(auto_pad="VALID", strides=[2, 1]),
    dict(auto_pad="NOTSET", pads=[0, 1, 2, 0]),
    dict(pads=[1, 0, 1, 2], dilations=[2, 1]),
    dict(auto_pad="SAME_UPPER", strides=[3, 2]),
])
def test_conv_padding_modes(tmp_path: Path, attrs: dict) -> None:
    w = np.random.default_rng(1).normal(size=(4, 3, 3, 3)).astype(np.float32)
    b = np.random.default_rng(2).normal(size=(4,)).astype(np.float32)
    model = make_model([node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], **attrs)],
                       {"x": [1, 3, 7, 8]}, {"y": None}, {"w": w, "b": b})
    check_against_ort(model, tmp_path / "e")


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_same_padding_with_dilation_against_onnx_reference(tmp_path: Path, mode: str) -> None:
    """onnxruntime refuses dilation with SAME padding; onnx's reference evaluator does not."""
    w = np.random.default_rng(1).normal(size=(2, 1, 3, 3)).astype(np.float32)
    model = make_model([node("Conv", ["x", "w"], ["y"], auto_pad=mode, dilations=[2, 2], strides=[2, 1])],
                       {"x": [1, 1, 7, 6]}, {"y": None}, {"w": w})
    check_against_ort(model, tmp_path / "e", reference=True)


def test_conv_groups_no_bias_1d_and_3d(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    grouped = make_model([node("Conv", ["x", "w"], ["y"], group=2, pads=[1, 1, 1, 1])], {"x": [2, 4, 5, 5]}, {"y": None},
                         {"w": rng.normal(size=(6, 2, 3, 3)).astype(np.float32)})
    text = check_against_ort(grouped, tmp_path / "g").text
    assert "y = conv(x, w, 0.0, border = 'constant'" in text and "groups = 2" in text
    depthwise = make_model([node("Conv", ["x", "w"], ["y"], group=4)], {"x": [1, 4, 6]}, {"y": None},
                           {"w": rng.normal(size=(4, 1, 3)).astype(np.float32)})
    check_against_ort(depthwise, tmp_path / "d")
    volume = make_model([node("Conv", ["x", "w", "b"], ["y"], strides=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1])],
                        {"x": [1, 2, 4, 5, 4]}, {"y": None},
                        {"w": rng.normal(size=(3, 2, 2, 3, 2)).astype(np.float32), "b": rng.normal(size=3).astype(np.float32)})
    check_against_ort(volume, tmp_path / "v")


def test_conv_with_computed_bias_and_weights(tmp_path: Path) -> None:
    """Weights and bias given as graph inputs: the bias gets its [1, M] shape by unsqueeze."""
    model = make_model([node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                       {"x": [1, 2, 5, 5], "w": [3, 2, 3, 3], "b": [3]}, {"y": None})
    export = check_against_ort(model, tmp_path / "e")
    assert operations(export) == ["unsqueeze", "conv"]


# ---------------------------------------------------------------- pools

@pytest.mark.parametrize("include", [0, 1])
@pytest.mark.parametrize("shape,kernel,stride,pads", [
    ([6, 6], [3, 3], [2, 2], [1, 1, 1, 1]),
    ([5, 7], [3, 2], [2, 3], [1, 0, 0, 1]),
    ([4, 4], [3, 3], [2, 2], [0, 0, 0, 0]),
    ([2, 2], [3, 3], [2, 2], [1, 1, 1, 1]),
])
def test_average_pool_ceil_mode_and_count_include_pad(tmp_path: Path, include: int, shape: list, kernel: list,
                                                       stride: list, pads: list) -> None:
    """ONNX never counts ceil-mode rows, even with count_include_pad = 1 (onnxruntime)."""
    model = make_model([node("AveragePool", ["x"], ["y"], kernel_shape=kernel, strides=stride, pads=pads, ceil_mode=1,
                             count_include_pad=include)], {"x": [1, 2] + shape}, {"y": None}, opset=19)
    check_against_ort(model, tmp_path / "e")


def test_average_pool_count_include_pad_uses_constant_border(tmp_path: Path) -> None:
    model = make_model([node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
                       {"x": [1, 1, 4, 4]}, {"y": None})
    text = check_against_ort(model, tmp_path / "e").text
    assert "border = 'constant'" in text


@pytest.mark.parametrize("opset,attrs", [
    (8, dict(kernel_shape=[2, 2], strides=[2, 2])),
    (10, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    (12, dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1)),
    (22, dict(kernel_shape=[3, 2], strides=[2, 1], auto_pad="SAME_UPPER")),
])
def test_max_pool_versions(tmp_path: Path, opset: int, attrs: dict) -> None:
    model = make_model([node("MaxPool", ["x"], ["y"], **attrs)], {"x": [1, 2, 7, 6]}, {"y": None}, opset=opset)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


def test_max_pool_unused_indices_output_is_dropped(tmp_path: Path) -> None:
    model = make_model([node("MaxPool", ["x"], ["y", "unused_indices"], kernel_shape=[2, 2])],
                       {"x": [1, 1, 4, 4]}, {"y": None})
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert export.provenance["nodes"][0]["dropped_outputs"] == ["unused_indices"]


def test_global_pools(tmp_path: Path) -> None:
    model = make_model([node("GlobalAveragePool", ["x"], ["a"]), node("GlobalMaxPool", ["x"], ["m"])],
                       {"x": [2, 3, 5, 4]}, {"a": None, "m": None})
    export = check_against_ort(model, tmp_path / "e")
    assert operations(export) == ["mean_reduce", "max_reduce"]


# ---------------------------------------------------------------- ConvTranspose

@pytest.mark.parametrize("attrs,x_shape", [
    (dict(strides=[2, 2]), [1, 2, 3, 3]),
    (dict(strides=[2, 2], pads=[1, 0, 0, 1]), [1, 2, 3, 4]),
    (dict(strides=[2, 3], output_padding=[1, 2]), [1, 2, 3, 3]),
    (dict(strides=[3, 2], output_shape=[10, 8]), [1, 2, 3, 3]),
    (dict(strides=[2, 2], auto_pad="SAME_UPPER"), [1, 2, 3, 3]),
    (dict(strides=[2, 2], auto_pad="SAME_LOWER"), [1, 2, 3, 3]),
    (dict(strides=[1, 1], dilations=[2, 2], pads=[1, 1, 1, 1]), [1, 2, 4, 4]),
    (dict(strides=[2, 2], group=2), [1, 2, 3, 3]),
])
def test_conv_transpose(tmp_path: Path, attrs: dict, x_shape: list) -> None:
    rng = np.random.default_rng(5)
    group = attrs.get("group", 1)
    w = rng.normal(size=(2, 2 if group > 1 else 3, 3, 3)).astype(np.float32)  # [C, M / group, kh, kw]
    b = rng.normal(size=(w.shape[1] * group,)).astype(np.float32)
    model = make_model([node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": x_shape}, {"y": None},
                       {"w": w, "b": b})
    text = check_against_ort(model, tmp_path / "e").text
    assert "output_shape = [" in text
