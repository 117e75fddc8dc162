"""execute.sanitizers: the ASan + UBSan build of a deployment run on its vectors passes on clean
code and fails on a planted out-of-bounds write and a planted signed overflow (pipeline/execute/sanitizers.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.execute.test_harness import BODY
from tests.execute.planted import flipped_outputs, qualified_item

from pipeline.execute.harness import run_harness
from pipeline.execute.sanitizers import SANITIZERS, sanitizer_result
from pipeline.ledger.checks import Verdict
from pipeline.toolchain.cc import compile_and_link

RUN_STEP = "NNEF_STEP(0, 0, epoch, nnef_op_c(T_x, T_c, nnef_arena_CPU0));"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("sanitize")
    code, inputs, expected, manifest = qualified_item(
        root, BODY, np.random.default_rng(2).standard_normal((5, 1, 2, 6, 6)).astype(np.float32))
    return root, code, inputs, expected, manifest


def _judge(setup, code: Path):
    root, _, inputs, expected, manifest = setup
    names = [o["name"] for o in manifest["outputs"]]

    def build(binary: Path):
        return compile_and_link(code, manifest["sources"], binary, 4, sanitize=True)

    def harness(binary: Path, outs: Path, **options):
        return run_harness(binary, inputs, outs, 5, **options)

    return sanitizer_result("m/d", build, harness, None, expected, names, 5, root)


def _planted(setup, tmp_path: Path, statement: str) -> Path:
    code = tmp_path / "code"
    shutil.copytree(setup[1], code)
    item = code / "CPU0" / "nnef_item_CPU0.c"
    text = item.read_text()
    assert RUN_STEP in text
    item.write_text(text.replace(RUN_STEP, RUN_STEP + " " + statement))
    return code


def test_clean_code_passes(setup):
    result = _judge(setup, setup[1])
    assert result.check_id == SANITIZERS and result.verdict is Verdict.PASS, result.reason
    assert result.measured["outputs_identical"] and "-fsanitize=address,undefined" in result.measured["flags"]


def test_an_out_of_bounds_write_fails(setup, tmp_path):
    result = _judge(setup, _planted(setup, tmp_path, "{ volatile int k = 200; T_c[k] = 0.0f; }"))   # arena + 328 of 320
    assert result.verdict is Verdict.FAIL and ("AddressSanitizer" in result.reason
                                               or "insufficient space" in result.reason), result.reason


def test_a_signed_overflow_fails(setup, tmp_path):
    result = _judge(setup, _planted(setup, tmp_path, "{ volatile int n = 2147483647; n = n + 1; }"))
    assert result.verdict is Verdict.FAIL and "runtime error" in result.reason, result.reason


def test_a_changed_output_fails(setup, tmp_path):
    """The sanitized build computing other bits than the qualified one (here: its outputs planted) fails."""
    root, code, inputs, expected, manifest = setup
    other = flipped_outputs(expected, tmp_path / "expected", manifest["outputs"][0]["name"])
    result = _judge((root, code, inputs, other, manifest), code)
    assert result.verdict is Verdict.FAIL and "differs from the qualified build" in result.reason, result.reason
