"""ACSL contracts of the transcendental programs: what Frama-C's EVA assumes of a call to
nnef_exp, nnef_sigmoid, ... instead of analysing its body (the prove step, docs/prove.md).

EVA analyses each program's bit manipulations (2^k built on the exponent field, the sign put
back through the bits) as "any float", so the programs are replaced, for the analysis only, by
a contract: a precondition (the argument is finite) and behaviours bounding the result. The
compiled code never sees a contract (nnef_math.h gives the body unless __FRAMAC__ is defined).

A contract is only as good as the program's agreement with it: every clause is written once,
here, in a notation both ACSL and C can spell (`x` the argument, `r` the result, isfinite,
isnan, comparisons, &&, ||, !), and tests/prove/test_contracts.py evaluates the compiled scalar
program on a stride-7 sweep of the float32 bit patterns (613,566,757 inputs: every exponent, every
residue of the low mantissa bits) and the special values, checks every clause, and that the
behaviours cover every admitted input exactly once (the vector forms are the reference's programs
lane by lane: codegen.transcendental checks their bits). Bounds are exact
float32 values (hex literals), compared in double precision in C and as reals in ACSL, which
agree for float32 operands.

pow has no contract: it takes two arguments, which no exhaustive test covers; an item using it
gets EVA's analysis of its body.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Behavior:
    """A case of a contract: when `assumes` holds of x, every `ensures` holds of x and r."""

    name: str
    assumes: str
    ensures: tuple[str, ...]


@dataclass(frozen=True)
class Contract:
    """The contract of the one-argument program nnef_<function>(float v_x)."""

    function: str
    requires: str
    behaviors: tuple[Behavior, ...]
    notes: str = ""
    names: dict[str, str] = field(default_factory=lambda: {"x": "v_x", "r": "\\result"})


def _hex(value: float) -> str:
    """`value` as a short exact hex literal (0x1.6p+6)."""
    mantissa, exponent = float(value).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


def _up(value: float) -> str:
    """The smallest float32 at or above `value` (a double), as an exact hex literal."""
    f = np.float32(value)
    if float(f) < value:
        f = np.nextafter(f, np.float32(np.inf))
    return _hex(float(f))


def _exp_ladder() -> tuple[str, ...]:
    """x <= c ==> r <= e^c (rounded up, plus 2^-20 relative: the program is within a few ulp),
    so that EVA bounds exp on an interval by its upper end."""
    clauses = []
    for c in (-64.0, -16.0, -4.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0):
        clauses.append(f"x <= {_hex(c)} ==> r <= {_up(math.exp(c) * (1 + 2.0 ** -20))}")
    return tuple(clauses)


EXP_FINITE_LIMIT = 88.0     # e^88 = 1.65e38 < FLT_MAX: the program's result is finite at or below it

CONTRACTS: dict[str, Contract] = {c.function: c for c in (
    Contract("exp", "isfinite(x)", (
        Behavior("finite", f"x <= {_hex(EXP_FINITE_LIMIT)}",
                 ("isfinite(r) && 0 <= r && r <= " + _up(math.exp(EXP_FINITE_LIMIT) * (1 + 2.0 ** -20)),
                  *_exp_ladder())),
        Behavior("large", f"!(x <= {_hex(EXP_FINITE_LIMIT)})", ("!isnan(r)",)),
    ), "e^x in [0, e^c] for x <= c; may overflow to +inf above 88"),
    Contract("sigmoid", "isfinite(x)", (
        Behavior("all", "1", ("isfinite(r) && 0 <= r && r <= 1",)),
    ), "in [0, 1]"),
    Contract("tanh", "isfinite(x)", (
        Behavior("all", "1", ("isfinite(r) && -1 <= r && r <= 1",)),
    ), "in [-1, 1]"),
    Contract("erf", "isfinite(x)", (
        Behavior("all", "1", ("isfinite(r) && -1 <= r && r <= 1",)),
    ), "in [-1, 1]"),
    Contract("softplus", "isfinite(x)", (
        Behavior("negative", "x <= 0", ("isfinite(r) && 0 <= r && r <= 1",)),
        Behavior("positive", "!(x <= 0)", ("!isnan(r) && x <= r", "x <= 0x1p127 ==> isfinite(r) && r <= x + 1")),
    ), "ln(1 + e^x): in [0, 1] for x <= 0, in [x, x + 1] above"),
    Contract("log", "isfinite(x) && 0 < x", (
        Behavior("below_one", "x <= 1", ("isfinite(r) && -0x1.ap6 <= r && r <= 0",)),
        Behavior("above_one", "!(x <= 1)", ("isfinite(r) && 0 <= r && r <= 0x1.64p6",)),
    ), "ln x for x > 0: in [-104, 0] up to 1, in [0, 89] above"),
)}


# ---------------------------------------------------------------- spelling

_TOKENS = re.compile(r"\s*(==>|&&|\|\||<=|>=|==|!=|[-+*/()<>!]|isfinite|isnan|x|r|0x[0-9a-fA-F.]+p[-+]?\d+|\d+(?:\.\d+)?)")


def _tokens(expression: str) -> list[str]:
    """The tokens of a clause; ValueError on anything outside the notation."""
    out, at = [], 0
    while at < len(expression.rstrip()):
        match = _TOKENS.match(expression, at)
        if match is None:
            raise ValueError(f"contract clause {expression!r}: unexpected text at {at}")
        out.append(match.group(1))
        at = match.end()
    return out


def _joined(tokens: list[str]) -> str:
    """Tokens with a space around binary operators only (no space after (, ! or a unary minus)."""
    out = ""
    for i, token in enumerate(tokens):
        before = tokens[i - 1] if i else ""
        tight = (not out or token == ")" or before in ("(", "!") or before.endswith(("finite", "NaN", "isnan"))
                 or (before == "-" and (i < 2 or tokens[i - 2] in ("(", "<=", ">=", "<", ">", "==", "!=", "&&", "||", "==>"))))
        out += token if tight else " " + token
    return out


def acsl(expression: str, names: dict[str, str]) -> str:
    """A clause in ACSL: x and r renamed, isfinite/isnan as \\is_finite/\\is_NaN."""
    spelled = {"isfinite": "\\is_finite", "isnan": "\\is_NaN", **names}
    return _joined([spelled.get(t, t) for t in _tokens(expression)])


def c_predicate(expression: str) -> str:
    """A clause as a C expression over `double x, r` (an implication A ==> B as !(A) || (B))."""
    tokens = _tokens(expression)
    if "==>" in tokens:
        at = tokens.index("==>")
        return f"(!({c_predicate(' '.join(tokens[:at]))}) || ({c_predicate(' '.join(tokens[at + 1:]))}))"
    return _joined(tokens)


def acsl_contract(contract: Contract) -> str:
    """The ACSL annotation EVA reads before the prototype of nnef_<function>."""
    names = contract.names
    lines = [f"/*@ requires admitted: {acsl(contract.requires, names)};", "    assigns \\result \\from v_x;"]
    for behavior in contract.behaviors:
        lines.append(f"    behavior {behavior.name}:")
        assumed = "\\true" if behavior.assumes == "1" else acsl(behavior.assumes, names)
        lines.append(f"      assumes {assumed};")
        lines += [f"      ensures {acsl(e, names)};" for e in behavior.ensures]
    if len(contract.behaviors) > 1:
        lines += ["    complete behaviors;", "    disjoint behaviors;"]
    lines.append("*/")
    return "\n".join(lines)


def framac_declaration(contract: Contract) -> str:
    """What nnef_math.h gives Frama-C instead of the program's body: the contract and a prototype."""
    return (f"/* The analysed form (docs/prove.md): {contract.notes}; checked against the program on a\n"
            f" * stride-7 sweep of the float32 bit patterns by tests/prove/test_contracts.py. */\n"
            f"{acsl_contract(contract)}\n"
            f"float nnef_{contract.function}(float v_x);")
