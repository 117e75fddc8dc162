"""Gemm and MatMul against onnxruntime: every transA/transB/alpha/beta/bias combination,
and numpy.matmul's broadcasting and 1-D rules."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest


from tests.export.helpers import check_against_ort, make_model, node, operations

M, K, N = 3, 5, 4


def _gemm(trans_a: int, trans_b: int, alpha: float, beta: float, c_shape: list[int] | None, c_constant: bool,
          opset: int = 13):
    rng = np.random.default_rng(11)
    a_shape = [K, M] if trans_a else [M, K]
    b_shape = [N, K] if trans_b else [K, N]
    inputs = {"a": a_shape}
    inits = {"b": rng.normal(size=b_shape).astype(np.float32)}
    names = ["a", "b"]
    if c_shape is not None:
        names.append("c")
        if c_constant:
            inits["c"] = rng.normal(size=c_shape).astype(np.float32)
        else:
            inputs["c"] = c_shape
    attrs = dict(transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    return make_model([node("Gemm", names, ["y"], **attrs)], inputs, {"y": None}, inits, opset=opset)


@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product([0, 1], [0, 1])))
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 1.0), (1.0, -2.0), (1.5, 0.25)])
def test_gemm_transposes_and_scales(tmp_path: Path, trans_a: int, trans_b: int, alpha: float, beta: float) -> None:
    model = _gemm(trans_a, trans_b, alpha, beta, [N], True)
    export = check_against_ort(model, tmp_path / "e")
    ops = operations(export)
    if (trans_a, trans_b, alpha, beta) == (0, 1, 1.0, 1.0):
        assert ops == ["linear"]
    else:
        assert ops[0] == "matmul"
        matmul = next(op for op in export.graph.operations if op.name == "matmul")
        assert matmul.attribs == {"transposeA": bool(trans_a), "transposeB": bool(trans_b)}


@pytest.mark.parametrize("c_shape", [None, [], [1], [N], [1, N], [M, 1], [M, N]])
@pytest.mark.parametrize("constant", [True, False])
def test_gemm_bias_shapes(tmp_path: Path, c_shape: list[int] | None, constant: bool) -> None:
    if c_shape is None and not constant:
        pytest.skip("no bias: one case is enough")
    model = _gemm(0, 1, 1.0, 1.0, c_shape, constant)
    export = check_against_ort(model, tmp_path / "e")
    if c_shape in (None, [N], [1, N]):
        assert operations(export)[-1] == "linear"
        if c_shape == [N] and constant:
            linear = export.text.split("linear(")[1]
            assert "variable<scalar>(shape = [1, 4]" in export.text and linear.startswith("a, b, c)")


def test_gemm_without_bias_writes_bias_zero(tmp_path: Path) -> None:
    export = check_against_ort(_gemm(0, 1, 1.0, 1.0, None, True), tmp_path / "e")
    assert "y = linear(a, b, 0.0);" in export.text


def test_gemm_opset_7_and_11(tmp_path: Path) -> None:
    check_against_ort(_gemm(1, 0, 2.0, 0.5, [M, N], True, opset=7), tmp_path / "a")
    check_against_ort(_gemm(0, 1, 1.0, 1.0, None, True, opset=11), tmp_path / "b")


@pytest.mark.parametrize("a_shape,b_shape", [
    ([3, 4], [4, 5]),
    ([2, 3, 4], [2, 4, 5]),
    ([2, 3, 4], [4, 5]),
    ([4], [4, 5]),
    ([3, 4], [4]),
    ([4], [2, 4, 3]),
    ([1, 2, 4, 3], [3]),
    ([4], [4]),
    ([2, 1, 3, 4], [5, 4, 2]),
])
@pytest.mark.parametrize("constant_b", [False, True])
def test_matmul_broadcasting_and_vectors(tmp_path: Path, a_shape: list[int], b_shape: list[int], constant_b: bool) -> None:
    inits = {"b": np.random.default_rng(2).normal(size=b_shape).astype(np.float32)} if constant_b else {}
    inputs = {"a": a_shape} if constant_b else {"a": a_shape, "b": b_shape}
    model = make_model([node("MatMul", ["a", "b"], ["y"])], inputs, {"y": None}, inits)
    check_against_ort(model, tmp_path / "e")


@pytest.mark.parametrize("opset", [7, 9])
def test_matmul_old_opsets(tmp_path: Path, opset: int) -> None:
    model = make_model([node("MatMul", ["a", "b"], ["y"])], {"a": [2, 3], "b": [3, 2]}, {"y": None}, opset=opset)
    check_against_ort(model, tmp_path / "e")
