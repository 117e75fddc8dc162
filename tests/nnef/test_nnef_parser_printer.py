"""Grammar coverage, spans, canonical printing (parse -> print -> parse is a fixpoint)."""

from __future__ import annotations

import re
from pathlib import Path

import nnef
import pytest

from tests.nnef.nnef_corpus import valid_cases
from pipeline.nnef import ast
from pipeline.nnef.parser import parse_file, parse_text
from pipeline.nnef.printer import format_scalar, print_document

ROOT = Path(__file__).parents[2]


def khronos_stdlib_text() -> str:
    """The standard library text shipped inside the Khronos parser (reference data)."""
    header = Path(nnef.__file__).parent / "cpp" / "include" / "nnef" / "comp" / "stdlib_source.h"
    return "".join(re.findall(r'R"STDLIB\((.*?)\)STDLIB"', header.read_text(), re.S))


def corpus_texts() -> list[tuple[str, str]]:
    texts = [(c.name, c.text) for c in valid_cases()]
    texts.append(("stdlib", "version 1.0;\nextension KHR_enable_fragment_definitions, "
                  "KHR_enable_operator_expressions;\n" + khronos_stdlib_text()))
    texts.append(("branch3_items", (ROOT / "examples" / "nnef" / "branch3_items.nnef").read_text()))
    return texts


@pytest.mark.parametrize("name,text", corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_print_parse_fixpoint(name: str, text: str) -> None:
    first = parse_text(text, name)
    assert first.document is not None, first.findings
    printed = print_document(first.document)
    second = parse_text(printed, name)
    assert second.document == first.document  # same tree, spans aside
    assert print_document(second.document) == printed  # text fixpoint
    assert print_document(first.document) == printed  # deterministic


def test_whole_khronos_stdlib_parses_with_counts() -> None:
    document = parse_text("version 1.0;\n" + khronos_stdlib_text(), "stdlib").document
    assert document is not None
    assert len(document.fragments) == 119
    assert sum(1 for f in document.fragments if f.body is None) == 73


def test_every_literal_form() -> None:
    text = ("version 1.0;\ngraph G( x ) -> ( y )\n{\n    # a comment\n"
            "    x = external<scalar>(shape = [2]);  # trailing comment\n"
            "    y = pad(x, padding = [(0, 1)], border = \"constant\", value = -1.5e-3);\n}\n")
    call = parse_text(text).document.graphs[0].body[1].rhs
    values = {a.name.value: a.value for a in call.args if a.name}
    assert values["border"] == ast.Literal("constant", "string")
    assert values["value"] == ast.Unary("-", ast.Literal(float(__import__("numpy").float32(1.5e-3)), "scalar"))
    exponent = parse_text(text.replace("-1.5e-3", "2E2")).document.graphs[0].body[1].rhs.args[-1].value
    assert exponent.value == 200.0 and exponent.kind == "scalar"
    bare = parse_text(text.replace("-1.5e-3", "2.")).document.graphs[0].body[1].rhs.args[-1].value
    assert bare.value == 2.0 and bare.kind == "scalar"
    logical = parse_text(text.replace("value = -1.5e-3", "value = 0.0").replace("x = external", "x = external")).document
    assert logical is not None


def test_spans_point_at_the_text() -> None:
    text = "version 1.0;\n\ngraph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1, 2]);\n    y = relu(x);\n}\n"
    graph = parse_text(text, "f.nnef").document.graphs[0]
    relu = graph.body[1]
    assert (relu.span.line, relu.span.column, relu.span.end_column) == (6, 5, 17)
    assert (relu.rhs.span.column, relu.rhs.span.end_column) == (9, 16)  # relu(x) including ')'
    assert relu.rhs.name.span.column == 9
    assert relu.rhs.args[0].span.column == 14
    assert (graph.span.line, graph.span.end_line) == (3, 7)
    array = graph.body[0].rhs.args[0].value
    assert (array.span.column, array.span.end_column) == (34, 40)  # [1, 2] including brackets


def test_graphitem_bracket_forms_print_canonically() -> None:
    bracketed = ("version 1.0;\ngraphitem ITEM1 dnn1( [e1] ) -> ( [y] )\n{\n"
                 "    e1 = external<scalar>(shape = [1]);\n    y = relu(e1);\n}\n")
    plain = bracketed.replace("[e1]", "e1").replace("[y]", "y")
    first, second = parse_text(bracketed).document, parse_text(plain).document
    assert first == second
    assert "graphitem ITEM1 dnn1( e1 ) -> ( y )" in print_document(first)


def test_operator_precedence() -> None:
    text = ("version 1.0;\nextension KHR_enable_operator_expressions;\ngraph G( x ) -> ( y )\n{\n"
            "    x = external<scalar>(shape = [1]);\n    y = x + x * x ^ 2.0 - -x;\n}\n")
    rhs = parse_text(text).document.graphs[0].body[1].rhs
    # ((x + (x * (x ^ 2.0))) - (-x))
    assert rhs.op == "-" and rhs.right == ast.Unary("-", ast.Identifier("x"))
    assert rhs.left.op == "+" and rhs.left.right.op == "*" and rhs.left.right.right.op == "^"
    printed = print_document(parse_text(text).document)
    assert "y = x + x * x ^ 2.0 - -x;" in printed


def test_printer_inserts_only_needed_parentheses() -> None:
    text = ("version 1.0;\nextension KHR_enable_operator_expressions;\ngraph G( x ) -> ( y )\n{\n"
            "    x = external<scalar>(shape = [1]);\n    y = (x - (x - x)) * (x + x) / ((x));\n}\n")
    printed = print_document(parse_text(text).document)
    assert "y = (x - (x - x)) * (x + x) / x;" in printed


@pytest.mark.parametrize("value,text", [(1.0, "1.0"), (0.1, "0.1"), (1e-5, "1e-05"), (-0.0, "-0.0"),
                                         (3.4028234663852886e38, "3.4028235e+38"), (100000.0, "100000.0")])
def test_scalar_format_is_shortest_float32(value: float, text: str) -> None:
    assert format_scalar(value) == text


def test_syntax_error_message_names_the_token() -> None:
    result = parse_text("version 1.0;\ngraph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1])\n    y = relu(x);\n}\n", "f")
    assert result.document is None
    finding = result.findings[0]
    assert (finding.code, finding.span.line, finding.span.column) == ("NNEF-E001", 5, 5)
    assert "unexpected identifier 'y'" in finding.message and "';'" in finding.message


def test_unexpected_end_of_file() -> None:
    finding = parse_text("version 1.0;\ngraph G( x ) -> ( y )\n{\n").findings[0]
    assert "end of file" in finding.message


def test_keywords_are_reserved() -> None:
    text = "version 1.0;\ngraph G( x ) -> ( for )\n{\n    x = external<scalar>(shape = [1]);\n    for = relu(x);\n}\n"
    assert parse_text(text).document is None


def test_parse_file_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "g.nnef"
    path.write_text("version 1.0;\n# commentaire: é\ngraph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [1]);\n}\n",
                    encoding="utf-8")
    assert parse_file(path).document is not None
