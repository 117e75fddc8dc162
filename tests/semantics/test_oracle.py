"""The `semantics.order` check: the scalar oracle agrees with the interpreter, and catches
a kernel that sums in another order than the documented one."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.ledger.checks import Verdict
from pipeline.nnef.checker import check_text
from pipeline.semantics import checks as semantics_checks
from pipeline.semantics import kernels

WINDOW = "padding = [(0, 0), (0, 0), (1, 0), (0, 1)], stride = [1, 1, 2, 1], dilation = [1, 1, 1, 1]"
TEXT = f"""version 1.0;

graph G( x ) -> ( y1, y2, y3, y4, y5, y6 )
{{
    x = external<scalar>(shape = [1, 4, 7, 6]);
    w = variable<scalar>(shape = [6, 2, 3, 2], label = 'w');
    b = variable<scalar>(shape = [1, 6], label = 'b');
    c = conv(x, w, b, border = 'constant', padding = [(1, 1), (0, 1)], stride = [2, 1], dilation = [1, 2], groups = 2);
    y1 = max_pool(c, size = [1, 1, 2, 2], border = 'ignore', {WINDOW});
    y2 = avg_pool(c, size = [1, 1, 2, 2], border = 'ignore', {WINDOW});
    y3 = avg_pool(c, size = [1, 1, 2, 2], border = 'constant', {WINDOW});
    f = reshape(c, shape = [1, -1], axis_start = 0, axis_count = -1);
    v = variable<scalar>(shape = [5, 120], label = 'v');
    l = linear(f, v, 0.0);
    y4 = softmax(l, axes = [1]);
    y5 = mean_reduce(c, axes = [2, 3]);
    m = variable<scalar>(shape = [1, 6], label = 'm');
    y6 = batch_normalization(c, m, b, m, b, epsilon = 0.001);
}}
"""


@pytest.fixture
def case() -> tuple:
    report = check_text(TEXT)
    assert report.ok, report.findings
    graph = report.graphs[0]
    rng = np.random.default_rng(5)
    variables = {name: rng.standard_normal(graph.tensors[name].shape).astype(np.float32) for name in ("w", "v", "m")}
    variables["b"] = np.abs(rng.standard_normal((1, 6))).astype(np.float32)
    inputs = {"x": rng.standard_normal((1, 4, 7, 6)).astype(np.float32)}
    return graph, variables, inputs


def test_oracle_agrees_with_the_interpreter(case: tuple) -> None:
    graph, variables, inputs = case
    result = semantics_checks.order_check(graph, variables, inputs, "t", [])
    assert result.verdict is Verdict.PASS, result.reason
    assert result.measured["operations_sampled"] == 8
    assert result.measured["not_sampled"] == {"reshape": 1}


def test_a_kernel_summing_in_reverse_is_caught(case: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    graph, variables, inputs = case
    original = kernels.lookup("linear")

    def reversed_linear(inputs_, attribs, dtype):
        x, w = inputs_["input"], inputs_["filter"]
        acc = np.zeros((x.shape[0], w.shape[0]), np.float32)
        for k in reversed(range(x.shape[1])):
            acc = acc + x[:, k:k + 1] * w[:, k][None, :]
        return (acc + np.float32(0.0),)

    assert original is not reversed_linear
    monkeypatch.setitem(kernels._KERNELS, "linear", reversed_linear)
    result = semantics_checks.order_check(graph, variables, inputs, "t", [])
    assert result.verdict is Verdict.FAIL
    assert "linear -> l[" in result.reason and "documented order" in result.reason


def test_one_flipped_bit_is_caught(case: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    graph, variables, inputs = case
    real = semantics_checks.interpret

    def tampered(*args, **kwargs):
        env = real(*args, **kwargs)
        env["y2"] = env["y2"].copy()
        env["y2"].reshape(-1)[0] = np.nextafter(env["y2"].reshape(-1)[0], np.float32(np.inf))
        return env

    monkeypatch.setattr(semantics_checks, "interpret", tampered)
    result = semantics_checks.order_check(graph, variables, inputs, "t", [])
    assert result.verdict is Verdict.FAIL and "avg_pool -> y2[0, 0, 0, 0]" in result.reason
