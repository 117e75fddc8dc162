"""The tensor-by-tensor abstraction of the values mode (docs/prove.md "Tensor by tensor"): before each
step of an item's run function, every tensor the step reads is widened to the hull of its elements.

The widening must be a superset of every element's value (else the proof would not cover the real
program): Frama-C itself shows, on an array whose extreme values sit at its first and last
elements and at a length that is not a power of two, that every element ends at the hull; a box
that copies one block short is caught. The rewriting adds nothing but the boxes, on the same lines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.prove import driver, eva
from pipeline.prove.driver import BOX, RANGE, box_source, boxed

ITEM = """static float *const T_x = nnef_arena_CPU0 + 64;  /* x [1, 2, 4, 4]: bytes 256..383, steps -1..0 */
static float *const T_c = nnef_arena_CPU0;  /* c [1, 3, 2, 2]: bytes 0..47, steps 0..1 */
static float *const T_y = nnef_arena_CPU0 + 16;  /* y [1, 3, 2, 2]: bytes 64..111, steps 1..2 */

static void nnef_op_c(const float *restrict x_x, float *restrict y_c, float *restrict scratch)
{
}

static void nnef_op_y(const float *restrict x_c, const float *restrict x_x, float *restrict y_y)
{
}

/* One inference of item CPU0. */
void nnef_item_CPU0_run(uint32_t epoch)
{
    (void)epoch;
    NNEF_STEP(0, 0, epoch, nnef_op_c(T_x, T_c, nnef_arena_CPU0 + 32));
    NNEF_STEP(0, 1, epoch, nnef_op_y(T_c, T_x, T_y));
}
"""


def test_each_step_boxes_the_tensors_it_reads_on_its_own_line():
    text = boxed(ITEM)
    assert len(text.splitlines()) == len(ITEM.splitlines())
    lines = text.splitlines()
    step0 = next(line for line in lines if "NNEF_STEP(0, 0," in line)
    step1 = next(line for line in lines if "NNEF_STEP(0, 1," in line)
    assert step0.strip().startswith(f"Frama_C_show_each_{RANGE}T_x({BOX}(T_x, 32));")
    assert f"{BOX}(T_c" not in step0 and "arena_CPU0 + 32, " not in step0.split("NNEF_STEP")[0]   # outputs, scratch: not read
    assert f"{BOX}(T_c, 12)" in step1 and f"{BOX}(T_x, 32)" in step1 and f"{BOX}(T_y" not in step1
    assert next(line for line in lines if "nnef_item_CPU0_run(" in line).startswith(f"float {BOX}(float *p, int n); void")
    other = [a for a, b in zip(ITEM.splitlines(), lines) if a != b]
    assert all("NNEF_STEP" in a or "nnef_item_CPU0_run(" in a for a in other)


def test_text_without_a_run_function_is_unchanged():
    assert boxed("static void f(void) {}\n") == "static void f(void) {}\n"


def test_frama_c_printed_ranges_are_read_as_hulls():
    text = "\n".join(["[eva] a.c:3:", f"  Frama_C_show_each_{RANGE}T_a: [-0x1.8p5 .. 0x1.6p5]",
                      "[eva] a.c:3:", f"  Frama_C_show_each_{RANGE}T_a: {{0x1.0000000000000p+7}}",
                      f"[eva] a.c:4: Frama_C_show_each_{RANGE}T_b:", "  [-inf .. 0x1p3]",
                      f"[eva] a.c:5: Frama_C_show_each_{RANGE}T_c: [-0x1p1 .. 0x1p1] ∪ {{NaN}}"])
    ranges = eva.parse(text, "I", driver.VALUES, [], 1.0).ranges
    assert ranges["T_a"] == [-48.0, 128.0] and ranges["T_b"] == [float("-inf"), 8.0]
    assert all(v != v for v in ranges["T_c"])


def _boxed_elements(tmp_path: Path, source: list[str]) -> dict[str, list[float]]:
    """Frama-C's range of each element of a 7-element array after the box (first -7, last 9, others in between)."""
    program = ["#include <string.h>", '#include "__fc_builtin.h"', *source, "int main(void)", "{",
               "    float a[7] = {-7.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 9.0f};", f"    (void){BOX}(a, 7);"]
    program += [f"    Frama_C_show_each_{RANGE}e{i}(a[{i}]);" for i in range(7)] + ["    return 0;", "}", ""]
    (tmp_path / "box.c").write_text("\n".join(program))
    done = subprocess.run(eva.command(["box.c"], driver.VALUES, 16), cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PWD": str(tmp_path)})    # Frama-C resolves names by $PWD
    assert done.returncode == 0, done.stderr[-2000:]
    return eva.parse(done.stdout, "I", driver.VALUES, [], 0.0).ranges


@pytest.mark.skipif(not eva.available(), reason="frama-c is not installed (Debian frama-c-base)")
def test_the_box_widens_every_element_to_the_hull(tmp_path):
    ranges = _boxed_elements(tmp_path, box_source())
    assert ranges == {f"e{i}": [-7.0, 9.0] for i in range(7)}


@pytest.mark.skipif(not eva.available(), reason="frama-c is not installed (Debian frama-c-base)")
def test_a_box_that_copies_a_block_short_is_seen(tmp_path):
    """Planted: the doubling stops at the largest power of two below n; the last elements keep their own
    values, which a later step would then be analysed with (narrower than the hull)."""
    source = [line.replace("k < n - k ? k : n - k", "k < n - k ? k : 0") for line in box_source()]
    assert source != box_source()
    ranges = _boxed_elements(tmp_path, source)
    assert ranges["e6"] != [-7.0, 9.0] and ranges["e0"] == [-7.0, 9.0]
