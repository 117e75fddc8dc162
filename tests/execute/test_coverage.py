"""execute.coverage: the gcov build of a deployment run on its validation and robustness vectors passes on
clean code, and fails on a planted generated line no vector reaches, on an unexecuted runtime line the
reviewed list does not name, on an output that differs from the qualified build's and on a crash on a
robustness vector; without gcov it is not run (pipeline/execute/coverage.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.execute.test_harness import BODY
from tests.execute.planted import flipped_outputs, qualified_item

from pipeline.codegen.c import RUNTIME_DIR
from pipeline.execute import coverage
from pipeline.execute.coverage import (COVERAGE, UNCOVERED_FILE, enclosing_function, reviewed_entries,
                                       robustness_vectors)
from pipeline.execute.harness import run_harness
from pipeline.ledger.checks import Verdict
from pipeline.nnef.tensorfile import read_tensor
from pipeline.toolchain.cc import compile_and_link

RUN_STEP = "NNEF_STEP(0, 0, epoch, nnef_op_c(T_x, T_c, nnef_arena_CPU0));"
RANGES = {"x": (-2.0, 3.0)}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not shutil.which("gcc") or coverage.find_gcov("gcc")[0] is None:
        pytest.skip("gcc or its gcov is not installed")
    root = tmp_path_factory.mktemp("coverage")
    code, inputs, expected, manifest = qualified_item(
        root, BODY, np.random.default_rng(2).uniform(-2, 3, (5, 1, 2, 6, 6)).astype(np.float32))
    return root, code, inputs, expected, manifest


def _judge(setup, code: Path, folder: Path, uncovered: Path = UNCOVERED_FILE, expected: Path | None = None):
    root, _, inputs, plain_outputs, manifest = setup
    names = [o["name"] for o in manifest["outputs"]]

    def build(binary: Path):
        return compile_and_link(code, manifest["sources"], binary, 4, coverage=True)

    def harness(binary: Path, outs: Path, **options):
        return run_harness(binary, inputs, outs, 5, **options)

    def harness_on(vectors: Path, count: int):
        return lambda binary, outs, **options: run_harness(binary, vectors, outs, count, **options)

    return coverage.coverage_result("m/d", "gcc", build, harness, harness_on, None, inputs, expected or plain_outputs,
                                    names, 5, folder, code, root, RANGES, uncovered=uncovered)


def _planted(setup, tmp_path: Path, statement: str) -> Path:
    code = tmp_path / "code"
    shutil.copytree(setup[1], code)
    item = code / "CPU0" / "nnef_item_CPU0.c"
    text = item.read_text()
    assert RUN_STEP in text
    item.write_text(text.replace(RUN_STEP, RUN_STEP + "\n" + statement))
    return code


@pytest.fixture(scope="module")
def clean(setup, tmp_path_factory):
    return _judge(setup, setup[1], tmp_path_factory.mktemp("clean") / "coverage")


def test_clean_code_passes(clean):
    assert clean.check_id == COVERAGE and clean.verdict is Verdict.PASS, clean.reason
    files = clean.measured["files"]
    item = files["CPU0/nnef_item_CPU0.c"]
    assert item["role"] == "generated" and item["lines"] > 20 and item["line_percent"] == 100.0, item
    assert files["nnef_main.c"]["role"] == "harness" and files["nnef_runtime.c"]["role"] == "runtime"
    assert 0 < files["nnef_main.c"]["lines_executed"] < files["nnef_main.c"]["lines"]
    assert clean.measured["outputs_identical"] and "--coverage" in clean.measured["flags"]
    assert any(p.endswith("coverage.json") for p in clean.written)


def test_a_listed_runtime_line_passes_with_its_reason(clean):
    listed = clean.measured["listed"]
    trace = listed["nnef_runtime.c:nnef_trace_write"]
    assert "instrumented build" in trace["reason"] and trace["lines"], trace
    assert any(key.startswith("nnef_main.c:open_input: ") for key in listed), sorted(listed)


def test_the_evidence_holds_the_counts_and_the_robustness_vectors(clean):
    folder = Path(next(p for p in clean.written if p.endswith("coverage.json"))).parent
    document = json.loads((folder / "coverage.json").read_text())
    assert document["robustness_vectors"][:3] == ["nan", "+inf", "-inf"] and "range high" in document["robustness_vectors"]
    lines = document["files"]["CPU0/nnef_item_CPU0.c"]["lines"]
    assert lines and all(count > 0 for count in lines.values())
    vectors = read_tensor(folder / "robustness" / "x.dat")
    assert vectors.shape == (len(document["robustness_vectors"]), 1, 2, 6, 6)


def test_a_generated_line_no_vector_reaches_fails(setup, tmp_path):
    """A branch on one NaN payload (0x7fc00001) no validation or robustness vector holds: its line is never run."""
    code = _planted(setup, tmp_path, "{ uint32_t b; memcpy(&b, &T_x[0], sizeof b);\n"
                                     "  if (b == 0x7fc00001u) {\n    T_c[0] = 1.0f;\n  }\n}")
    result = _judge(setup, code, tmp_path / "coverage")
    assert result.verdict is Verdict.FAIL and "generated lines never executed" in result.reason, result.reason
    assert "CPU0/nnef_item_CPU0.c" in result.reason and "T_c[0] = 1.0f;" in result.reason
    assert result.measured["files"]["CPU0/nnef_item_CPU0.c"]["line_percent"] < 100.0


def test_a_generated_line_only_a_robustness_vector_reaches_passes(setup, tmp_path):
    """The same branch on a NaN (any payload): the robustness vectors reach it, the validation vectors do not."""
    code = _planted(setup, tmp_path, "if (T_x[0] != T_x[0]) {\n  T_c[0] = T_x[0];\n}")
    result = _judge(setup, code, tmp_path / "coverage")
    assert result.verdict is Verdict.PASS, result.reason


def _without(tmp_path: Path, drop) -> Path:
    document = json.loads(UNCOVERED_FILE.read_text())
    document["lines"] = [e for e in document["lines"] if not drop(e)]
    path = tmp_path / "uncovered.json"
    path.write_text(json.dumps(document))
    return path


def test_an_unlisted_runtime_line_fails(setup, tmp_path):
    uncovered = _without(tmp_path, lambda e: e["function"] == "nnef_trace_write")
    result = _judge(setup, setup[1], tmp_path / "coverage", uncovered)
    assert result.verdict is Verdict.FAIL and "not listed" in result.reason, result.reason
    assert "nnef_runtime.c" in result.reason and "nnef_trace_write" in result.reason


def test_a_function_entry_does_not_cover_a_function_that_ran(setup, tmp_path):
    """An entry without a text covers a function never entered; main ran, so its error lines need their texts."""
    document = json.loads(_without(tmp_path, lambda e: e["function"] == "main").read_text())
    document["lines"].append({"file": "nnef_main.c", "function": "main", "reason": "all of main"})
    path = tmp_path / "uncovered.json"
    path.write_text(json.dumps(document))
    result = _judge(setup, setup[1], tmp_path / "coverage", path)
    assert result.verdict is Verdict.FAIL and "(in main)" in result.reason, result.reason


def test_an_output_differing_from_the_qualified_build_fails(setup, tmp_path):
    root, code, inputs, expected, manifest = setup
    other = flipped_outputs(expected, tmp_path / "expected", manifest["outputs"][0]["name"])
    result = _judge(setup, code, tmp_path / "coverage", expected=other)
    assert result.verdict is Verdict.FAIL and "differs from the qualified build" in result.reason, result.reason


def test_a_crash_on_a_robustness_vector_fails(setup, tmp_path):
    code = _planted(setup, tmp_path, "if (T_x[0] != T_x[0]) {\n  __builtin_trap();\n}")
    result = _judge(setup, code, tmp_path / "coverage")
    assert result.verdict is Verdict.FAIL and "robustness vectors" in result.reason, result.reason


def test_without_gcov_it_is_not_run(setup, tmp_path, monkeypatch):
    real = shutil.which
    monkeypatch.setattr(coverage.shutil, "which", lambda name, *a, **k: None if "gcov" in name else real(name, *a, **k))
    result = _judge(setup, setup[1], tmp_path / "coverage")
    assert result.verdict is Verdict.NOT_RUN and "Debian package gcc-" in result.reason, result.reason


def test_robustness_vectors():
    vectors = dict(robustness_vectors({"a": (2, 3)}, {"a": (-1.5, 4.0)}))
    assert np.isnan(vectors["nan"]["a"]).all() and (vectors["+inf"]["a"] == np.inf).all()
    assert (vectors["-0"]["a"].view("u4") == 0x80000000).all() and (vectors["+0"]["a"].view("u4") == 0).all()
    subnormal = np.abs(vectors["subnormals"]["a"])
    assert ((subnormal > 0) & (subnormal < np.finfo(np.float32).tiny)).any()
    assert (vectors["range low"]["a"] == -1.5).all() and (vectors["range high"]["a"] == 4.0).all()
    assert len(set(vectors["equal"]["a"].ravel().tolist())) == 1
    assert all(v["a"].dtype == np.float32 and v["a"].shape == (2, 3) for v in vectors.values())
    assert "range low" not in dict(robustness_vectors({"a": (2,)}, {}))


def test_every_reviewed_entry_names_lines_of_the_runtime():
    """Each entry of uncovered.json names a function of its runtime file, and its text (if any) is a line of it:
    a stale entry (the runtime changed) is found here, not left to match nothing."""
    proxy = (Path(coverage.__file__).parents[1] / "codegen" / "nvdla" / "proxy.py").read_text()
    for entry in reviewed_entries():
        if entry.file == coverage.PROXY:       # written by a generator: its functions are named in its source
            assert entry.function.replace(coverage.ITEM, "{name}") in proxy, entry
            continue
        source = (RUNTIME_DIR / entry.file).read_text().splitlines()
        functions = {enclosing_function(source, n + 1) for n in range(len(source))}
        assert entry.function in functions, entry
        if entry.text:
            hits = [n + 1 for n, line in enumerate(source) if " ".join(line.split()) == entry.text]
            assert any(enclosing_function(source, n) == entry.function for n in hits), entry


def test_a_generated_line_cannot_be_listed(tmp_path):
    path = tmp_path / "uncovered.json"
    path.write_text(json.dumps({"schema_version": 1, "lines": [{"file": "nnef_item_CPU0.c", "function": "f",
                                                                "reason": "r"}]}))
    with pytest.raises(ValueError, match="never listed"):
        reviewed_entries(path)


def test_enclosing_function():
    source = (RUNTIME_DIR / "nnef_main.c").read_text().splitlines()
    line = next(n + 1 for n, text in enumerate(source) if "RUN-E010" in text)
    assert enclosing_function(source, line) == "open_input"
    line = next(n + 1 for n, text in enumerate(source) if "nnef_vector_index = v;" in text)
    assert enclosing_function(source, line) == "nnef_vector_start"
