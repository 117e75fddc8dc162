"""codegen.standards (MISRA C:2012 by cppcheck's addon) can go red: a shipped-shape deployment passes
with only documented deviations, a planted violation no deviation covers fails naming its rule, file
and line, a deviation taken out of the file makes its findings fail, a missing cppcheck is `not run`,
and hostile XML is a coded error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.codegen import cghelpers as H

from pipeline.codegen import checks, standards
from pipeline.codegen.shared.errors import CodegenError
from pipeline.files import schema
from pipeline.ledger.checks import Verdict

from tests.codegen.test_static import BODY   # the same small conv + relu + max_pool item


needs_cppcheck = pytest.mark.skipif(shutil.which("cppcheck") is None, reason="cppcheck is not installed")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("standards")
    split = H.single_item(root / "split", BODY, {"f": np.ones((4, 3, 3, 3), np.float32) * 0.25,
                                                 "b": np.arange(4, dtype=np.float32).reshape(1, 4)})
    code = root / "code"
    H.generate(split, split, code, 4, root)
    return code


def _judge(code: Path, tmp: Path, deviations: Path = standards.DEVIATIONS_FILE):
    manifest = json.loads((code / "build.json").read_text())
    return standards.standards_result(checks.STANDARDS, "m/d", code, manifest, tmp / "scratch", [], deviations)


def _xml(errors: str) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<results version="2"><cppcheck version="2.10"/>'
            f"<errors>{errors}</errors></results>")


def test_deviations_file_follows_its_schema_and_gives_every_reason():
    document = json.loads(standards.DEVIATIONS_FILE.read_text())
    assert schema.validate(document, "misra-deviations-1", "CODEGEN-E011") == []
    deviations = standards.load_deviations()
    assert deviations and all(len(d.reason) > 40 for d in deviations)


@needs_cppcheck
def test_clean_generated_code_passes_with_only_documented_deviations(generated, tmp_path):
    result = _judge(generated, tmp_path)
    assert result.verdict is Verdict.PASS, result.reason
    assert result.measured["findings"] > 0 and result.measured["not_deviated"] == 0
    assert result.measured["deviated"] == result.measured["findings"]
    assert "18.4" in result.measured["findings_by_rule"]          # the arena's pointer arithmetic, deviated
    assert result.measured["cppcheck"].startswith("Cppcheck 2.")
    assert "pipeline/codegen/misra-deviations.json" in result.read


@needs_cppcheck
def test_planted_goto_fails_with_rule_file_and_line(generated, tmp_path):
    copy = H.copy_tree(generated, tmp_path / "planted")
    item = copy / "CPU0" / "nnef_item_CPU0.c"
    text = item.read_text()
    lines = text.count("\n")
    item.write_text(text + "static int nnef_planted(int v)\n{\n    int r = v;\n    goto done;\ndone:\n    return r;\n}\n")
    result = _judge(copy, tmp_path)
    assert result.verdict is Verdict.FAIL
    expected = f"MISRA C:2012 rule 15.1 at CPU0/nnef_item_CPU0.c:{lines + 4}"
    assert any(expected == f for f in result.measured["first_not_deviated"]), result.measured["first_not_deviated"]
    assert "no deviation in misra-deviations.json covers it" in result.reason


@needs_cppcheck
def test_a_deviation_taken_out_makes_its_findings_fail(generated, tmp_path):
    document = json.loads(standards.DEVIATIONS_FILE.read_text())
    kept = [d for d in document["deviations"] if d["rule"] != "18.4"]
    assert len(kept) < len(document["deviations"])
    reduced = tmp_path / "misra-deviations.json"
    reduced.write_text(json.dumps({**document, "deviations": kept}))
    result = _judge(generated, tmp_path, reduced)
    assert result.verdict is Verdict.FAIL
    assert "rule 18.4 at " in result.reason
    assert all(" 18.4 " in f for f in result.measured["first_not_deviated"])


def test_missing_cppcheck_is_not_run_naming_it(generated, tmp_path, monkeypatch):
    monkeypatch.setattr(standards.shutil, "which", lambda name: None)
    result = _judge(generated, tmp_path)
    assert result.verdict is Verdict.NOT_RUN
    assert "cppcheck is not installed" in result.reason and "Debian package cppcheck" in result.reason


def test_findings_are_parsed_deduplicated_and_placed(tmp_path):
    error = ('<error id="misra-c2012-18.4" severity="style" msg="m"><location file="{f}" line="{l}" column="3"/></error>')
    text = _xml(error.format(f="CPU0/a.c", l=7) + error.format(f="CPU0/a.c", l=7)
                + '<error id="uninitvar" severity="error" msg="u"><location file="b.c" line="2" column="1"/></error>'
                + '<error id="misra-config" severity="style" msg="c"><location file="b.c" line="9" column="1"/></error>')
    findings, unread = standards.parse_findings(text, tmp_path)
    assert [(f.rule, f.file, f.line) for f in findings] == [("18.4", "CPU0/a.c", 7), ("config", "b.c", 9)]
    assert unread == []
    findings, unread = standards.parse_findings(_xml('<error id="syntaxError" msg="bad"><location file="c.c" line="1"/>'
                                                     "</error>"), tmp_path)
    assert findings == [] and unread and unread[0].startswith("syntaxError at c.c:1")


@pytest.mark.parametrize("text", [
    "<results><errors><error id='misra-c2012-1.1'>",                                  # truncated
    "not xml at all",
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]><results><errors/></results>',   # entities
    "<other><errors/></other>",                                                         # another format
    _xml('<error id="misra-c2012-../../x" msg="m"><location file="a.c" line="1"/></error>'),
    "<results>" + "<a>" * 5000 + "</a>" * 5000 + "</results>",                        # deep
])
def test_hostile_xml_is_a_coded_error(text, tmp_path):
    with pytest.raises(CodegenError) as raised:
        standards.parse_findings(text, tmp_path)
    assert raised.value.code == "CODEGEN-E012"


def test_a_bad_deviations_file_is_a_coded_error(tmp_path):
    bad = tmp_path / "d.json"
    bad.write_text(json.dumps({"schema_version": 1, "deviations": [{"rule": "18.4", "files": ["*.c"],
                                                                     "construct": "x", "reason": "y"}]}))
    with pytest.raises(CodegenError) as raised:
        standards.load_deviations(bad)
    assert raised.value.code == "CODEGEN-E011"
    bad.write_text("{")
    with pytest.raises(CodegenError):
        standards.load_deviations(bad)


def test_weights_reduction_keeps_lines_and_constructs():
    rows = "    0x1.8p+0f, -0x1p-1f, INFINITY, NAN,\n" * 3
    text = (f"/* w */\nstatic const float W_a[12] NNEF_ALIGNED(64) = {{\n{rows}}};\n"
            "static const float W_b[2] NNEF_ALIGNED(64) = {\n    W_a_0, 1,\n};\n")
    reduced = standards.reduce_weights(text)
    assert reduced.count("\n") == text.count("\n")
    lines = reduced.split("\n")
    assert lines[1] == "static const float W_a[4] NNEF_ALIGNED(64) = {"
    assert lines[2] == "    0x1.8p+0f, -0x1p-1f, INFINITY, NAN" and lines[3] == lines[4] == "" and lines[5] == "};"
    assert lines[6:] == text.split("\n")[6:]                       # not only literals: kept whole


def test_deviation_scope_is_rule_and_file_pattern():
    deviation = standards.Deviation("18.4", ("CPU*/nnef_item_*.c",), "arena", "the plan")
    assert deviation.covers(standards.Finding("18.4", "CPU0/nnef_item_CPU0.c", 3))
    assert not deviation.covers(standards.Finding("18.4", "nnef_main.c", 3))
    assert not deviation.covers(standards.Finding("18.2", "CPU0/nnef_item_CPU0.c", 3))
    uncovered, used = standards.judge([standards.Finding("18.4", "nnef_main.c", 3)], [deviation])
    assert len(uncovered) == 1 and used == {0: 0}
