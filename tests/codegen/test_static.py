"""The static checks see what they claim to see: each planted violation is reported, clean
generated code passes, and the buffer planner never lets two live tensors share memory."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest


from tests.codegen import cghelpers as H

from pipeline.codegen import checks, static
from pipeline.codegen.shared.planner import Buffer, Plan, check_plan, plan_buffers
from pipeline.ledger.checks import Verdict

BODY = """
    x = external<scalar>(shape = [1, 3, 8, 8]);
    f = variable<scalar>(shape = [4, 3, 3, 3], label = 'f');
    b = variable<scalar>(shape = [1, 4], label = 'b');
    c = conv(x, f, b, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    r = relu(c);
    y = max_pool(r, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("static")
    split = H.single_item(root / "split", BODY, {"f": np.ones((4, 3, 3, 3), np.float32) * 0.25,
                                                 "b": np.arange(4, dtype=np.float32).reshape(1, 4)})
    code = root / "code"
    H.generate(split, split, code, 4, root)
    return root, code


def _item(code: Path) -> Path:
    return code / "CPU0" / "nnef_item_CPU0.c"


def _plant(code: Path, tmp: Path, replace: tuple[str, str] | None = None, append: str = "") -> Path:
    copy = H.copy_tree(code, tmp / "planted")
    item = _item(copy)
    text = item.read_text()
    if replace:
        assert replace[0] in text, replace[0]
        text = text.replace(replace[0], replace[1], 1)
    item.write_text(text + append)
    return copy


def _files(code: Path) -> dict[str, str]:
    return {p.relative_to(code).as_posix(): p.read_text() for p in code.rglob("*") if p.suffix in (".c", ".h")}


def _kernel_problems(code: Path) -> list[str]:
    return static.kernel_problems("item", _item(code).read_text())[2]


def test_clean_code_passes_every_check(generated, tmp_path):
    root, code = generated
    results = checks.evaluate("test/unit", code, root, tmp_path)
    assert [r.verdict for r in results] == [Verdict.PASS] * 4, [r.reason for r in results]
    measured = results[0].measured
    assert measured["numeric_kernels"] == 3 and measured["recursion_cycles"] == 0 and measured["libm_references"] == 0


def test_planted_malloc_is_found(generated, tmp_path):
    _, code = generated
    planted = _plant(code, tmp_path, append="\nvoid *nnef_leak(void);\n"
                     "void *nnef_leak(void) { extern void *malloc(unsigned long); return malloc(16); }\n")
    problems = static.forbidden_constructs(_files(planted))
    assert any("malloc" in p for p in problems)


def test_planted_recursion_is_found(generated, tmp_path):
    _, code = generated
    planted = _plant(code, tmp_path, append="\nint nnef_r1(int n);\nint nnef_r2(int n) { return nnef_r1(n - 1); }\n"
                     "int nnef_r1(int n) { return n <= 0 ? 0 : nnef_r2(n); }\n")
    count, cycles = static.call_graph_cycles(_files(planted))
    assert count > 5 and any({"nnef_r1", "nnef_r2"} <= set(c) for c in cycles), cycles


def test_planted_branch_and_data_dependent_bound_are_found(generated, tmp_path):
    _, code = generated
    text = _item(code).read_text()
    relu = re.search(r"static void nnef_op_r\([^)]*\)\n\{\n", text)
    assert relu
    planted = _plant(code, tmp_path, replace=(relu.group(0), relu.group(0) + "    if (x_c[0] > 0.0f) { return; }\n"
                                              "    for (int i = 0; i < (int)x_c[1]; ++i) y_r[0] = 1.0f;\n"))
    problems = _kernel_problems(planted)
    assert any("branch construct 'if'" in p for p in problems)
    assert any("loop bound" in p and "x_c" in p for p in problems)
    assert not _kernel_problems(code)


def test_planted_vla_is_found(generated, tmp_path):
    _, code = generated
    planted = _plant(code, tmp_path, append="\nvoid nnef_vla(int n);\nvoid nnef_vla(int n) { float t[n]; t[0] = 0; (void)t; }\n")
    assert any("VLA" in p for p in static.forbidden_constructs(_files(planted)))


def test_planted_libm_call_is_found_in_the_object(generated, tmp_path):
    _, code = generated
    planted = _plant(code, tmp_path, append="\nfloat nnef_libm(float x);\nfloat nnef_libm(float x) { return expf(x); }\n")
    flags = ["-std=c99", "-O2", "-ffp-contract=off", "-fno-math-errno", "-I.", "-c"]
    subprocess.run(["gcc", *flags, "CPU0/nnef_item_CPU0.c", "-o", "item.o"], cwd=planted, check=True)
    undefined = static.undefined_symbols([planted / "item.o"])["item.o"]
    assert "expf" in set(undefined) & static.libm_symbols()


def test_planted_segregation_breach_is_found(generated, tmp_path):
    _, code = generated
    text = _item(code).read_text() + "\nextern float nnef_arena_CPU9[];\nextern float nnef_syncbuf_s7[];\n"
    problems = static.segregation_problems("CPU0", text, {"s1"})
    assert any("CPU9" in p for p in problems) and any("s7" in p for p in problems)


def test_conditional_jumps_are_seen(tmp_path):
    (tmp_path / "b.c").write_text("int probe_find(const float *p, int n);\n"
                                  "int probe_find(const float *p, int n) { for (int i = 0; i < n; ++i) "
                                  "if (p[i] > 0.5f) return i; return -1; }\n")
    subprocess.run(["gcc", "-O2", "-S", "b.c", "-o", "b.s"], cwd=tmp_path, check=True)
    assert static.conditional_jumps((tmp_path / "b.s").read_text(), ["probe_find"])["probe_find"]


def test_memory_map_of_generated_code_is_consistent(generated):
    _, code = generated
    memory_map = json.loads((code / "CPU0" / "memory_map.json").read_text())
    assert static.plan_problems(memory_map, _item(code).read_text()) == []
    bad = json.loads(json.dumps(memory_map))
    a, b = bad["buffers"][0], bad["buffers"][1]
    b["offset"], b["first"], b["last"] = a["offset"], a["first"], a["last"]
    assert any("share bytes" in p for p in static.plan_problems(bad, _item(code).read_text()))


def test_planner_on_random_lifetimes():
    rng = np.random.default_rng(5)
    for trial in range(200):
        buffers = []
        for i in range(rng.integers(1, 30)):
            first = int(rng.integers(-1, 20))
            buffers.append(Buffer(f"t{i}", int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 6))))
        plan = plan_buffers(buffers, 64)
        assert check_plan(plan) == [], trial
        assert plan.arena_bytes <= sum(-(-b.size // 64) * 64 for b in buffers)


def test_planner_reuses_dead_memory_and_check_sees_overlap():
    chain = [Buffer(f"t{i}", 1000, i, i + 1) for i in range(10)]
    plan = plan_buffers(chain, 64)
    assert plan.arena_bytes <= 2 * 1024
    broken = Plan([Buffer("a", 100, 0, 3, 0), Buffer("b", 100, 2, 5, 64)], 256, 64)
    assert any("share bytes" in p for p in check_plan(broken))


def test_deconv_kernel_has_no_branch_and_fixed_bounds(tmp_path):
    """Issue 15: the deconv kernel picks its taps from generation-time index tables, so the static
    analysis (no branch, loop bounds constant or IX_* reads) accepts it."""
    body = """
        x = external<scalar>(shape = [1, 4, 5, 6]);
        f = variable<scalar>(shape = [4, 2, 3, 2], label = 'f');
        y = deconv(x, f, 0.5, border = 'constant', padding = [(0, 1), (2, 0)], stride = [2, 3], dilation = [1, 2], output_shape = [], groups = 2);
    """
    split = H.single_item(tmp_path / "split", body, {"f": np.ones((4, 2, 3, 2), np.float32)})
    code = tmp_path / "code"
    H.generate(split, split, code, 4, tmp_path)
    assert "nnef_op_y" in _item(code).read_text()
    assert _kernel_problems(code) == []
    results = checks.evaluate("test/unit", code, tmp_path, tmp_path / "work")
    assert all(r.verdict == Verdict.PASS for r in results), [r.reason for r in results]
