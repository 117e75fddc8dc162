"""Parameters linked as a binary file (.incbin): same executable results, same trace checks, tampering seen."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.codegen import cghelpers as H

from pipeline.codegen import tracecheck
from pipeline.codegen.shared import contract as item_module
from pipeline.codegen.static import forbidden_constructs

BODY = """
    x = external<scalar>(shape = [2, 3, 8, 8]);
    f = variable<scalar>(shape = [4, 3, 3, 3], label = 'f');
    b = variable<scalar>(shape = [1, 4], label = 'b');
    w = variable<scalar>(shape = [5, 36], label = 'w');
    c = conv(x, f, b, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    r = relu(c);
    p = max_pool(r, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    q = reshape(p, shape = [2, 36], axis_start = 0, axis_count = -1);
    y = linear(q, w, 0.0);
"""


def _variables() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"f": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
            "b": rng.standard_normal((1, 4)).astype(np.float32),
            "w": (rng.standard_normal((5, 36)) * 0.1).astype(np.float32)}


@pytest.fixture()
def both(tmp_path, monkeypatch):
    """The same item generated with text weights and with linked binary weights."""
    root = tmp_path
    split = H.single_item(root / "artifacts" / "t" / "split" / "unit", BODY, _variables())
    text_code = root / "artifacts" / "t" / "codegen" / "c" / "text"
    H.generate(split, split, text_code, 4, root)
    monkeypatch.setattr(item_module, "BLOB_MIN_FLOATS", 0)
    blob_code = root / "artifacts" / "t" / "codegen" / "c" / "unit"
    H.generate(split, split, blob_code, 4, root)
    return root, split, text_code, blob_code


def test_linked_weights_give_the_same_bits_as_text_weights(both, tmp_path):
    root, split, text_code, blob_code = both
    header = (blob_code / "CPU0" / "nnef_weights_CPU0.h").read_text()
    assert ".incbin" in header and "static const float W_" not in header
    assert (blob_code / "CPU0" / "nnef_weights_CPU0.bin").is_file()
    items = json.loads((blob_code / "build.json").read_text())["items"]
    assert items[0]["weights_blob"] == "CPU0/nnef_weights_CPU0.bin"
    inputs = {"x": np.random.default_rng(1).standard_normal((3, 2, 3, 8, 8)).astype(np.float32)}
    got_text = H.run(H.build(text_code, 4), inputs, tmp_path / "t", ["y"])
    got_blob = H.run(H.build(blob_code, 4), inputs, tmp_path / "b", ["y"])
    H.assert_bit_identical(got_blob, got_text, "linked vs text weights")
    expected = H.reference(split / "CPU0.nnef", inputs, _variables(), ["y"])
    H.assert_bit_identical(got_blob, expected, "linked weights vs reference")


def test_trace_and_weight_checks_read_the_linked_file(both):
    root, split, _, blob_code = both
    item = blob_code / "CPU0"
    problems, measured = tracecheck.check_weights(item, root)
    assert problems == [] and measured["weight_arrays"] >= 3
    problems, _ = tracecheck.check_trace(item, root)
    assert problems == []
    assert forbidden_constructs({"nnef_weights_CPU0.h": (item / "nnef_weights_CPU0.h").read_text()}) == []


def test_an_edited_byte_of_the_linked_file_is_seen(both):
    root, _, _, blob_code = both
    item = blob_code / "CPU0"
    blob = item / "nnef_weights_CPU0.bin"
    data = bytearray(blob.read_bytes())
    data[5] ^= 0x01
    blob.write_bytes(bytes(data))
    problems, _ = tracecheck.check_weights(item, root)
    assert any("values differ" in p for p in problems), problems
    blob.write_bytes(bytes(data[:-4]))  # the last array cut short
    problems, _ = tracecheck.check_weights(item, root)
    assert any("beyond the end" in p or "values differ" in p for p in problems), problems
    blob.unlink()
    problems, _ = tracecheck.check_weights(item, root)
    assert any("does not exist" in p for p in problems), problems


def test_a_build_without_the_linked_file_fails_loudly(both):
    from pipeline.diagnostics import PipelineError

    _, _, _, blob_code = both
    (blob_code / "CPU0" / "nnef_weights_CPU0.bin").unlink()
    with pytest.raises(PipelineError) as raised:
        H.build(blob_code, 4)
    assert raised.value.code == "RUN-E003" and "nnef_weights_CPU0.bin" in str(raised.value)


def test_arbitrary_inline_assembly_is_refused():
    text = '__asm__("nop");\nstatic void f(void) { __asm__ volatile("" ::: "memory"); }\n'
    problems = forbidden_constructs({"x.c": text})
    assert len(problems) == 2 and all("inline assembly" in p for p in problems)
