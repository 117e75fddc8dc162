"""The result of one analysis: a verdict from the closed set, and its evidence.

Every analysis of the Petri step returns an `Outcome`. A failure carries a PETRI-Ennn code,
a one-line reason naming the first problem (instruction, item, file:line:col) and a
machine-readable counterexample (the marking, the blocked transitions, the missing
producer, the wait cycle...). `not run` always says why; nothing here ever says `pass`
without having decided it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pipeline.ledger.checks import Verdict

# Counterexample lists are cut to this many entries in reports (the count is kept).
MAX_LISTED = 20


@dataclass
class Outcome:
    analysis: str
    verdict: Verdict
    reason: str = ""
    code: str = ""
    measured: dict[str, Any] = field(default_factory=dict)
    counterexample: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.verdict = Verdict(self.verdict)
        if self.verdict is not Verdict.PASS and not self.reason:
            raise ValueError(f"analysis {self.analysis}: verdict {self.verdict.value!r} needs a reason")

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def failed(self) -> bool:
        return self.verdict is Verdict.FAIL

    def to_json(self) -> dict[str, Any]:
        return {
            "analysis": self.analysis,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "code": self.code,
            "measured": self.measured,
            "counterexample": self.counterexample,
        }


def passed(analysis: str, **measured: Any) -> Outcome:
    return Outcome(analysis, Verdict.PASS, measured=dict(measured))


def failed(analysis: str, code: str, reason: str, counterexample: dict[str, Any] | None = None, **measured: Any) -> Outcome:
    return Outcome(analysis, Verdict.FAIL, reason, code, dict(measured), counterexample)


def not_run(analysis: str, reason: str, **measured: Any) -> Outcome:
    return Outcome(analysis, Verdict.NOT_RUN, reason, measured=dict(measured))


def listed(items: list[Any]) -> list[Any]:
    """At most MAX_LISTED entries of a counterexample list."""
    return items[:MAX_LISTED]


def digits(n: int) -> int:
    """Decimal digits of n >= 0, without converting huge integers to text (Python caps that at 4300 digits)."""
    if n < 10**18:
        return len(str(n))
    k = int((n.bit_length() - 1) * 0.30102999566398120)   # floor(log10(n)) or one less
    return k + 2 if n >= 10 ** (k + 1) else k + 1


def log10_of(n: int) -> float:
    """log10 of an integer >= 1 of any size (float conversion would overflow beyond 1e308)."""
    shift = max(0, n.bit_length() - 60)
    return math.log10(n >> shift) + shift * math.log10(2)


def approximate_log10(log10: float) -> str:
    """'~1.234e5678' for the number whose log10 is `log10`."""
    exponent = int(log10)
    return f"~{10 ** (log10 - exponent):.3f}e{exponent}"


def approximate(n: int) -> str:
    """'~1.234e5678' for a huge integer."""
    return approximate_log10(log10_of(n))


def json_number(n: int) -> int | str:
    """An integer as JSON: exact decimal text beyond 2**53 (readers' doubles would round it), an
    approximation beyond 4000 digits."""
    if abs(n) <= 2**53:
        return n
    return str(n) if digits(n) <= 4000 else approximate(n)
