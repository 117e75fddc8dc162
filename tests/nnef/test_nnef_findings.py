"""One test per finding code: the code is reported, at the right line and column.

Texts are small on purpose: the line and column asserted are where a reader would put
the caret. Every code in pipeline.nnef.findings is exercised here (a test checks that).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pipeline.nnef.checker import check_paths, check_text
from pipeline.nnef.findings import CODES, findings_markdown
from pipeline.nnef.tensorfile import write_tensor

CONV = "border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1"


def graph(*body: str, params: str = "x", results: str = "y", header: str = "version 1.0;\n") -> str:
    lines = [header, f"graph G( {params} ) -> ( {results} )", "{",
             "    x = external<scalar>(shape = [1, 2, 4, 4]);"]
    lines += [f"    {line}" for line in body]
    lines.append("}")
    return "\n".join(lines) + "\n"


def located(text: str, profile: str = "certification") -> set[tuple[str, int, int]]:
    report = check_text(text, "g.nnef", profile=profile)
    return {(f.code, f.span.line, f.span.column) for f in report.findings if f.span}


# code -> (text, line, column)
CASES: dict[str, tuple[str, int, int]] = {
    "NNEF-E001": (graph("y = relu(x) + ;"), 6, 19),
    "NNEF-E002": ("version 1.1;\ngraph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [1]);\n}\n", 1, 9),
    "NNEF-E004": ("version 1.0;\n", 1, 1),
    "NNEF-E005": (graph("y = relu(x * 2.0);"), 6, 14),
    "NNEF-E006": ("version 1.0;\nfragment f( a: tensor<scalar> ) -> ( b: tensor<scalar> );\n"
                  "graph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [1]);\n}\n", 2, 10),
    "NNEF-E007": ("version 1.0;\nextension KHR_unknown;\ngraph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [1]);\n}\n", 2, 11),
    "NNEF-E008": (graph("y = reshape(x, shape = shape_of(x), axis_start = 0, axis_count = -1);",
                        header="version 1.0;\nextension KHR_enable_operator_expressions;\n"), 7, 28),
    "NNEF-E009": (graph("y = transpose(x, axes = [0, 1, 2, 3][7:8] + [1, 2][5]);",
                        header="version 1.0;\nextension KHR_enable_operator_expressions;\n"), 7, 49),
    "NNEF-E010": (graph("y = relu(z);"), 6, 14),
    "NNEF-E011": (graph("y = relu(x);", "y = sigmoid(x);"), 7, 5),
    "NNEF-E012": (graph("y = rectify(x);"), 6, 9),
    "NNEF-E013": (graph("y = relu(x, x);"), 6, 17),
    "NNEF-E014": (graph("y = leaky_relu(x, slope = 0.1);"), 6, 23),
    "NNEF-E015": (graph("y = leaky_relu(x, alpha = 'big');"), 6, 23),
    "NNEF-E016": (graph("y = leaky_relu(x, alpha = 0.1, alpha = 0.2);"), 6, 36),
    "NNEF-E017": (graph("[y, z] = relu(x);"), 6, 5),
    "NNEF-E018": (graph("y = leaky_relu(x, 0.1);"), 6, 23),
    "NNEF-E019": ("version 1.0;\nextension KHR_enable_fragment_definitions;\n"
                  "fragment relu( x: tensor<scalar> ) -> ( y: tensor<scalar> );\n"
                  "graph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [1]);\n}\n", 3, 10),
    "NNEF-E020": (graph("w = variable<scalar>(shape = [4, 3, 3, 3], label = 'w');",
                        f"y = conv(x, w, 0.0, {CONV});"), 7, 9),
    "NNEF-E021": (graph("w = variable<scalar>(shape = [4, 2, 3, 3], label = 'w');",
                        "y = conv(x, w, 0.0, border = 'zero', padding = [(1, 1), (1, 1)], stride = [1, 1], "
                        "dilation = [1, 1], groups = 1);"), 7, 25),
    "NNEF-E022": (graph("y = reshape(x, shape = [1, 99999999999999999999], axis_start = 0, axis_count = -1);"), 6, 32),
    "NNEF-E043": (graph("y = relu(x);", results="y, y"), 3, 22),
    "NNEF-E040": ("version 1.0;\ngraph G( x ) -> ( y )\n{\n    x = variable<scalar>(shape = [1], label = 'x');\n"
                  "    y = relu(x);\n}\n", 4, 5),
    "NNEF-E041": (graph("z = relu(x);", results="y, z"), 3, 19),
    "NNEF-E042": (graph("t = external<scalar>(shape = [1, 2, 4, 4]);", "y = add(x, t);"), 6, 5),
    "NNEF-W050": (graph("t = relu(x);", "y = sigmoid(x);"), 6, 9),
    "NNEF-W051": ("version 1.0;\nextension KHR_enable_fragment_definitions;\n"
                  "fragment magic( a: tensor<scalar> ) -> ( b: tensor<scalar> );\n"
                  "graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1]);\n    y = magic(x);\n}\n", 7, 9),
    "NNEF-E060": (graph("y = softmax(x);"), 6, 9),
    "NNEF-E061": (graph("y = max_pool(x, size = [1, 1, 2, 2], border = 'ignore', padding = [], "
                        "stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);"), 6, 61),
    "NNEF-E062": ("version 1.0;\ngraph G( x ) -> ( x )\n{\n    x = external(shape = [1]);\n}\n", 4, 9),
}

MULTI_ITEM_HEADER = "version 1.0;\n\n"


def items(*definitions: str) -> str:
    return MULTI_ITEM_HEADER + "\n".join(definitions)


WRITER = """graphitem A a( x ) -> ( s )
{
    x = external<scalar>(shape = [1, 4]);
    s = variablesync<scalar>(shape = [1, 4]);
    t = relu(x);
    s = send_var([B], t);
}
"""
READER = """graphitem B b( s ) -> ( y )
{
    s = variablesync<scalar>(shape = [1, 4]);
    u = get_var(A, s);
    y = sigmoid(u);
}
"""

SILENT = """graphitem C c( z ) -> ( w )
{
    z = external<scalar>(shape = [1, 4]);
    w = relu(z);
}
"""

MULTI_ITEM_CASES: dict[str, tuple[str, int, int]] = {
    "NNEF-E070": (items(WRITER.replace("send_var([B], t)", "send_var([C], t)"), READER), 14, 9),
    "NNEF-E071": (items(WRITER, READER.replace("u = get_var(A, s);", "u = get_var(A, s);\n    s = send_var([A], u);")), 15, 9),
    "NNEF-E072": (items(WRITER, READER.replace("shape = [1, 4]", "shape = [1, 5]")), 13, 9),
    "NNEF-E073": (items(WRITER.replace("    s = variablesync<scalar>(shape = [1, 4]);\n", ""), READER), 7, 5),
    "NNEF-N074": (items(WRITER.replace("send_var([B], t)", "send_var([B, C], t)"), READER), 8, 9),
    "NNEF-E075": (items(WRITER, READER.replace("y = sigmoid(u);", "x = external<scalar>(shape = [2, 4]);\n    y = sigmoid(u);")
                        .replace("( s ) -> ( y )", "( s, x ) -> ( y )")), 15, 9),
    "NNEF-E076": (items(WRITER, READER, READER.replace("graphitem B b", "graphitem B c")), 18, 11),
    "NNEF-E077": (items(WRITER, READER.replace("get_var(A, s)", "get_var(B, s)")), 14, 9),
    "NNEF-E078": (items(WRITER, READER.replace("y = sigmoid(u);", "y = add(u, s);")), 15, 9),
    "NNEF-W079": (items(WRITER.replace("send_var([B], t)", "send_var([B, C], t)"), READER, SILENT), 8, 9),
    "NNEF-E080": (items(WRITER, READER.replace("-> ( y )", "-> ( y, s )")), 11, 28),
    "NNEF-E081": (graph("s = variablesync<scalar>(shape = [1, 2, 4, 4]);", "s = send_var([B], x);", "y = relu(x);"), 6, 9),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_finding_code_and_location(code: str) -> None:
    text, line, column = CASES[code]
    found = located(text)
    assert (code, line, column) in found, f"{code} not at {line}:{column}; found {sorted(found)}"


@pytest.mark.parametrize("code", sorted(MULTI_ITEM_CASES))
def test_multi_item_finding_code_and_location(code: str) -> None:
    text, line, column = MULTI_ITEM_CASES[code]
    found = located(text)
    assert (code, line, column) in found, f"{code} not at {line}:{column}; found {sorted(found)}"


def test_tensor_file_findings(tmp_path: Path) -> None:
    text = ("version 1.0;\n\ngraph G( x ) -> ( y, z, w )\n{\n"
            "    x = external<scalar>(shape = [1, 4]);\n"
            "    a = variable<scalar>(shape = [1, 4], label = 'a');\n"
            "    b = variable<scalar>(shape = [1, 4], label = 'b');\n"
            "    c = variable<scalar>(shape = [1, 4], label = 'sub/c');\n"
            "    y = add(x, a);\n    z = add(x, b);\n    w = add(x, c);\n}\n")
    (tmp_path / "graph.nnef").write_text(text)
    write_tensor(tmp_path / "a.dat", np.zeros((1, 5), np.float32))
    (tmp_path / "b.dat").write_bytes(b"\x00\x01" + bytes(200))
    report = check_paths([tmp_path])
    found = {(f.code, f.span.line) for f in report.findings}
    assert ("NNEF-E031", 6) in found  # shape [1, 5] in the file, [1, 4] declared
    assert ("NNEF-E032", 7) in found  # bad magic
    assert ("NNEF-E030", 8) in found  # sub/c.dat missing
    assert not report.ok


def test_tensor_file_item_type_mismatch(tmp_path: Path) -> None:
    text = ("version 1.0;\n\ngraph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [2]);\n"
            "    a = variable<scalar>(shape = [2], label = 'a');\n    y = add(x, a);\n}\n")
    (tmp_path / "graph.nnef").write_text(text)
    write_tensor(tmp_path / "a.dat", np.zeros(2, np.int32))
    codes = {f.code for f in check_paths([tmp_path]).findings}
    assert "NNEF-E031" in codes


def test_every_code_is_exercised() -> None:
    exercised = set(CASES) | set(MULTI_ITEM_CASES) | {"NNEF-E003", "NNEF-E030", "NNEF-E031", "NNEF-E032",
                                                         "NNEF-E033", "NNEF-E034"}  # E033, E034: test_nnef_hostile
    assert exercised == set(CODES)


def test_unreadable_file_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "bad.nnef"
    path.write_bytes(b"version 1.0;\n\xff\xfe")
    codes = {f.code for f in check_paths([path]).findings}
    assert codes == {"NNEF-E003"}


def test_explicitness_is_a_warning_in_the_standard_profile() -> None:
    report = check_text(CASES["NNEF-E060"][0], profile="standard")
    assert report.ok
    assert any(f.code == "NNEF-E060" and f.severity.value == "warning" for f in report.findings)
    assert not check_text(CASES["NNEF-E060"][0], profile="certification").ok


def test_all_findings_are_reported_not_just_the_first() -> None:
    text = graph("a = rectify(x);", "b = relu(q);", "y = leaky_relu(x, alpha = 1);")
    codes = [f.code for f in check_text(text).findings if f.is_error]
    assert {"NNEF-E012", "NNEF-E010", "NNEF-E015"} <= set(codes)


def test_several_syntax_errors_are_reported() -> None:
    text = graph("a = relu(x) + ;", "b = relu(x) @ 1;", "y = relu(x);")
    lines = sorted(f.span.line for f in check_text(text).findings if f.code == "NNEF-E001")
    assert lines == [6, 7]


def test_no_cascade_after_a_failed_instruction() -> None:
    text = graph("w = variable<scalar>(shape = [4, 3, 3, 3], label = 'w');",
                 f"c = conv(x, w, 0.0, {CONV});", "y = relu(c);")
    codes = [f.code for f in check_text(text).findings if f.is_error]
    assert codes == ["NNEF-E020"]


def test_findings_docs_are_generated_from_the_code_table() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "nnef-findings.md").read_text()
    assert doc == findings_markdown()
    assert set(re.findall(r"NNEF-[EWN]\d{3}", doc)) == set(CODES)
