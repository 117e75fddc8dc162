"""MC/DC of the decisions inside the runtime's mask primitives (nnef_runtime.h), the one place the generated
code decides on data: max, min, relu, clamp, the running max/min of max_pool and max_reduce, select and the
selects of prelu/elu (x < 0, x != 0), sign, rint, floor, ceil. gcov cannot see these decisions (they are
branch-free masks), so each is shown here condition by condition (LLR-COD-010, docs/execute.md "Coverage").

For each decision, written as docs/semantics states it, every condition gets an independence pair: two
cases in which that condition alone changes and the decision's outcome changes with it (checked here on the
conditions themselves). The pairs, with the special values that make them (NaN, ties of +0 and -0, +-inf,
subnormals, 2^23), and a cross product of such values, are run through every compiled form of each primitive
(scalar and NNEF_VL-lane vector forms; the vector-extension build and the portable one, NNEF_PORTABLE; the
qualified flags) and compared bit for bit with an independent Python reference of the documented semantics
(docs/semantics/elementwise.md, reduce.md). Planted wrong primitives (`>=` for `>`, a dropped NaN term, a
dropped `m == m`, a wrong rint bound) are caught.
"""

from __future__ import annotations

import math
import shutil
import struct
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from pipeline.codegen.c import RUNTIME_DIR
from pipeline.toolchain.cc import compile_and_link, host_isa
from pipeline.toolchain import process

# ------------------------------------------------------------------ values


def f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def bits_of(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


NAN, NAN_NEG, NAN_PAYLOAD = 0x7FC00000, 0xFFC00000, 0x7FC00123
PZ, NZ, ONE, NONE, TWO, HALF = 0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x40000000, 0x3F000000
INF, NINF, SUB, NSUB, MAXF = 0x7F800000, 0xFF800000, 0x00000001, 0x80000001, 0x7F7FFFFF
B23, B23_BELOW, B22_HALF, TWO_HALF, NTWO_HALF, NHALF = 0x4B000000, 0x4AFFFFFF, 0x4A800001, 0x40200000, 0xC0200000, 0xBF000000
SPECIAL = [PZ, NZ, ONE, NONE, TWO, HALF, NHALF, INF, NINF, SUB, NSUB, MAXF, NAN, NAN_NEG, NAN_PAYLOAD, B23, B23_BELOW,
           B22_HALF, TWO_HALF, NTWO_HALF, 0x00800000, 0x3EFFFFFF]


def isnan(b: int) -> bool:
    return math.isnan(f32(b))


# ------------------------------------------------------------------ the documented semantics (independent reference)

def ref_max(x: int, y: int) -> int:
    """max(x, y): NaN propagates (x's if x is NaN, otherwise y's); equal operands give y (elementwise.md)."""
    if isnan(x):
        return x
    if isnan(y):
        return y
    return x if f32(x) > f32(y) else y


def ref_min(x: int, y: int) -> int:
    if isnan(x):
        return x
    if isnan(y):
        return y
    return x if f32(x) < f32(y) else y


def ref_update(compare: Callable[[float, float], bool]) -> Callable[[int, int], int]:
    """The running max/min (reduce.md): m = t if t beats m, or t is NaN and m is not; the first of equals stays."""
    def update(t: int, m: int) -> int:
        if isnan(m):
            return m
        if isnan(t):
            return t
        return t if compare(f32(t), f32(m)) else m
    return update


def ref_relu(x: int) -> int:
    return ref_max(x, PZ)


def ref_clamp(x: int, a: int, b: int) -> int:
    return ref_max(ref_min(x, b), a)


def ref_select(c: int, a: int, b: int) -> int:
    return a if c != 0 else b


def ref_sign(x: int) -> int:
    """sign(x) = 1 for x > 0, -1 for x < 0, x itself for +-0 and NaN (elementwise.md)."""
    v = f32(x)
    return ONE if v > 0 else NONE if v < 0 else x


def _rounding(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[int], int]:
    """numpy's rint/floor/ceil (C99's, round half to even) on float32: an implementation that is not ours."""
    def rounded(x: int) -> int:
        return int(fn(np.array([x], np.uint32).view(np.float32)).view(np.uint32)[0])
    return rounded


REFERENCE: dict[str, Callable[..., int]] = {
    "max": ref_max, "min": ref_min, "max_update": ref_update(lambda t, m: t > m),
    "min_update": ref_update(lambda t, m: t < m), "relu": ref_relu, "clamp": ref_clamp, "select": ref_select,
    "select_lt0": lambda x, a, b: a if f32(x) < 0 else b, "select_ne0": lambda x, a, b: a if f32(x) != 0 else b,
    "sign": ref_sign, "rint": _rounding(np.rint), "floor": _rounding(np.floor), "ceil": _rounding(np.ceil),
}
ARITY = {"max": 2, "min": 2, "max_update": 2, "min_update": 2, "relu": 1, "clamp": 3, "select": 3,
         "select_lt0": 3, "select_ne0": 3, "sign": 1, "rint": 1, "floor": 1, "ceil": 1}

# ------------------------------------------------------------------ the decisions and their MC/DC pairs

Conditions = Callable[..., tuple[bool, ...]]
Decision = Callable[[tuple[bool, ...]], bool]

# name -> (the primitive it decides, its conditions, the decision over them, one independence pair per condition)
DECISIONS: dict[str, tuple[str, tuple[str, ...], Conditions, Decision, list[tuple[tuple[int, ...], tuple[int, ...]]]]] = {
    # nnef_max (portable form): select((x > y) | (x != x), x, y)
    "max": ("max", ("x > y", "x != x"), lambda x, y: (f32(x) > f32(y), isnan(x)), lambda c: c[0] or c[1],
            [((TWO, ONE), (NZ, PZ)), ((NAN, ONE), (HALF, ONE))]),
    "min": ("min", ("x < y", "x != x"), lambda x, y: (f32(x) < f32(y), isnan(x)), lambda c: c[0] or c[1],
            [((NONE, ONE), (PZ, NZ)), ((NAN, ONE), (TWO, ONE))]),
    # nnef_max in the vector-extension build: the same decision with the lanes' masks; nnef_vmax: likewise
    # nnef_relu (portable): select((x > 0) | (x != x), x, +0)
    "relu": ("relu", ("x > 0", "x != x"), lambda x: (f32(x) > 0, isnan(x)), lambda c: c[0] or c[1],
             [((SUB,), (NZ,)), ((NAN,), (NINF,))]),
    # nnef_vrelu: select(!(x <= 0), x, +0)
    "vrelu": ("relu", ("x <= 0",), lambda x: (f32(x) <= 0,), lambda c: not c[0], [((NAN,), (NZ,))]),
    # nnef_max_update (portable): select((t > m) | ((t != t) & (m == m)), t, m)
    "max_update": ("max_update", ("t > m", "t != t", "m == m"),
                   lambda t, m: (f32(t) > f32(m), isnan(t), not isnan(m)), lambda c: c[0] or (c[1] and c[2]),
                   [((ONE, NZ), (NONE, NZ)), ((NAN, ONE), (HALF, ONE)), ((NAN, ONE), (NAN, NAN_PAYLOAD))]),
    "min_update": ("min_update", ("t < m", "t != t", "m == m"),
                   lambda t, m: (f32(t) < f32(m), isnan(t), not isnan(m)), lambda c: c[0] or (c[1] and c[2]),
                   [((NONE, PZ), (ONE, PZ)), ((NAN, ONE), (TWO, ONE)), ((NAN, ONE), (NAN, NAN_NEG))]),
    # nnef_vmax_update and the vector-extension nnef_max_update: select(!(t <= m) & (m == m), t, m)
    "vmax_update": ("max_update", ("t <= m", "m == m"), lambda t, m: (f32(t) <= f32(m), not isnan(m)),
                    lambda c: (not c[0]) and c[1], [((TWO, ONE), (PZ, NZ)), ((TWO, ONE), (TWO, NAN))]),
    "vmin_update": ("min_update", ("t >= m", "m == m"), lambda t, m: (f32(t) >= f32(m), not isnan(m)),
                    lambda c: (not c[0]) and c[1], [((NONE, ONE), (NZ, PZ)), ((NONE, ONE), (NONE, NAN))]),
    # select(c, a, b): the mask of c != 0
    "select": ("select", ("c != 0",), lambda c, a, b: (c != 0,), lambda c: c[0], [((1, NAN_PAYLOAD, NZ), (0, NAN_PAYLOAD, NZ))]),
    # prelu, leaky_relu, elu: select(x < 0, ...); where: select(c != 0, ...) with c a float
    "select_lt0": ("select_lt0", ("x < 0",), lambda x, a, b: (f32(x) < 0,), lambda c: c[0],
                   [((NSUB, ONE, NAN), (NZ, ONE, NAN))]),
    "select_ne0": ("select_ne0", ("x != 0",), lambda x, a, b: (f32(x) != 0,), lambda c: c[0],
                   [((NAN, INF, NINF), (NZ, INF, NINF))]),
    # sign: select(x > 0, 1, select(x < 0, -1, x))
    "sign": ("sign", ("x > 0",), lambda x: (f32(x) > 0,), lambda c: c[0], [((SUB,), (PZ,))]),
    "sign_inner": ("sign", ("x < 0",), lambda x: (f32(x) < 0,), lambda c: c[0], [((NSUB,), (NZ,))]),
    # rint: select(|x| < 2^23, rounded, x); floor: select(r > x, r - 1, r)
    "rint": ("rint", ("|x| < 2^23",), lambda x: (abs(f32(x)) < 2.0 ** 23,), lambda c: c[0],
             [((B23_BELOW,), (B23,))]),
    "floor": ("floor", ("rint(x) > x",), lambda x: (float(np.rint(np.float32(f32(x)))) > f32(x),), lambda c: c[0],
              [((0x3F400000,), (0x3E800000,))]),     # rint(0.75) = 1 > 0.75; rint(0.25) = 0, not > 0.25
}


def test_the_pairs_are_mcdc_pairs():
    """Each pair changes its condition alone (every other condition the same) and the decision's outcome."""
    for name, (_, names, conditions, decision, pairs) in DECISIONS.items():
        assert len(pairs) == len(names), name
        for index, (first, second) in enumerate(pairs):
            a, b = conditions(*first), conditions(*second)
            changed = [k for k in range(len(names)) if a[k] != b[k]]
            assert changed == [index], (name, names, first, second, a, b)
            assert decision(a) != decision(b), (name, first, second)


# ------------------------------------------------------------------ the compiled primitives

SCALAR = {"max": "nnef_max(a, b)", "min": "nnef_min(a, b)", "max_update": "nnef_max_update(a, b)",
          "min_update": "nnef_min_update(a, b)", "relu": "nnef_relu(a)", "clamp": "nnef_max(nnef_min(a, c), b)",
          "select": "nnef_select(nnef_bits(a) != 0u, b, c)", "select_lt0": "nnef_select(a < 0.0f, b, c)",
          "select_ne0": "nnef_select(a != 0.0f, b, c)", "sign": "nnef_sign(a)", "rint": "nnef_rint(a)",
          "floor": "nnef_floor(a)", "ceil": "nnef_ceil(a)"}
VECTOR = {"max": "nnef_vmax(a, b)", "min": "nnef_vmin(a, b)", "max_update": "nnef_vmax_update(a, b)",
          "min_update": "nnef_vmin_update(a, b)", "relu": "nnef_vrelu(a)", "clamp": "nnef_vmax(nnef_vmin(a, c), b)",
          "select_lt0": "nnef_vselect(nnef_vlt(a, nnef_vzero()), b, c)",
          "select_ne0": "nnef_vselect(nnef_vne(a, nnef_vzero()), b, c)", "sign": "nnef_vsign(a)",
          "rint": "nnef_vrint(a)", "floor": "nnef_vfloor(a)", "ceil": "nnef_vceil(a)"}


def _cases() -> dict[str, list[tuple[int, ...]]]:
    """Per primitive: the MC/DC pairs of its decisions and the cross product of the special values."""
    cases: dict[str, list[tuple[int, ...]]] = {name: [] for name in REFERENCE}
    for primitive, _, _, _, pairs in DECISIONS.values():
        for pair in pairs:
            cases[primitive] += [tuple(c) for c in pair]
    for name, arity in ARITY.items():
        if arity == 1:
            cases[name] += [(x,) for x in SPECIAL]
        elif arity == 2:
            cases[name] += [(x, y) for x in SPECIAL for y in SPECIAL]
        elif name == "clamp":
            few = [PZ, NZ, ONE, NONE, INF, NINF, NAN, NAN_PAYLOAD, SUB]
            cases[name] += [(x, a, b) for x in few for a in few for b in few]
        else:
            cases[name] += [(c, a, b) for c in SPECIAL for a, b in ((NAN_PAYLOAD, NZ), (INF, PZ))]
    return cases


CASES = _cases()


def _program(lanes: int) -> str:
    """A program applying each primitive to its cases: scalar forms one case at a time, vector forms NNEF_VL cases
    per vector (case k in lane k % NNEF_VL); prints `form name k result-bits` per case."""
    tables, calls = [], []
    for name, cases in CASES.items():
        arity = ARITY[name]
        flat = [c[i] if i < len(c) else 0 for c in cases for i in range(3)]
        tables.append(f"static const uint32_t case_{name}[] = {{{', '.join(f'{v:#010x}u' for v in flat)}}};")
        count = len(cases)
        scalar = SCALAR[name]
        calls.append(f"""    for (int k = 0; k < {count}; ++k) {{
        float a = nnef_float(case_{name}[3 * k]), b = nnef_float(case_{name}[3 * k + 1]), c = nnef_float(case_{name}[3 * k + 2]);
        (void)a; (void)b; (void)c;
        printf("scalar {name} %d %08x\\n", k, (unsigned)nnef_bits({scalar}));
    }}""")
        if name in VECTOR:
            calls.append(f"""    for (int k0 = 0; k0 < {count}; k0 += NNEF_VL) {{
        float xa[NNEF_VL], xb[NNEF_VL], xc[NNEF_VL], r[NNEF_VL];
        for (int i = 0; i < NNEF_VL; ++i) {{
            int k = k0 + i < {count} ? k0 + i : k0;
            xa[i] = nnef_float(case_{name}[3 * k]); xb[i] = nnef_float(case_{name}[3 * k + 1]);
            xc[i] = nnef_float(case_{name}[3 * k + 2]);
        }}
        nnef_vf a = nnef_vload(xa), b = nnef_vload(xb), c = nnef_vload(xc);
        (void)a; (void)b; (void)c;
        nnef_vstore(r, {VECTOR[name]});
        for (int i = 0; i < NNEF_VL && k0 + i < {count}; ++i)
            printf("vector {name} %d %08x\\n", k0 + i, (unsigned)nnef_bits(r[i]));
    }}""")
        del arity
    return ('#include <stdio.h>\n#include "nnef_runtime.h"\n' + "\n".join(tables)
            + "\nint main(void)\n{\n" + "\n".join(calls) + "\n    return 0;\n}\n")


BUILDS = [(4, ()), (4, ("NNEF_PORTABLE",))] + ([(16, ())] if host_isa() == "avx512" else [(8, ())]
                                              if host_isa() == "avx2" else [])


def _folder(root: Path, lanes: int, runtime: str | None = None) -> Path:
    folder = root / f"vl{lanes}"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("nnef_runtime.h", "nnef_sync.h"):
        shutil.copy(RUNTIME_DIR / name, folder / name)
    if runtime is not None:
        (folder / "nnef_runtime.h").write_text(runtime)
    (folder / "nnef_config.h").write_text(f"#define NNEF_VL {lanes}\n#define NNEF_ITEMS 1\n#define NNEF_MAX_ITEMS 1\n"
                                          "#define NNEF_INPUTS 1\n#define NNEF_OUTPUTS 1\n"
                                          "#define NNEF_SCHEDULE_BARRIERS 0\n#define NNEF_BARRIERS 1\n")
    (folder / "mcdc.c").write_text(_program(lanes))
    return folder


def _mismatches(root: Path, runtime: str | None = None) -> list[str]:
    """Every case of every build whose result differs from the reference (exact bits; NaN as NaN for rint/floor/ceil)."""
    found = []
    for lanes, defines in BUILDS:
        folder = _folder(root / ("portable" if defines else "vector"), lanes, runtime)
        binary = compile_and_link(folder, ["mcdc.c"], folder / "mcdc", lanes, defines=defines).binary
        done = process.run([str(binary)], timeout=120)
        assert done.returncode == 0, done.err
        seen = 0
        for line in done.out.splitlines():
            form, name, k, got = line.split()
            case = CASES[name][int(k)]
            want = REFERENCE[name](*case[:ARITY[name]])
            got_bits = int(got, 16)
            same = got_bits == want or (name in ("rint", "floor", "ceil") and isnan(got_bits) and isnan(want))
            seen += 1
            if not same:
                found.append(f"{lanes}{'p' if defines else ''} {form} {name}{tuple(f'{v:08x}' for v in case)}: "
                             f"{got_bits:08x}, documented {want:08x}")
        assert seen == sum(len(c) for c in CASES.values()) + sum(len(CASES[n]) for n in VECTOR), seen
    return found


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    return tmp_path_factory.mktemp("mcdc")


def test_every_form_computes_the_documented_semantics(root):
    assert _mismatches(root) == []


PLANTED = [
    ("portable max: > for >=", "nnef_select((x > y) | (x != x), x, y); }", "nnef_select((x >= y) | (x != x), x, y); }",
     "max"),
    ("portable relu: the NaN term dropped", "nnef_select((x > 0.0f) | (x != x), x, 0.0f)", "nnef_select((x > 0.0f), x, 0.0f)",
     "relu"),
    ("portable max_update: m == m dropped", "nnef_select((t > m) | ((t != t) & (m == m)), t, m)",
     "nnef_select((t > m) | (t != t), t, m)", "max_update"),
    ("vector max_update: m == m dropped", "nnef_vselect(nnef_vand(nnef_vnot(nnef_vle(t, m)), nnef_veq(m, m)), t, m)",
     "nnef_vselect(nnef_vnot(nnef_vle(t, m)), t, m)", "max_update"),
    ("vector-extension min: < for <=", "nnef_s4select((nnef_s4i)(a < b) | (nnef_s4i)(a != a), a, b)",
     "nnef_s4select((nnef_s4i)(a <= b) | (nnef_s4i)(a != a), a, b)", "min"),
    ("rint: the bound 2^22 for 2^23", "return nnef_select(a < 0x1p23f, r, x);", "return nnef_select(a < 0x1p22f, r, x);",
     "rint"),
    ("sign: x >= 0 for x > 0", "nnef_select(x > 0.0f, 1.0f,", "nnef_select(x >= 0.0f, 1.0f,", "sign"),
]


@pytest.mark.parametrize("what, original, planted, primitive", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_wrong_primitive_is_caught(root, what, original, planted, primitive):
    text = (RUNTIME_DIR / "nnef_runtime.h").read_text()
    assert text.count(original) == 1, what
    found = _mismatches(root / "planted", text.replace(original, planted))
    assert any(f" {primitive}(" in f for f in found), (what, found[:5])
