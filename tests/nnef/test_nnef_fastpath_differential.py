"""The fast path and the lark parser lead to the same checked result.

A flat document goes through pipeline/nnef/flatparse.py, and its lowering skips what a
flat body cannot need (the operator-expression and depth walks) and remembers shape
inferences. Whatever is skipped or remembered, the flat graphs and every finding (code,
severity, message, file, line, column, related spans) must be exactly those of the lark
parser followed by a lowering that remembers nothing. Compared on every shipped model's NNEF (exported in
memory), on the benchmark's generated graph, on hand-made variants of it that break one
statement after the same statement kind was already checked (a remembered inference must
not hide a finding), and on randomly mutated texts.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.nnef_bench import generate
from pipeline.diagnostics import sorted_findings
from pipeline.layout import model_names
from pipeline.nnef import parser as lark_front
from pipeline.nnef.checker import check_document
from pipeline.nnef.flatparse import parse_flat
from pipeline.nnef.lowering import GraphBuilder
from tests.nnef.nnef_corpus import valid_cases
from tests.nnef.test_nnef_flatparse import MUTATIONS

ROOT_MODELS = model_names(".")
FILE = "graph.nnef"


def lark_document(text: str) -> Any:
    lark_front._BUILDER.file = FILE
    try:
        return lark_front._parser().parse(text)
    except Exception:  # noqa: BLE001 - any lark error means "rejected"
        return None


def checked(document: Any, profile: str) -> tuple[str, str]:
    """The flat graphs and the findings, as text (repr: exact, and NaN-safe)."""
    graphs, findings = check_document(document, profile)
    return repr(graphs), repr(sorted_findings(findings))


class _Forgetful(dict):
    """A shape memo that never stores: every inference runs its rule."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def checked_unremembered(document: Any, profile: str) -> tuple[str, str]:
    original = GraphBuilder.__post_init__

    def post_init(self: GraphBuilder) -> None:
        original(self)
        self._shape_memo = _Forgetful()

    with mock.patch.object(GraphBuilder, "__post_init__", post_init):
        return checked(document, profile)


def assert_same(text: str, profile: str = "certification") -> tuple[str, str] | None:
    """Both paths agree on `text`; the result, or None when the fast path does not take it."""
    flat = parse_flat(text, FILE)
    if flat is None:
        return None
    reference = lark_document(text)
    assert reference is not None, "the fast path accepted a text the grammar rejects"
    ours = checked(flat, profile)
    assert ours == checked_unremembered(reference, profile)
    return ours


@pytest.mark.parametrize("model", ROOT_MODELS)
def test_shipped_model_nnef(model: str) -> None:
    from pipeline.export.exporter import convert

    text = convert(f"models/{model}/model.onnx").text
    assert assert_same(text) is not None, "an exported model must take the fast path"


def test_benchmark_graph() -> None:
    result = assert_same(generate(400))
    assert result is not None and "Finding(" not in result[1]


# Each variant breaks a statement late in the graph, after its kind was inferred many times.
VARIANTS = [
    ("stride = [1, 1], dilation = [1, 1], groups = 1);\n    r57", "stride = [0, 1], dilation = [1, 1], groups = 1);\n    r57"),
    ("w56 = variable<scalar>(shape = [8, 8, 3, 3]", "w56 = variable<scalar>(shape = [8, 4, 3, 3]"),
    ("m55 = max_pool(a54, size = [1, 1, 3, 3]", "m55 = max_pool(a54, size = [1, 1, 99, 3]"),
    ("m55 = max_pool(a54, size = [1, 1, 3, 3], border = 'ignore'", "m55 = max_pool(a54, size = [1, 1, 3, 3], border = 'odd'"),
    ("a54 = add(r53, r53);", "a54 = add(r53, q);"),
    ("r53 = relu(c52);", "r53 = relu(c52, c52);"),
    ("c52 = conv(m51, w52, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], ",
     "c52 = conv(m51, w52, 0.0, border = 'constant', padding = [], "),
    ("c52 = conv(m51, w52, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], ",
     "c52 = conv(m51, w52, 0.0, padding = [(1, 1), (1, 1)], "),
    ("w52 = variable<scalar>(shape = [8, 8, 3, 3]", "w52 = variable<scalar>(shape = [8, 8, 3, 3000000000000]"),
    ("a58 = add(r57, r57);", "a58 = add(r57, true);"),
    ("a58 = add(r57, r57);", "r57 = add(r57, r57);"),
]


@pytest.mark.parametrize("profile", ["certification", "standard"])
def test_benchmark_graph_variants(profile: str) -> None:
    base = generate(60)
    for old, new in VARIANTS:
        assert base.count(old) == 1, old
        result = assert_same(base.replace(old, new), profile)
        assert result is not None and "Finding(" in result[1], new  # each variant is a finding


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from([c for c in valid_cases() if parse_flat(c.text, "f") is not None]),
       position=st.floats(0, 1), cut=st.integers(0, 3), insert=MUTATIONS)
def test_mutated_texts_check_alike(case: Any, position: float, cut: int, insert: str) -> None:
    at = int(position * len(case.text))
    assert_same(case.text[:at] + insert + case.text[at + cut:])
