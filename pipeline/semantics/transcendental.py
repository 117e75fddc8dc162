"""exp, log, tanh, sigmoid, softplus, pow and erf from IEEE basic operations, written once.

Library transcendentals differ between platforms (NumPy's float32 `exp` and glibc's
`expf` disagree by up to 2-3 ULP), so the reference semantics cannot use them if C and
CUDA code must reproduce it bit for bit. Each function here is a *straight-line program*
over a small set of primitive operations that IEEE 754 defines exactly (correctly
rounded `+ - * /`, comparisons, selection, exact conversions, integer operations on the
bit pattern, `rint`/`floor`). The program is data (`PROGRAMS`): this module evaluates it
with NumPy for the reference, and a code generator emits one C/CUDA statement per step,
in order, from the same data (`OPS[op].c` gives each primitive's C99 meaning). Same
operations, same order, same constants -> the same bits, provided the target evaluates
float32 operations in float32 (no x87 excess precision), with round-to-nearest-even,
without FMA contraction (`-ffp-contract=off`, nvcc `--fmad=false`) and without
flush-to-zero of subnormals (no `-ffast-math`, nvcc `-ftz=false`).

The algorithms, constants and measured accuracy are documented in
docs/semantics/transcendental.md; `tests/semantics/accuracy_sweep.py` re-measures them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

F32 = np.float32
I32 = np.int32


# --------------------------------------------------------------------------------------
# The primitive operations a program may use.
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSpec:
    """A primitive: operand types, result type ('f' float32, 'i' int32, 'b' boolean,
    'T' = same type as the result), its C99 meaning and its NumPy evaluation."""

    args: str
    result: str
    c: str
    numpy: Callable[..., np.ndarray]
    meaning: str


def _shl(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    return (np.asarray(a, I32).view(np.uint32) << np.uint32(n)).view(I32)


def _shr(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    return (np.asarray(a, I32).view(np.uint32) >> np.uint32(n)).view(I32)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=F32).view(I32)


def _from_bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=I32).view(F32)


OPS: Mapping[str, OpSpec] = {
    "add": OpSpec("ff", "f", "({0} + {1})", np.add, "IEEE addition, round to nearest even"),
    "sub": OpSpec("ff", "f", "({0} - {1})", np.subtract, "IEEE subtraction"),
    "mul": OpSpec("ff", "f", "({0} * {1})", np.multiply, "IEEE multiplication"),
    "div": OpSpec("ff", "f", "({0} / {1})", np.divide, "IEEE division"),
    "neg": OpSpec("f", "f", "(-{0})", np.negative, "sign flip (exact)"),
    "abs": OpSpec("f", "f", "fabsf({0})", np.abs, "clear the sign bit (exact)"),
    "rint": OpSpec("f", "f", "rintf({0})", np.rint, "round to integral, ties to even (exact)"),
    "floor": OpSpec("f", "f", "floorf({0})", np.floor, "round to integral toward -inf (exact)"),
    "lt": OpSpec("ff", "b", "({0} < {1})", np.less, "IEEE compare (false on NaN)"),
    "gt": OpSpec("ff", "b", "({0} > {1})", np.greater, "IEEE compare (false on NaN)"),
    "le": OpSpec("ff", "b", "({0} <= {1})", np.less_equal, "IEEE compare (false on NaN)"),
    "ge": OpSpec("ff", "b", "({0} >= {1})", np.greater_equal, "IEEE compare (false on NaN)"),
    "eq": OpSpec("ff", "b", "({0} == {1})", np.equal, "IEEE compare (false on NaN)"),
    "ne": OpSpec("ff", "b", "({0} != {1})", np.not_equal, "IEEE compare (true on NaN)"),
    "signbit": OpSpec("f", "b", "(signbit({0}) != 0)", np.signbit, "sign bit set (-0, negatives, -NaN)"),
    "and": OpSpec("bb", "b", "({0} & {1})", np.logical_and, "boolean and (both evaluated)"),
    "or": OpSpec("bb", "b", "({0} | {1})", np.logical_or, "boolean or (both evaluated)"),
    "not": OpSpec("b", "b", "(!{0})", np.logical_not, "boolean not"),
    "select": OpSpec("bTT", "T", "({0} ? {1} : {2})", np.where, "choose without branching on data"),
    "f2i": OpSpec("f", "i", "((int32_t){0})", lambda a: np.asarray(a, F32).astype(I32),
                  "float -> int32 (only on integral values in range: exact)"),
    "i2f": OpSpec("i", "f", "((float){0})", lambda a: np.asarray(a, I32).astype(F32),
                  "int32 -> float (only |i| < 2^24: exact)"),
    "bits": OpSpec("f", "i", "nnef_float_bits({0})", _bits, "reinterpret float32 bits as int32"),
    "from_bits": OpSpec("i", "f", "nnef_bits_float({0})", _from_bits, "reinterpret int32 bits as float32"),
    "iadd": OpSpec("ii", "i", "({0} + {1})", np.add, "int32 addition (no overflow occurs)"),
    "isub": OpSpec("ii", "i", "({0} - {1})", np.subtract, "int32 subtraction (no overflow occurs)"),
    "iand": OpSpec("ii", "i", "({0} & {1})", np.bitwise_and, "bitwise and"),
    "ior": OpSpec("ii", "i", "({0} | {1})", np.bitwise_or, "bitwise or"),
    "shl": OpSpec("ii", "i", "((int32_t)((uint32_t){0} << {1}))", _shl, "logical shift left"),
    "shr": OpSpec("ii", "i", "((int32_t)((uint32_t){0} >> {1}))", _shr, "logical shift right"),
}

# `call` is the one non-primitive step: args[0] names another program, the rest are its
# arguments (C: a call of the generated function for that program).
CALL = "call"


# --------------------------------------------------------------------------------------
# Programs.
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Const:
    """A named constant. `literal` is a C99 hex float (exact float32) or a decimal int."""

    name: str
    type: str  # 'f' or 'i'
    literal: str
    note: str = ""

    @property
    def value(self) -> np.generic:
        if self.type == "i":
            return I32(int(self.literal, 0))
        return F32(_exact_float32(self.literal))

    @property
    def c_literal(self) -> str:
        """The constant as a C99/CUDA literal (hex float with an `f` suffix)."""
        if self.type == "i":
            return self.literal
        lowered = self.literal.lower()
        if lowered in ("inf", "-inf"):
            return "-INFINITY" if lowered.startswith("-") else "INFINITY"
        if lowered == "nan":
            return "NAN"
        return f"{self.literal}f"

    @property
    def bits(self) -> str:
        """The float32 bit pattern (hex), for the documentation and cross-checks."""
        if self.type == "i":
            return f"{int(self.literal, 0) & 0xFFFFFFFF:#010x}"
        return f"{int(np.array([self.value], F32).view(np.uint32)[0]):#010x}"


@dataclass(frozen=True)
class Step:
    """`dest = op(args...)`; args name parameters, constants or earlier steps."""

    dest: str
    op: str
    args: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Program:
    """A straight-line float32 function: parameters, constants, steps, result."""

    name: str
    params: tuple[str, ...]
    constants: tuple[Const, ...]
    steps: tuple[Step, ...]
    result: str
    summary: str

    def listing(self) -> str:
        """The program as text, one step per line (what docs/semantics/transcendental.md shows)."""
        lines = [f"{self.name}({', '.join(self.params)}):"]
        for const in self.constants:
            tail = f"  # {const.note}" if const.note else ""
            kind = "int32" if const.type == "i" else f"float32 {const.bits}"
            lines.append(f"  const {const.name} = {const.literal}  ({kind}){tail}")
        for step in self.steps:
            tail = f"  # {step.note}" if step.note else ""
            lines.append(f"  {step.dest} = {step.op}({', '.join(step.args)}){tail}")
        lines.append(f"  return {self.result}")
        return "\n".join(lines)


def _exact_float32(literal: str) -> float:
    value = float.fromhex(literal) if "0x" in literal.lower() else float(literal)
    if float(F32(value)) != value and not np.isnan(value):
        raise ValueError(f"constant {literal} is not exactly representable in float32")
    return value


def _s(dest: str, op: str, *args: str, note: str = "") -> Step:
    return Step(dest, op, tuple(args), note)


def _f(name: str, literal: str, note: str = "") -> Const:
    return Const(name, "f", literal, note)


def _i(name: str, literal: str, note: str = "") -> Const:
    return Const(name, "i", literal, note)


ZERO = _f("ZERO", "0x0p+0")
ONE = _f("ONE", "0x1p+0")
TWO = _f("TWO", "0x1p+1")
HALF = _f("HALF", "0x1p-1")
INF = _f("INF", "inf", "+infinity (C: INFINITY)")

EXP = Program(
    name="exp",
    params=("x",),
    constants=(
        ZERO, ONE, HALF,
        _f("X_MAX", "0x1.64p+6", "89.0: above ln(FLT_MAX) = 88.72, result overflows to +inf"),
        _f("X_MIN", "-0x1.ap+6", "-104.0: below ln(2^-150) = -103.97, result rounds to +0"),
        _f("LOG2E", "0x1.715476p+0", "1/ln 2 rounded to float32"),
        _f("LN2_HI", "0x1.62e4p-1", "ln 2, high part: 15 significant bits, so k*LN2_HI is exact"),
        _f("LN2_LO", "0x1.7f7d1cp-20", "ln 2 - LN2_HI rounded to float32"),
        _f("P2", "0x1.fffffcp-2", "minimax for (e^r - 1 - r)/r^2 on |r| <= ln2/2"),
        _f("P3", "0x1.55549p-3"),
        _f("P4", "0x1.5558f4p-5"),
        _f("P5", "0x1.123a6ep-7"),
        _f("P6", "0x1.6a2344p-10"),
        _i("BIAS", "127", "float32 exponent bias"),
        _i("MANT", "23", "float32 mantissa width"),
    ),
    steps=(
        _s("nan", "ne", "x", "x", note="x is NaN"),
        _s("x0", "select", "nan", "ZERO", "x", note="keep the integer path defined for NaN"),
        _s("x1", "select", "gt(x0, X_MAX)", "X_MAX", "x0"),
        _s("x2", "select", "lt(x1, X_MIN)", "X_MIN", "x1", note="x2 in [-104, 89]; +-inf clamp here"),
        _s("t", "mul", "x2", "LOG2E"),
        _s("kf", "rint", "t", note="k = nearest integer to x/ln2, in [-150, 128]"),
        _s("r0", "sub", "x2", "mul(kf, LN2_HI)", note="exact (Sterbenz): k*LN2_HI is exact"),
        _s("r", "sub", "r0", "mul(kf, LN2_LO)", note="r = x - k ln2, |r| <= 0.3466"),
        _s("q4", "add", "mul(P6, r)", "P5", note="Horner: q = P2 + r*(P3 + r*(P4 + r*(P5 + r*P6)))"),
        _s("q3", "add", "mul(q4, r)", "P4"),
        _s("q2", "add", "mul(q3, r)", "P3"),
        _s("q", "add", "mul(q2, r)", "P2"),
        _s("p", "add", "r", "mul(mul(r, r), q)", note="p = r + (r*r)*q ~ e^r - 1"),
        _s("y0", "add", "ONE", "p", note="e^r in [0.707, 1.415]"),
        _s("k1", "rint", "mul(kf, HALF)", note="split 2^k = 2^k1 * 2^k2, both normal"),
        _s("k2", "sub", "kf", "k1"),
        _s("s1", "from_bits", "shl(iadd(f2i(k1), BIAS), MANT)", note="2^k1 built on the exponent field"),
        _s("s2", "from_bits", "shl(iadd(f2i(k2), BIAS), MANT)", note="2^k2"),
        _s("y1", "mul", "mul(y0, s1)", "s2", note="first product exact, second rounds once (subnormals)"),
        _s("y", "select", "nan", "x", "y1", note="NaN in, the same NaN out"),
    ),
    result="y",
    summary="e^x: Cody-Waite reduction x = k ln2 + r, degree-6 polynomial, scaling by 2^k",
)

LOG = Program(
    name="log",
    params=("x",),
    constants=(
        ZERO, ONE, TWO, HALF, INF,
        _f("NAN", "nan", "quiet NaN 0x7fc00000 (C: NAN)"),
        _f("TINY", "0x1p-126", "smallest normal float32"),
        _f("SCALE", "0x1p+23", "lifts subnormals into the normal range (exact)"),
        _f("SQRT2", "0x1.6a09e6p+0", "sqrt(2) rounded to float32"),
        _f("LN2_HI", "0x1.62e4p-1", "as in exp"),
        _f("LN2_LO", "0x1.7f7d1cp-20", "as in exp"),
        _f("L1", "0x1.55557ap-1", "minimax for (ln((1+s)/(1-s)) - 2s)/s^3 in z = s^2"),
        _f("L2", "0x1.995e7cp-2"),
        _f("L3", "0x1.31ea0ep-2"),
        _i("ABS_MASK", "0x7fffffff"),
        _i("MANT_MASK", "0x007fffff"),
        _i("ONE_BITS", "0x3f800000", "exponent field of 1.0"),
        _i("MANT", "23"),
        _i("BIAS", "127"),
        _i("BIAS_SUB", "150", "127 + 23: bias of a pre-scaled subnormal"),
        _i("I_ZERO", "0"),
        _i("I_ONE", "1"),
    ),
    steps=(
        _s("sub", "lt", "x", "TINY", note="subnormal (or zero/negative: overridden below)"),
        _s("xn", "select", "sub", "mul(x, SCALE)", "x"),
        _s("b", "iand", "bits(xn)", "ABS_MASK"),
        _s("m0", "from_bits", "ior(iand(b, MANT_MASK), ONE_BITS)", note="mantissa in [1, 2)"),
        _s("big", "gt", "m0", "SQRT2"),
        _s("m", "select", "big", "mul(m0, HALF)", "m0", note="m in [0.707, 1.415] (exact)"),
        _s("e0", "isub", "shr(b, MANT)", "select(sub, BIAS_SUB, BIAS)"),
        _s("e", "iadd", "e0", "select(big, I_ONE, I_ZERO)", note="x = 2^e * m"),
        _s("ef", "i2f", "e"),
        _s("f", "sub", "m", "ONE", note="exact (Sterbenz), f in [-0.293, 0.415]"),
        _s("s", "div", "f", "add(TWO, f)", note="s = f/(2+f), |s| <= 0.1716"),
        _s("z", "mul", "s", "s"),
        _s("rq", "add", "mul(L3, z)", "L2", note="R = z*(L1 + z*(L2 + z*L3))"),
        _s("rr", "mul", "add(mul(rq, z), L1)", "z"),
        _s("hfsq", "mul", "mul(HALF, f)", "f", note="f^2/2"),
        _s("l1p", "sub", "f", "sub(hfsq, mul(s, add(hfsq, rr)))", note="ln(1+f) = f - (f^2/2 - s(f^2/2 + R))"),
        _s("y0", "add", "mul(ef, LN2_HI)", "add(l1p, mul(ef, LN2_LO))", note="e ln2 + ln(1+f)"),
        _s("y1", "select", "eq(x, INF)", "x", "y0", note="ln(+inf) = +inf"),
        _s("y2", "select", "eq(x, ZERO)", "neg(INF)", "y1", note="ln(+-0) = -inf"),
        _s("y3", "select", "lt(x, ZERO)", "NAN", "y2", note="ln(x<0) = NaN, also for -inf"),
        _s("y", "select", "ne(x, x)", "x", "y3", note="NaN in, the same NaN out"),
    ),
    result="y",
    summary="ln x: exponent/mantissa split, ln(1+f) = 2 atanh(f/(2+f)) by a degree-3 polynomial in s^2",
)

TANH = Program(
    name="tanh",
    params=("x",),
    constants=(
        ONE, TWO,
        _f("T", "0x1.8p-1", "0.75: polynomial below, exp formula above"),
        _f("C0", "-0x1.55554ap-2", "minimax for (tanh(x) - x)/x^3 in w = x^2 on |x| <= 0.75"),
        _f("C1", "0x1.110db6p-3"),
        _f("C2", "-0x1.b97d2cp-5"),
        _f("C3", "0x1.5f77dap-6"),
        _f("C4", "-0x1.f5cfe6p-8"),
        _f("C5", "0x1.c74aaap-10"),
    ),
    steps=(
        _s("ax", "abs", "x"),
        _s("w", "mul", "ax", "ax"),
        _s("p4", "add", "mul(C5, w)", "C4", note="Horner: p = C0 + w*(C1 + ... + w*C5)"),
        _s("p3", "add", "mul(p4, w)", "C3"),
        _s("p2", "add", "mul(p3, w)", "C2"),
        _s("p1", "add", "mul(p2, w)", "C1"),
        _s("p", "add", "mul(p1, w)", "C0"),
        _s("ys", "add", "ax", "mul(ax, mul(w, p))", note="|x| < T: |x| + |x|*(w*p); = |x| for tiny x"),
        _s("e", "call", "exp", "mul(TWO, ax)", note="e^(2|x|) (2|x| exact); +inf for |x| > 44.4"),
        _s("yl", "sub", "ONE", "div(TWO, add(e, ONE))", note="|x| >= T: 1 - 2/(e^2|x| + 1); = 1 for |x| > 9.01"),
        _s("ya", "select", "lt(ax, T)", "ys", "yl", note="tanh|x|; NaN takes the exp path and stays NaN"),
        _s("y", "select", "signbit(x)", "neg(ya)", "ya", note="odd: the sign of x, -0 included"),
    ),
    result="y",
    summary="tanh x: on |x|, odd polynomial below 0.75, 1 - 2/(e^(2|x|)+1) above; then the sign of x",
)

SIGMOID = Program(
    name="sigmoid",
    params=("x",),
    constants=(ZERO, ONE),
    steps=(
        _s("e", "call", "exp", "neg(abs(x))", note="e^-|x| in (0, 1]: never overflows"),
        _s("d", "add", "ONE", "e"),
        _s("n", "select", "ge(x, ZERO)", "ONE", "e", note="x >= 0: 1/(1+e^-x); x < 0: e^x/(1+e^x)"),
        _s("y", "div", "n", "d", note="NaN propagates through e"),
    ),
    result="y",
    summary="1/(1+e^-x) for x >= 0, e^x/(1+e^x) for x < 0 (no overflow, graceful underflow)",
)

SOFTPLUS = Program(
    name="softplus",
    params=("x",),
    constants=(ZERO, ONE),
    steps=(
        _s("u", "call", "exp", "neg(abs(x))", note="u = e^-|x| in (0, 1]"),
        _s("v", "add", "ONE", "u"),
        _s("c", "sub", "sub(v, ONE)", "u", note="rounding error of 1+u (exact)"),
        _s("l", "sub", "call(log, v)", "div(c, v)", note="ln(1+u) corrected: ln(v) - c/v"),
        _s("mx", "select", "gt(x, ZERO)", "x", "ZERO", note="max(x, 0); NaN reaches l"),
        _s("y", "add", "mx", "l"),
    ),
    result="y",
    summary="ln(1+e^x) = max(x,0) + ln(1+e^-|x|) (no overflow, no loss for large |x|)",
)

POW = Program(
    name="pow",
    params=("x", "y"),
    constants=(ZERO, ONE, HALF, INF, _f("NAN", "nan", "quiet NaN 0x7fc00000 (C: NAN)")),
    steps=(
        _s("l", "call", "log", "abs(x)"),
        _s("e", "call", "exp", "mul(y, l)", note="|x|^y = e^(y ln|x|)"),
        _s("yint", "eq", "floor(y)", "y", note="y is an integer (false for NaN)"),
        _s("yh", "mul", "y", "HALF"),
        _s("yodd", "and", "yint", "ne(floor(yh), yh)", note="y is an odd integer"),
        _s("r1", "select", "and(signbit(x), yodd)", "neg(e)", "e", note="sign of x^y for negative x (and -0)"),
        _s("bad", "and", "and(lt(x, ZERO), gt(x, neg(INF)))", "not(yint)", note="finite x < 0, non-integer y"),
        _s("r2", "select", "bad", "NAN", "r1"),
        _s("ones", "or", "or(eq(y, ZERO), eq(x, ONE))",
           "and(eq(x, neg(ONE)), eq(abs(y), INF))", note="x^0 = 1^y = (-1)^(+-inf) = 1, even for NaN"),
        _s("r", "select", "ones", "ONE", "r2"),
    ),
    result="r",
    summary="x^y = e^(y ln|x|) with the sign and special cases of C99 powf listed in the documentation",
)

ERF = Program(
    name="erf",
    params=("x",),
    constants=(
        ONE,
        _f("T1", "0x1.d8p-1", "0.921875: polynomial in x^2 below, 1 - e^Q(|x|) from here"),
        _f("T2", "0x1p+2", "4.0: erfc(4) = 1.5e-8 < 2^-25, so erf rounds to 1 above (and 1 - e^Q(4) does)"),
        _f("S0", "0x1.06eba8p-3", "least squares for erf(x)/x - 1 in s = x^2 on [0, T1^2], relative (issue 29, docs)"),
        _f("S1", "-0x1.812744p-2"),
        _f("S2", "0x1.ce2e1cp-4"),
        _f("S3", "-0x1.b8103ep-6"),
        _f("S4", "0x1.54d8b6p-8"),
        _f("S5", "-0x1.aad7eap-11"),
        _f("S6", "0x1.5eda92p-14"),
        _f("L0", "0x1.c9199p-13", "least squares for ln(erfc(t)) on [T1, T2] (issue 29, docs)"),
        _f("L1", "-0x1.2133fap+0"),
        _f("L2", "-0x1.441f82p-1"),
        _f("L3", "-0x1.bc364ep-4"),
        _f("L4", "0x1.9a2d86p-6"),
        _f("L5", "-0x1.044bdep-8"),
        _f("L6", "0x1.33e478p-12"),
        _f("L7", "0x1.0c2266p-15"),
        _f("L8", "-0x1.7880f8p-17"),
        _f("L9", "0x1.492f32p-20"),
        _f("L10", "-0x1.b9f918p-25"),
    ),
    steps=(
        _s("ax", "abs", "x"),
        _s("s", "mul", "ax", "ax"),
        _s("p5", "add", "mul(S6, s)", "S5", note="Horner: p = S0 + s*(S1 + ... + s*S6)"),
        _s("p4", "add", "mul(p5, s)", "S4"),
        _s("p3", "add", "mul(p4, s)", "S3"),
        _s("p2", "add", "mul(p3, s)", "S2"),
        _s("p1", "add", "mul(p2, s)", "S1"),
        _s("p", "add", "mul(p1, s)", "S0"),
        _s("ys", "add", "ax", "mul(ax, p)", note="|x| < T1: |x| + |x| p(x^2); = |x| (1 + S0) for tiny x"),
        _s("t", "select", "gt(ax, T2)", "T2", "ax", note="t = min(|x|, 4); NaN stays NaN"),
        _s("q9", "add", "mul(L10, t)", "L9", note="Horner: q = L0 + t*(L1 + ... + t*L10) ~ ln(erfc(t))"),
        _s("q8", "add", "mul(q9, t)", "L8"),
        _s("q7", "add", "mul(q8, t)", "L7"),
        _s("q6", "add", "mul(q7, t)", "L6"),
        _s("q5", "add", "mul(q6, t)", "L5"),
        _s("q4", "add", "mul(q5, t)", "L4"),
        _s("q3", "add", "mul(q4, t)", "L3"),
        _s("q2", "add", "mul(q3, t)", "L2"),
        _s("q1", "add", "mul(q2, t)", "L1"),
        _s("q", "add", "mul(q1, t)", "L0"),
        _s("e", "call", "exp", "q", note="erfc(t) in [1.5e-8, 0.19]"),
        _s("yl", "sub", "ONE", "e", note="|x| >= T1: 1 - erfc(t)"),
        _s("y0", "select", "lt(ax, T1)", "ys", "yl"),
        _s("ya", "select", "gt(ax, T2)", "ONE", "y0", note="erf|x| = 1 above 4, +inf included"),
        _s("y1", "select", "signbit(x)", "neg(ya)", "ya", note="odd: the sign of x, -0 included"),
        _s("y", "select", "ne(x, x)", "x", "y1", note="NaN in, the same NaN out"),
    ),
    result="y",
    summary="erf x: on |x|, |x| (1 + p(x^2)) below 0.921875, 1 - e^q(|x|) (q ~ ln erfc) up to 4, 1 above; then the sign of x",
)

PROGRAMS: Mapping[str, Program] = {p.name: p for p in (EXP, LOG, TANH, SIGMOID, SOFTPLUS, POW, ERF)}


# --------------------------------------------------------------------------------------
# NumPy evaluation.
# --------------------------------------------------------------------------------------

def _parse_arg(text: str) -> tuple[str, tuple[str, ...]] | str:
    """`name` or a nested `op(a, b)` written inline in a step's argument."""
    text = text.strip()
    if "(" not in text:
        return text
    head, rest = text.split("(", 1)
    assert rest.endswith(")"), text
    inner = rest[:-1]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return head.strip(), tuple(p.strip() for p in parts)


def flatten(program: Program) -> tuple[Step, ...]:
    """The program with inline nested operations expanded into single steps, innermost
    and leftmost first: the exact evaluation order a generator must emit."""
    out: list[Step] = []
    counter = [0]

    def expand(arg: str) -> str:
        parsed = _parse_arg(arg)
        if isinstance(parsed, str):
            return parsed
        op, args = parsed
        if op == CALL:
            names = (args[0],) + tuple(expand(a) for a in args[1:])
        elif op in OPS:
            names = tuple(expand(a) for a in args)
        else:
            raise ValueError(f"{program.name}: unknown primitive {op!r}")
        counter[0] += 1
        dest = f"_t{counter[0]}"
        out.append(Step(dest, op, names))
        return dest

    for step in program.steps:
        if step.op == CALL:
            args = (step.args[0],) + tuple(expand(a) for a in step.args[1:])
        else:
            args = tuple(expand(a) for a in step.args)
        out.append(Step(step.dest, step.op, args, step.note))
    return tuple(out)


_FLAT: dict[str, tuple[Step, ...]] = {}


def _flat(program: Program) -> tuple[Step, ...]:
    if program.name not in _FLAT:
        _FLAT[program.name] = flatten(program)
    return _FLAT[program.name]


def evaluate(program: Program, *args: np.ndarray) -> np.ndarray:
    """Run `program` on float32 arrays (element-wise, all branches evaluated, selected)."""
    env: dict[str, np.ndarray | np.generic] = {c.name: c.value for c in program.constants}
    for name, value in zip(program.params, args, strict=True):
        env[name] = np.asarray(value, dtype=F32)
    with np.errstate(all="ignore"):
        for step in _flat(program):
            if step.op == CALL:
                callee = PROGRAMS[step.args[0]]
                env[step.dest] = evaluate(callee, *(env[a] for a in step.args[1:]))
            else:
                env[step.dest] = OPS[step.op].numpy(*(env[a] for a in step.args))
    result = np.asarray(env[program.result])
    assert result.dtype == F32, (program.name, result.dtype)
    return result


def exp(x: np.ndarray) -> np.ndarray:
    """e^x in float32 (max error 0.96 ULP, see docs/semantics/transcendental.md)."""
    return evaluate(EXP, x)


def log(x: np.ndarray) -> np.ndarray:
    """Natural logarithm in float32."""
    return evaluate(LOG, x)


def tanh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic tangent in float32."""
    return evaluate(TANH, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function 1/(1+e^-x) in float32."""
    return evaluate(SIGMOID, x)


def softplus(x: np.ndarray) -> np.ndarray:
    """ln(1 + e^x) in float32."""
    return evaluate(SOFTPLUS, x)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function in float32 (max error 1.28 ULP, see docs/semantics/transcendental.md)."""
    return evaluate(ERF, x)


def pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # noqa: A001 - the NNEF name
    """x^y in float32 (element-wise; broadcast the operands before calling)."""
    x, y = np.broadcast_arrays(np.asarray(x, F32), np.asarray(y, F32))
    return evaluate(POW, x, y)
