"""The forms of the runtime primitives Frama-C's EVA analyses (nnef_eva.h, read under __FRAMAC__)
compute the same bits as the compiled primitives (nnef_runtime.h): the selects on every pair of a
set of special and ordinary values (NaN, +-0, +-inf, subnormals, ties, neighbours), the unary forms
on a stride-5 sweep of every float32 bit pattern. A planted difference is caught."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tests.codegen import cghelpers as H
from tests.execute.test_harness import BODY

UNARY = ("relu", "fabs", "fneg", "floor", "ceil", "sqrt", "sign")
BINARY = ("max", "min", "max_update", "min_update")
VALUES = ("0x00000000u", "0x80000000u", "0x00000001u", "0x80000001u", "0x007fffffu", "0x00800000u", "0x3f800000u",
          "0xbf800000u", "0x3f000000u", "0xbf000000u", "0x3fc00000u", "0x40200000u", "0x7f7fffffu", "0xff7fffffu",
          "0x7f800000u", "0xff800000u", "0x7fc00000u", "0xffc00000u", "0x7f800001u", "0x4b000000u", "0x4b000001u",
          "0x3effffffu")

WRAPPERS = "\n".join([f"float {{p}}_{n}(float x) {{{{ return nnef_{n}(x); }}}}" for n in UNARY]
                     + [f"float {{p}}_{n}(float x, float y) {{{{ return nnef_{n}(x, y); }}}}" for n in BINARY]
                     + ["float {p}_select(int c, float a, float b) {{ return nnef_select(c, a, b); }}"])


def _main() -> str:
    decl = "\n".join([f"float ref_{n}(float); float eva_{n}(float);" for n in UNARY]
                     + [f"float ref_{n}(float, float); float eva_{n}(float, float);" for n in BINARY]
                     + ["float ref_select(int, float, float); float eva_select(int, float, float);"])
    values = ", ".join(VALUES)
    unary = "\n".join(f'        if (bits(ref_{n}(x)) != bits(eva_{n}(x)) && !(isnan(ref_{n}(x)) && isnan(eva_{n}(x)))) '
                      f'{{ printf("DIFF {n} %08x\\n", u); return 1; }}' for n in UNARY)
    binary = "\n".join(f'            if (bits(ref_{n}(x, y)) != bits(eva_{n}(x, y))) {{ printf("DIFF {n} %08x %08x\\n", '
                       f'values[i], values[j]); return 1; }}' for n in BINARY)
    return f"""#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
{decl}
static uint32_t bits(float f) {{ uint32_t u; memcpy(&u, &f, 4); return u; }}
static float from(uint32_t u) {{ float f; memcpy(&f, &u, 4); return f; }}
int main(void)
{{
    static const uint32_t values[] = {{{values}}};
    const int n = (int)(sizeof values / sizeof values[0]);
    for (int i = 0; i < n; ++i) {{
        for (int j = 0; j < n; ++j) {{
            const float x = from(values[i]), y = from(values[j]);
{binary}
            for (int c = 0; c < 2; ++c)
                if (bits(ref_select(c, x, y)) != bits(eva_select(c, x, y))) {{ printf("DIFF select\\n"); return 1; }}
        }}
    }}
    for (uint64_t w = 0; w <= 0xffffffffu; w += 5) {{
        const uint32_t u = (uint32_t)w;
        const float x = from(u);
{unary}
    }}
    printf("SAME\\n");
    return 0;
}}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("forms")
    _, code = H.generated_code(root, BODY, {"f": np.random.default_rng(1).standard_normal((3, 2, 3, 3))})
    (code / "__fc_builtin.h").write_text("/* Frama-C's builtins: none needed by the compiled forms */\n")
    return code


def _run(folder, eva_header: str | None = None) -> str:
    if eva_header is not None:
        (folder / "nnef_eva.h").write_text(eva_header)
    (folder / "ref.c").write_text('#include "nnef_runtime.h"\n' + WRAPPERS.format(p="ref") + "\n")
    (folder / "eva.c").write_text('#define __FRAMAC__ 1\n#include "nnef_runtime.h"\nint nnef_eva_lane, nnef_eva_lane2;\n'
                                  + WRAPPERS.format(p="eva") + "\n")
    (folder / "forms.c").write_text(_main())
    common = ["gcc", "-std=c99", "-O2", "-ffp-contract=off", "-fno-math-errno", "-I."]
    subprocess.run([*common, "ref.c", "eva.c", "forms.c", "-lm", "-o", "forms"], cwd=folder, check=True,
                   capture_output=True)
    return subprocess.run([str(folder / "forms")], capture_output=True, text=True, timeout=600).stdout


def test_the_analysed_forms_compute_the_primitives_bits(folder):
    assert _run(folder).strip() == "SAME"


def test_a_planted_difference_is_caught(folder, tmp_path):
    other = tmp_path / "code"
    shutil.copytree(folder, other)
    text = (other / "nnef_eva.h").read_text()
    planted = text.replace("return (x > y || isnan(x)) ? x : y;", "return (x >= y || isnan(x)) ? x : y;")
    assert planted != text
    assert _run(other, planted).startswith("DIFF max")
