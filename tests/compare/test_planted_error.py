"""A one-ULP error planted in generated code is caught by the 0-ULP comparison.

The generated weights header is edited in place (one weight moved to the next float32), the
code rebuilt and run: the comparison with the reference semantics must fail and name the
first diverging element, while the untouched code is bit-identical. This is the failure
`doit verify` turns into a failed HLR-NUM-001 (tests/evidence/test_evidence_platforms.py
shows a failing check failing the run).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from pipeline.compare.numeric import compare
from tests.codegen import cghelpers as H

BODY = """
    x = external<scalar>(shape = [1, 2, 6, 6]);
    f = variable<scalar>(shape = [3, 2, 3, 3], label = 'f');
    y = conv(x, f, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
"""


def _next_float(literal: str) -> str:
    value = np.float32(float.fromhex(literal))
    return float(np.nextafter(value, np.float32(np.inf), dtype=np.float32)).hex()


def test_one_ulp_in_a_weight_fails_the_comparison(tmp_path) -> None:  # type: ignore[no-untyped-def]
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    rng = np.random.default_rng(5)
    weights = {"f": rng.standard_normal((3, 2, 3, 3)).astype(np.float32)}
    split = H.single_item(tmp_path / "split", BODY, weights)
    code = tmp_path / "code"
    H.generate(split, split, code, 4, tmp_path)
    inputs = {"x": rng.standard_normal((4, 1, 2, 6, 6)).astype(np.float32)}
    expected = H.reference(split / "CPU0.nnef", inputs, weights, ["y"])
    clean = H.run(H.build(code, 4), inputs, tmp_path / "clean", ["y"])
    assert compare(clean, expected, exact=True).passed

    header = next(code.rglob("nnef_weights_CPU0.h"))
    text = header.read_text(encoding="utf-8")
    literal = re.search(r"-?0x1\.[0-9a-f]+p[+-]\d+", text)
    assert literal is not None
    header.write_text(text[:literal.start()] + _next_float(literal.group(0)) + text[literal.end():], encoding="utf-8")
    planted = H.run(H.build(code, 4, name="nnef_run_planted"), inputs, tmp_path / "planted", ["y"])
    result = compare(planted, expected, exact=True)
    assert not result.passed
    assert "not bit-identical: first divergence" in result.outputs[0].reason
