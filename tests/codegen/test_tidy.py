"""The MISRA tidy pass over a C item's text (pipeline/codegen/c/tidy.py): dead integer terms gone,
precedence written out, float expressions and line numbers untouched; a rewrite that changes a value
is refused (CODEGEN-E008)."""

from __future__ import annotations

import pytest

from pipeline.codegen.c import tidy
from pipeline.codegen.shared.errors import CodegenError

TEXT = """static void f(float *restrict y, const float *restrict x)
{
    for (int i = 0 * 4 + 0; i < 16 * 1; i += 1) {
        const int o = (0 * 4 + i + 0) * 16 + i % 1;
        y[o + 0] = x[i * 1 + 0] + 0.0f;
        y[0 * 6 + i] = x[a + b * c] * 1.0f;
        /* a comment: 0 * 4 + 0 */
    }
}"""


def test_dead_terms_and_precedence():
    out = tidy.tidy_item(TEXT, "test")
    assert out.count("\n") == TEXT.count("\n")
    lines = out.split("\n")
    assert lines[2].strip() == "for (int i = 0; i < 16; i += 1) {"
    assert lines[3].strip() == "const int o = i * 16;"
    assert lines[4].strip() == "y[o] = x[i] + 0.0f;"            # float + 0.0f kept (-0 + 0 is +0)
    assert lines[5].strip() == "y[i] = x[a + (b * c)] * 1.0f;"   # float * 1.0f kept (a signalling NaN)
    assert lines[6] == TEXT.split("\n")[6]


def test_a_wrong_rewrite_is_refused(monkeypatch):
    original = tidy.simplify_int

    def wrong(node, pointers=frozenset()):
        node = original(node, pointers)
        if node.kind == "bin" and node.text == "*":
            return tidy.Node("bin", "+", node.kids)     # a defect of the pass: * becomes +
        return node

    monkeypatch.setattr(tidy, "simplify_int", wrong)
    with pytest.raises(CodegenError) as info:
        tidy.tidy_item("    const int o = (0 * 4 + i + 0) * 16;", "test")
    assert info.value.code == "CODEGEN-E008"
