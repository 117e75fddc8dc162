"""trace.json and weights: written in the evidence shape, read back, reversed, and tampering seen."""

from __future__ import annotations

import json

import numpy as np
import pytest


from tests.codegen import cghelpers as H

from pipeline.codegen import tracecheck
from pipeline.nnef.tensorfile import write_tensor

BODY = """
    x = external<scalar>(shape = [2, 6]);
    w = variable<scalar>(shape = [5, 6], label = 'w');
    b = variable<scalar>(shape = [1, 5], label = 'b');
    k = constant<scalar>(shape = [1, 5], value = [0.5, -1.0, 2.0, 0.0, 3.0]);
    l = linear(x, w, b);
    m = mul(l, k);
    y = softmax(m, axes = [1]);
"""


@pytest.fixture()
def project(tmp_path):
    """A project root with artifacts/t/codegen/... so that the evidence reader finds the trace."""
    root = tmp_path
    split = H.single_item(root / "artifacts" / "t" / "split" / "unit", BODY,
                          {"w": np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 6),
                           "b": np.array([[0.1, 0.2, 0.3, 0.4, np.inf]], np.float32)})
    code = root / "artifacts" / "t" / "codegen" / "c" / "unit"
    H.generate(split, split, code, 4, root)
    return root, split, code / "CPU0"


def test_trace_shape_round_trip_and_reverse(project):
    from pipeline.evidence.codetrace import read_code_traces

    root, split, item = project
    traces, findings = read_code_traces("t", root)
    assert len(traces) == 1 and not findings, [f.message for f in findings]
    trace = json.loads((item / "trace.json").read_text())
    assert set(trace) == {"schema_version", "item", "target", "nnef_file", "nnef_sha256", "entries", "parts"}
    assert trace["target"] == "c" and trace["nnef_file"].endswith("CPU0.nnef")
    lines = (split / "CPU0.nnef").read_text().splitlines()
    instructions = [i + 1 for i, text in enumerate(lines) if "=" in text and "(" in text]
    assert sorted({e["nnef_line"] for e in trace["entries"]}) == instructions
    source = (item / "nnef_item_CPU0.c").read_text().splitlines()
    for e in trace["entries"]:
        if e["code_file"].endswith("nnef_item_CPU0.c") and "nnef_op_" in source[e["code_lines"][0] + 3 - 1]:
            first = e["code_lines"][0]
            assert tracecheck.code_to_nnef(trace, e["code_file"], first + 1) == [e["nnef_line"]]
    problems, measured = tracecheck.check_trace(item, root)
    assert problems == [] and measured["instructions"] == len(instructions)


def test_weights_are_the_tensor_files(project):
    root, _, item = project
    problems, measured = tracecheck.check_weights(item, root)
    assert problems == [] and measured["weight_arrays"] >= 2
    header = (item / "nnef_weights_CPU0.h").read_text()
    record = json.loads((item / "weights.json").read_text())
    for entry in record["arrays"]:
        assert entry["sha256"] in header and entry["file"] in header


def test_changed_tensor_file_and_changed_array_are_seen(project):
    root, split, item = project
    header = item / "nnef_weights_CPU0.h"
    text = header.read_text()
    first_value = text.split("= {\n", 1)[1].split(",", 1)[0].strip()
    header.write_text(text.replace(first_value, "0x1.8p+3f", 1))
    problems, _ = tracecheck.check_weights(item, root)
    assert any("values differ" in p for p in problems)
    header.write_text(text)
    write_tensor(split / "w.dat", np.zeros((5, 6), np.float32))
    problems, _ = tracecheck.check_weights(item, root)
    assert any("changed since the code was generated" in p for p in problems)


def test_missing_entry_and_edited_nnef_are_seen(project):
    root, split, item = project
    path = item / "trace.json"
    trace = json.loads(path.read_text())
    dropped = trace["entries"].pop()
    path.write_text(json.dumps(trace))
    problems, _ = tracecheck.check_trace(item, root)
    assert any(f"NNEF line {dropped['nnef_line']}" in p for p in problems)
    nnef = split / "CPU0.nnef"
    nnef.write_text(nnef.read_text() + "\n")
    problems, _ = tracecheck.check_trace(item, root)
    assert any("changed since the code was generated" in p for p in problems)


def test_every_function_names_its_nnef_line(project):
    _, _, item = project
    source = (item / "nnef_item_CPU0.c").read_text()
    for name in ("nnef_op_l", "nnef_op_m", "nnef_op_y"):
        head = source[:source.index(f"static void {name}(")]
        comment = head[head.rindex("/*"):]
        assert "CPU0.nnef:" in comment and "=" in comment


def test_every_line_of_the_program_is_in_the_trace(project):
    """Two-way: every non-blank line of every file the program compiles is in an instruction's entry or a named
    infrastructure part with the requirements it serves; the run function is one, the runtime another."""
    root, _, item = project
    folder = item.parent
    manifest = json.loads((folder / "build.json").read_text())
    problems, measured = tracecheck.check_coverage(folder, manifest["sources"] + manifest["headers"], root)
    assert problems == [] and measured["code_lines_outside_the_trace"] == 0 and measured["code_lines"] > 500
    trace = json.loads((item / "trace.json").read_text())
    parts = {p["part"].split(":")[0]: p for p in trace["parts"]}
    assert {"run function", "buffer plan", "runtime", "harness", "file header", "preamble"} <= set(parts)
    run = parts["run function"]
    source = (item / "nnef_item_CPU0.c").read_text().splitlines()
    assert run["code_file"].endswith("nnef_item_CPU0.c") and "HLR-EXE-003" in run["requirements"]
    assert source[run["code_lines"][0] - 1 + 1].startswith("void nnef_item_CPU0_run(") and source[run["code_lines"][1] - 1] == "}"
    runtime = [p["code_file"].rsplit("/", 1)[-1] for p in trace["parts"] if p["part"].startswith("runtime")]
    assert sorted(runtime) == ["nnef_runtime.c", "nnef_runtime.h", "nnef_sync.h"]


def test_a_line_in_no_entry_and_no_part_fails_the_trace_check(project):
    """A construct no rule names (a helper the generator never wrote before) is outside the trace: seen."""
    root, _, item = project
    folder = item.parent
    source = item / "nnef_item_CPU0.c"
    source.write_text(source.read_text() + "\nstatic int nnef_helper(void)\n{\n    return 1;\n}\n")
    manifest = json.loads((folder / "build.json").read_text())
    problems, measured = tracecheck.check_coverage(folder, manifest["sources"] + manifest["headers"], root)
    assert measured["code_lines_outside_the_trace"] == 4
    assert len(problems) == 1 and "nnef_item_CPU0.c" in problems[0] and "no named part" in problems[0]
    assert "static int nnef_helper" in problems[0]


def test_a_kernels_generation_time_tables_are_its_instructions_lines(tmp_path):
    """Index tables (IX_), literal biases (B_) and divisor tables (D_) are named after their function and traced
    to its instruction: nothing of them is left outside the trace."""
    body = """
    x = external<scalar>(shape = [1, 2, 5, 6]);
    p = avg_pool(x, size = [1, 1, 3, 3], border = 'ignore', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    f = variable<scalar>(shape = [2, 1, 3, 2], label = 'f');
    y = deconv(p, f, 0.5, border = 'constant', padding = [(0, 1), (2, 0)], stride = [2, 3], dilation = [1, 2], output_shape = [], groups = 2);
"""
    split = H.single_item(tmp_path / "split", body, {"f": np.ones((2, 1, 3, 2), np.float32)})
    code = tmp_path / "code"
    H.generate(split, split, code, 4, tmp_path)
    manifest = json.loads((code / "build.json").read_text())
    problems, measured = tracecheck.check_coverage(code, manifest["sources"] + manifest["headers"], tmp_path)
    assert problems == [] and measured["code_lines_outside_the_trace"] == 0
    trace = json.loads((code / "CPU0" / "trace.json").read_text())
    tables = [e for e in trace["entries"] if any(k in (tmp_path / e["code_file"]).read_text().splitlines()[e["code_lines"][0] - 1]
                                                 for k in ("Index tables", "Derived constants"))]
    assert tables and all(e["instruction"].startswith(("p = avg_pool", "y = deconv")) for e in tables)
    assert tracecheck.check_trace(code / "CPU0", tmp_path)[0] == []
