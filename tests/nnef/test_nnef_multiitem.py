"""The multi-item extension: the paper's worked example, and its consistency rules."""

from __future__ import annotations

from pathlib import Path

from pipeline.nnef.checker import check_paths, check_text

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "nnef" / "branch3_items.nnef"


def test_worked_example_is_clean() -> None:
    report = check_paths([EXAMPLE], tensors=False)
    assert report.findings == []
    items = {g.item: g for g in report.graphs}
    assert set(items) == {"ITEM1", "ITEM2", "ITEM3"}
    send = next(op for op in items["ITEM1"].operations if op.name == "send_var")
    assert send.attribs["dest"] == ["ITEM2", "ITEM3"]
    get = next(op for op in items["ITEM2"].operations if op.name == "get_var")
    assert get.attribs["source"] == "ITEM1" and get.inputs["data"].name == "s1"
    assert items["ITEM1"].tensors["o7"].shape == [1, 2048]


def test_items_may_be_split_over_files(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    blocks = text.split("graphitem ")[1:]
    paths = []
    for index, block in enumerate(blocks):
        path = tmp_path / f"item{index}.nnef"
        path.write_text("version 1.0;\n\ngraphitem " + block)
        paths.append(path)
    assert check_paths(paths, tensors=False).findings == []
    alone = check_paths(paths[1:2], tensors=False)
    assert alone.ok and {f.code for f in alone.findings} == {"NNEF-N074"}


def test_variablesync_then_send_var_is_the_only_allowed_reassignment() -> None:
    text = EXAMPLE.read_text().replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o3);\n    o3 = relu(o2);")
    codes = [f.code for f in check_text(text).findings if f.is_error]
    assert codes == ["NNEF-E011"]


def test_a_sync_variable_sent_twice() -> None:
    text = EXAMPLE.read_text().replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o3);\n    s2 = send_var([ITEM1], o2);")
    assert "NNEF-E071" in {f.code for f in check_text(text).findings}


def test_a_paper_listing_slip_is_caught() -> None:
    # The paper's ITEM2 convolves e1 instead of o1: e1 is not declared in ITEM2.
    original = EXAMPLE.read_text()
    line = original[:original.index("o2 = conv(o1, v3")].count("\n") + 1
    text = original.replace("o2 = conv(o1, v3", "o2 = conv(e1, v3")
    findings = [f for f in check_text(text).findings if f.is_error]
    assert [(f.code, f.span.line) for f in findings] == [("NNEF-E010", line)]
