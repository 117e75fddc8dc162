"""Element-wise operations: arithmetic, min/max/clamp, comparisons, logic, select, rounding,
and the unary functions. No reduction happens here, so there is no order to fix; what
must be fixed is each operation's exact IEEE expression, its NaN behaviour and its
signed-zero behaviour. Binary operands are broadcast the NNEF way (left-aligned,
`pipeline.semantics.tensors.broadcast`). All arithmetic is float32, one IEEE operation
per symbol, evaluated as written (no contraction, no reassociation).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from pipeline.semantics import transcendental
from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import F32, KernelError, broadcast, generic, logical, scalar

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]

ONE = F32(1.0)
ZERO = F32(0.0)


# ---- the primitives other modules build on -------------------------------------------

def fmax(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """max(x, y) = select(x > y or x is NaN, x, y).

    The NNEF fragment `select(x > y, x, y)` plus NaN propagation: a NaN operand gives a
    NaN (x's if x is NaN, else y's). Ties (including +0 vs -0) give y, as in the fragment.
    C: `(x > y || x != x) ? x : y`.
    """
    return np.where((x > y) | (x != x), x, y)


def fmin(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """min(x, y) = select(x < y or x is NaN, x, y); ties give y, NaN propagates."""
    return np.where((x < y) | (x != x), x, y)


def first_max_update(t: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Whether a running maximum m takes the next term t: t > m, or t is the first NaN.

    Used by max_reduce, max_pool and the argmax operations: the first maximal term wins
    (the first of a +0/-0 tie too), and the first NaN wins and stays.
    C: `(t > m) | ((t != t) & (m == m))`.
    """
    return (t > m) | ((t != t) & (m == m))


def first_min_update(t: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The running-minimum rule: t < m, or t is the first NaN."""
    return (t < m) | ((t != t) & (m == m))


def _binary(x: Any, y: Any) -> list[np.ndarray]:
    return broadcast(scalar(x, "x"), scalar(y, "y"))


def _arith(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str) -> Callable[[Inputs, Attribs, str | None], tuple[np.ndarray]]:
    def run(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
        x, y = _binary(inputs["x"], inputs["y"])
        return (np.asarray(fn(x, y), dtype=F32),)

    run.__doc__ = doc
    return run


# ---- arithmetic ----------------------------------------------------------------------

kernel("add")(_arith(np.add, "z = x + y (one IEEE addition, round to nearest even)"))
kernel("sub")(_arith(np.subtract, "z = x - y"))
kernel("mul")(_arith(np.multiply, "z = x * y"))
kernel("div")(_arith(np.divide, "z = x / y (IEEE: x/0 = +-inf, 0/0 = NaN)"))
kernel("max")(_arith(fmax, fmax.__doc__ or ""))
kernel("min")(_arith(fmin, fmin.__doc__ or ""))
kernel("pow")(_arith(transcendental.pow, "z = x ^ y by the pow program of transcendental.py"))


@kernel("clamp")
def clamp(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """clamp(x, a, b) = max(min(x, b), a) exactly as the fragment, with the min/max above:
    NaN in any operand gives NaN; if a > b the result is a."""
    x, a, b = broadcast(scalar(inputs["x"], "x"), scalar(inputs["a"], "a"), scalar(inputs["b"], "b"))
    return (np.asarray(fmax(fmin(x, b), a), dtype=F32),)


# ---- comparisons and logic -----------------------------------------------------------

def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], symbol: str) -> Callable[[Inputs, Attribs, str | None], tuple[np.ndarray]]:
    def run(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
        x, y = _binary(inputs["x"], inputs["y"])
        return (np.asarray(fn(x, y), dtype=np.bool_),)

    run.__doc__ = f"z = x {symbol} y (IEEE comparison: NaN compares false except with !=; -0 == +0)"
    return run


# IEEE comparisons: every comparison with a NaN is false except `ne`; -0 == +0.
for _name, _fn, _symbol in (("lt", np.less, "<"), ("gt", np.greater, ">"), ("le", np.less_equal, "<="),
                            ("ge", np.greater_equal, ">="), ("eq", np.equal, "=="), ("ne", np.not_equal, "!=")):
    kernel(_name)(_compare(_fn, _symbol))


@kernel("and")
def and_(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """z = x and y (logical, broadcast)."""
    x, y = broadcast(logical(inputs["x"], "x"), logical(inputs["y"], "y"))
    return (np.asarray(np.logical_and(x, y)),)


@kernel("or")
def or_(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """z = x or y (logical, broadcast)."""
    x, y = broadcast(logical(inputs["x"], "x"), logical(inputs["y"], "y"))
    return (np.asarray(np.logical_or(x, y)),)


@kernel("not")
def not_(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """y = not x."""
    return (np.asarray(np.logical_not(logical(inputs["x"], "x"))),)


@kernel("select")
def select(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """select(c, t, f): t where c else f, all three broadcast together (no arithmetic)."""
    cond = logical(inputs["condition"], "condition")
    t = generic(inputs["true_value"], dtype, "true_value")
    f = generic(inputs["false_value"], dtype, "false_value")
    if t.dtype != f.dtype:
        raise KernelError(f"true_value and false_value types differ: {t.dtype} vs {f.dtype}", "SEM-E005")
    c, t, f = broadcast(cond, t, f)
    return (np.asarray(np.where(c, t, f), dtype=t.dtype),)


# ---- unary ---------------------------------------------------------------------------

def _unary(fn: Callable[[np.ndarray], np.ndarray], doc: str) -> Callable[[Inputs, Attribs, str | None], tuple[np.ndarray]]:
    def run(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
        return (np.asarray(fn(scalar(inputs["x"], "x")), dtype=F32),)

    run.__doc__ = doc
    return run


def sign(x: np.ndarray) -> np.ndarray:
    """select(x > 0, 1, select(x < 0, -1, x)): +-0 and NaN are returned unchanged."""
    return np.where(x > ZERO, ONE, np.where(x < ZERO, -ONE, x))


# log(2.0) as computed by the log program: the divisor of log2 (fragment: log(x) / log(2.0)).
LOG_OF_TWO = F32(transcendental.log(np.asarray(F32(2.0))))

_UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "neg": (np.negative, "y = -x (sign bit flipped, also for 0 and NaN)"),
    "abs": (np.abs, "y = |x| (sign bit cleared)"),
    "rcp": (lambda x: ONE / x, "y = 1 / x (IEEE division)"),
    "sqr": (lambda x: x * x, "y = x * x"),
    "rsqr": (lambda x: ONE / (x * x), "y = 1 / (x * x)"),
    "sqrt": (np.sqrt, "y = IEEE square root (correctly rounded; sqrt(-0) = -0, x < 0 gives NaN)"),
    "rsqrt": (lambda x: ONE / np.sqrt(x), "y = 1 / sqrt(x) (two roundings)"),
    "exp": (transcendental.exp, "y = e^x by the exp program of transcendental.py"),
    "log": (transcendental.log, "y = ln x by the log program of transcendental.py"),
    "erf": (transcendental.erf, "y = erf x by the erf program of transcendental.py (an operation extension)"),
    "log2": (lambda x: transcendental.log(x) / LOG_OF_TWO, "y = log(x) / log(2.0), as the fragment"),
    "sign": (sign, sign.__doc__ or ""),
    "floor": (np.floor, "round toward -inf (exact)"),
    "ceil": (np.ceil, "round toward +inf (exact)"),
    "round": (np.rint, "round to nearest integer, ties to even (IEEE roundToIntegralTiesToEven, C rintf)"),
}

for _name, (_fn, _doc) in _UNARY.items():
    kernel(_name)(_unary(_fn, _doc))


@kernel("copy")
def copy(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """copy<T>(x) = x, bit for bit, any element type."""
    return (generic(inputs["x"], dtype, "x"),)


@kernel("add_n")
def add_n(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """The fragment's right fold: x[0] + (x[1] + (... + (x[n-1] + [0.0]))), innermost first."""
    values = [scalar(v, "x") for v in inputs["x"]]
    acc = np.zeros((1,), dtype=F32)
    for value in reversed(values):
        value, acc = broadcast(value, acc)
        acc = np.asarray(value + acc, dtype=F32)
    return (acc,)
