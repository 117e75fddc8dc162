"""The fast parser and the lark parser lead to the same checked result.

A flat document is parsed by pipeline/nnef/flatparse.py into an AST, then checked by the
one checker (check_document); the lowering skips what a flat body cannot need and
remembers shape inferences. Whatever is skipped or remembered, the flat graphs and every
finding (code, severity, message, file, line, column, related spans) must be exactly those
of the lark parser followed by a lowering that remembers nothing. Compared on every
shipped model's NNEF (exported in memory), on the benchmark's generated graph, on
hand-made variants of it that break one statement after the same statement kind was
already checked (a remembered inference must not hide a finding), on the forms around the
common statement (comments, blanks, line breaks, strings, argument orders), and on
randomly mutated texts.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.nnef_bench import generate
from pipeline.diagnostics import sorted_findings
from pipeline.project.layout import model_names
from pipeline.nnef import flatparse
from pipeline.nnef import parser as lark_front
from pipeline.nnef.checker import CheckReport, _apply_profile, check_document, check_text
from pipeline.nnef.flatparse import parse_flat
from pipeline.nnef.multiitem import check_items
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


class _Forgetful(dict):
    """A shape memo that never stores: every inference runs its rule."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _forgetful_post_init() -> Any:
    original = GraphBuilder.__post_init__

    def post_init(self: GraphBuilder) -> None:
        original(self)
        self._shape_memo = _Forgetful()

    return mock.patch.object(GraphBuilder, "__post_init__", post_init)


def outcome(report: Any) -> tuple[str, str]:
    """The flat graphs and the findings, as text (repr: exact, and NaN-safe)."""
    return repr(report.graphs), repr(report.findings)


def reference(text: str, profile: str) -> tuple[str, str]:
    """The checker without the fast parser: lark, then a lowering that remembers nothing."""
    with mock.patch("pipeline.nnef.parser.parse_flat", return_value=None), _forgetful_post_init():
        return outcome(check_text(text, FILE, profile))


def assert_same(text: str, profile: str = "certification") -> tuple[str, str] | None:
    """Both paths agree on `text`: the checker (the flat AST of flatparse.py, when the text
    is flat, through check_document) and the reference. The result, or None when the text
    is not flat."""
    expected = reference(text, profile)
    assert outcome(check_text(text, FILE, profile)) == expected
    flat = parse_flat(text, FILE)
    if flat is None:
        return None
    assert lark_document(text) is not None, "the fast path accepted a text the grammar rejects"
    report = CheckReport(texts={FILE: text})
    graphs, findings = check_document(flat, profile)
    report.graphs, report.findings = graphs, sorted_findings(_apply_profile(findings + check_items(graphs), profile))
    assert outcome(report) == expected
    return expected


@pytest.mark.parametrize("model", ROOT_MODELS)
def test_shipped_model_nnef(model: str) -> None:
    from pipeline.export.exporter import convert

    text = convert(f"models/{model}/model.onnx").text
    assert assert_same(text) is not None, "an exported model must take the fast path"
    report = check_text(text, FILE)
    assert report.documents[FILE] == lark_document(text)


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


# The commonest arguments (numbers, tensor names, strings, arrays of numbers and of number
# pairs) written in the forms next to them: each must check exactly as the reference does,
# finding or not.
ARGUMENT_FORMS = [
    ("size = [1, 1, 3, 3]", "size = [1, 1, -3, 3]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, 3.0]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, [3], 3]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, r53]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, (3, 3)]"),
    ("size = [1, 1, 3, 3]", "size = []"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, 3, 1]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, true]"),
    ("size = [1, 1, 3, 3]", "size = [1, 1, 3, 'a']"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1, 2)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1, 1, 1)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1, -1)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1.0, 1)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), [1, 1]]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1, r53)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), ((1, 1), 1), (1, 1)]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), 1]"),
    ("padding = [(0, 0), (0, 0), (1, 1), (1, 1)]", "padding = [(0, 0), (0, 0), (1, 1), (1, 1)] "),
    ("label = 'w56'", 'label = "w56"'),
    ("label = 'w56'", "label = ''"),
    ("label = 'w56'", "label = 56"),
    ("label = 'w56'", "label = r53"),
    ("a54 = add(r53, r53);", "a54 = add(r53, 1.0);"),
    ("a54 = add(r53, r53);", "a54 = add(r53, -1.0);"),
    ("a54 = add(r53, r53);", "a54 = add(r53, [r53]);"),
    ("a54 = add(r53, r53);", "a54 = add(r53, w56);"),
    ("a54 = add(r53, r53);", "a54 = add(r53, 'r53');"),
    ("a54 = add(r53, r53);", "a54 = add(r53, r53 );"),
]


@pytest.mark.parametrize("profile", ["certification", "standard"])
def test_benchmark_graph_argument_forms(profile: str) -> None:
    base = generate(60)
    for old, new in ARGUMENT_FORMS:
        at = base.index("m55 = max_pool") if old.startswith(("size", "padding")) else 0
        at = base.index("w56 = variable") if old.startswith("label") else at
        changed = base[:at] + base[at:].replace(old, new, 1)
        assert changed != base, old
        assert assert_same(changed, profile) is not None, new  # flat text: the fast parser read it


def test_unterminated_string_is_not_an_empty_one() -> None:
    """A lone quote is the tokeniser's catch-all token, not a string: the fast paths must
    hand the text to lark (syntax error), never read it as ''."""
    text = generate(8).replace("label = 'w4'", "label = '")
    assert parse_flat(text, FILE) is None
    assert "NNEF-E001" in assert_same_rejected(text)


def assert_same_rejected(text: str) -> str:
    expected = reference(text, "certification")
    assert outcome(check_text(text, FILE)) == expected
    return expected[1]


# The forms around the common one-line statement (comments, blanks, line breaks, strings
# holding ';' '(' '=' '#', keywords, negative numbers, argument orders) must check exactly as
# the reference does, whether the fast parser takes them or leaves them to lark.
STATEMENT_FORMS = [
    ("    r9 = relu(c8);", "    r9 = relu(c8); # trailing; r99 = relu(c8);"),
    ("    r9 = relu(c8);", "    # r9 = relu(r9);\n    r9 = relu(c8);"),
    ("    r9 = relu(c8);", "  \t r9\t=\trelu( c8 ) ;"),
    ("    r9 = relu(c8);", "    r9 = relu(c8\n    );"),
    ("    r9 = relu(c8);", "    r9 =\r\n relu(c8);"),
    ("    r9 = relu(c8);", "    r9\f= relu(c8);"),
    ("    r9 = relu(c8);", "    r9 = relu(c8) # c\n;"),
    ("    r9 = relu(c8);", "    r9 = relu(c8);r99 = relu(c8);"),
    ("    r9 = relu(c8);", "    r9=relu(c8);#"),
    ("    r9 = relu(c8);", "    r9 = relu(c8); # r99 = relu(c8);\n    a10 = add(r9,\n r9); # r98 = relu(c8);"),
    ("    output = copy(m11);\n}", "    output = copy(m11);\n#}"),
    ("    output = copy(m11);\n}", "    output = copy(m11);\n} # } \n"),
    ("    r9 = relu(c8);", "    r9 = relu(c8);\n    # a comment\n\n"),
    ("    r9 = relu(c8);", "    graph = relu(c8);"),
    ("    r9 = relu(c8);", "    r9 = scalar(c8);"),
    ("    r9 = relu(c8);", "    r9 = relu(true);"),
    ("    r9 = relu(c8);", "    r9 = relu();"),
    ("    r9 = relu(c8);", "    r9 = relu(x = c8);"),
    ("    r9 = relu(c8);", "    r9 = relu(c8, c8);"),
    ("    r9 = relu(c8);", "    r9, r99 = relu(c8);"),
    ("    r9 = relu(c8);", "    r9 = relu<scalar>(c8);"),
    ("    r9 = relu(c8);", "    r9 = relu< scalar >(c8);"),
    ("    r9 = relu(c8);", "    r9 = relu(c8)"),
    ("    r9 = relu(c8);", "    r9 = relu(c8 c8);"),
    ("    r9 = relu(c8);", "    r9 = relu(1c52);"),
    ("    r9 = relu(c8);", "    r9 = relu(c8,);"),
    ("    a10 = add(r9, r9);", "    a10 = add(x = r9, y = r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, x = r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, y = r9, y = r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(y = r9, r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, r9, r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, 1.5e-3);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, -2);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, - 2);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, r9);\n    a10 = add(r9, r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, r9);\n    q = add(r9, a10);\n    q = copy(r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9,\n r9); # r99 = relu(r9);\n    r98 = relu(a10\n);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, r9); ' r99 = relu(r9);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, [r9]); r98 = relu(c8); # q = relu(c8); r97 = relu(c8);\n"),
    ("    a10 = add(r9, r9);", "    a10 = concat([r9, r9], axis = 1, s = 'q = relu(c8);'); r98 = relu(c8);"),
    ("    a10 = add(r9, r9);", "    a10 = add(r9, r9);  r98, r97 = relu(c8); r96 = relu(c8);"),
    ("label = 'w8'", "label = 'w8; r99 = relu(c8);'"),
    ("label = 'w8'", "label = 'a(b'"),
    ("label = 'w8'", "label = '= # ;'"),
    ("label = 'w8'", 'label = "w;56"'),
    ("label = 'w8'", "label = 'w8', label = 'x'"),
    ("label = 'w8'", "label = 'w8' # ');\n"),
    ("shape = [8, 8, 3, 3], label = 'w8'", "label = 'w8', shape = [8, 8, 3, 3]"),
    ("groups = 1);\n    r9", "groups = -1);\n    r9"),
    ("groups = 1);\n    r9", "groups = true);\n    r9"),
    ("groups = 1);\n    r9", "groups = tensor);\n    r9"),
    ("groups = 1);\n    r9", "groups = 1e0);\n    r9"),
    ("groups = 1);\n    r9", "groups = [1]);\n    r9"),
    ("padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);\n    r9",
     "padding = [(1, -1), (-0, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);\n    r9"),
    ("padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);\n    r9",
     "padding = [ ( 1 , 1 ) ,(1,1) ], stride = [1, 1], dilation = [1, 1] , groups = 1 );\n    r9"),
]


@pytest.mark.parametrize("profile", ["certification", "standard"])
def test_statement_forms(profile: str) -> None:
    base = generate(12)
    for old, new in STATEMENT_FORMS:
        assert base.count(old) >= 1, old
        at = base.index("w8 = variable") if old.startswith(("label", "shape")) else 0
        changed = base[:at] + base[at:].replace(old, new, 1)
        assert changed != base, old
        assert_same(changed, profile)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(position=st.floats(0, 1), cut=st.integers(0, 3),
       insert=st.sampled_from(["#", "# c\n", "\n", "\t", "\r", "'", ";", "(", "=", "'a;b(c=d'", "-", "[", "]", "(1, 1)",
                               "x", "r53", "true", "1.5", ",", " = relu(r53);", "a = relu(r53);\n"]))
def test_mutated_statements_check_alike(position: float, cut: int, insert: str) -> None:
    text = generate(4)
    at = int(position * len(text))
    assert_same(text[:at] + insert + text[at + cut:])


# Defects planted in the fast parser: the comparison above must catch each of them.
def _integer_scalars(original: Any) -> Any:
    def number(self: Any, i: int) -> Any:
        literal = original(self, i)
        if literal.kind != "scalar":
            return literal
        return dataclasses.replace(literal, value=int(literal.value), kind="integer")
    return number


def _wide_spans(original: Any) -> Any:
    def span(self: Any, first: int, last: int) -> Any:
        found = original(self, first, last)
        return found._replace(end_column=found.end_column + 1)
    return span


def _untouched_rest(original: Any) -> Any:
    def tokenise(text: str) -> Any:
        texts, kinds, starts, rest = original(text)
        return texts, kinds, starts, rest or ""
    return tokenise


PLANTED = {
    "a scalar literal read as an integer": (
        lambda: mock.patch.object(flatparse._FlatParser, "_number", _integer_scalars(flatparse._FlatParser._number)),
        generate(12)),
    "a column off by one": (
        lambda: mock.patch.object(flatparse._FlatParser, "_span", _wide_spans(flatparse._FlatParser._span)),
        generate(12)),
    "a commented-out brace read as a token": (
        lambda: mock.patch.object(flatparse, "_tokenise", _untouched_rest(flatparse._tokenise)),
        generate(4).replace("copy(m3);\n}", "copy(m3);\n# }")),
}


@pytest.mark.parametrize("defect", sorted(PLANTED))
def test_planted_defects_are_caught(defect: str) -> None:
    plant, text = PLANTED[defect]
    assert_same(text)  # correct without the defect
    with plant(), pytest.raises(AssertionError):
        assert_same(text)


def test_trailing_comment_is_no_token() -> None:
    """`split` searches: after a last comment that no token follows it would start again
    inside the comment and read the brace commented out there as the graph's end."""
    text = generate(4).replace("copy(m3);\n}", "copy(m3);\n# }")
    assert parse_flat(text, FILE) is None
    assert "NNEF-E001" in assert_same_rejected(text)
