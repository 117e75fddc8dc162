"""Check results and the one registry of pipeline checks.

Every verification the pipeline performs is a *check*: it has a stable ID, states the
requirement IDs (requirements/*.yaml) it verifies, and produces a `CheckResult` whose
verdict comes from a closed set. A check that could not run says `not run` with the
reason; it never says `pass`. The trace matrix and the JUnit XML are built from these
results, so a check that is not registered here cannot contribute coverage.

Step modules declare their checks at import time with `register_check`; the list of
modules that do so is `CHECK_MODULES` (names only: this registry imports no step), and
`pipeline.evidence.checklinks.all_checks()` imports them all.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

SCHEMA_VERSION = 1

# Modules that register checks when imported. Add a line when a step adds checks.
CHECK_MODULES: tuple[str, ...] = (
    "pipeline.nnef.checks",
    "pipeline.semantics.checks",
    "pipeline.petri.checks",
    "pipeline.evidence.selfchecks",
    "pipeline.export.checks",
    "pipeline.split.checks",
    "pipeline.codegen.checks",
    "pipeline.compare.checks",
    "pipeline.export.trained",
    "pipeline.execute.sanitizers",
    "pipeline.execute.coverage",
    "pipeline.prove.checks",
)


class Verdict(str, enum.Enum):
    """The closed set of verdicts. Only `pass` counts as coverage of a requirement.

    `n/a` (does not apply) is not `not run`: a check with nothing to judge on a model (a model
    without a GPU deployment has no CUDA code to compile) says so with the reason, and the
    trace matrix leaves it out of coverage and out of the status rules; `not run` is a check
    that applies but could not run here.
    """

    PASS = "pass"
    FAIL = "fail"
    NOT_RUN = "not run"
    EMULATED = "emulated"
    NOT_APPLICABLE = "n/a"


class Where(str, enum.Enum):
    """Where a verdict was obtained: the closed set the trace matrix reports per requirement."""

    HOST = "host"              # the machine that ran the pipeline (a development host, a CI runner)
    EMULATION = "emulation"    # an emulator of the target (host emulation of CUDA, the NVDLA emulator)
    TARGET = "target"          # the target platform itself, as declared (deploy.yaml met.platform, ...)


@dataclass(frozen=True)
class Obtained:
    """Where a check result was obtained, and a description: the host's architecture and OS
    (never its name), the emulator, or the target platform's declared name."""

    where: Where
    detail: str

    @classmethod
    def host(cls) -> "Obtained":
        import platform  # here, not at the top: doit imports this module to list tasks

        return cls(Where.HOST, f"{platform.machine() or 'unknown machine'} {platform.system() or 'unknown OS'}")

    @classmethod
    def emulation(cls, emulator: str) -> "Obtained":
        return cls(Where.EMULATION, emulator)

    @classmethod
    def target(cls, platform_name: str) -> "Obtained":
        return cls(Where.TARGET, platform_name)

    def label(self) -> str:
        """`host (x86_64 Linux)`, `emulation (...)`, `target:<platform>`."""
        return f"target:{self.detail}" if self.where is Where.TARGET else f"{self.where.value} ({self.detail})"

    def to_json(self) -> dict[str, str]:
        return {"where": self.where.value, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Obtained":
        return cls(Where(data["where"]), str(data.get("detail", "")))


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: what it is and which requirements it verifies."""

    id: str
    title: str
    step: str
    requirements: tuple[str, ...]
    description: str = ""


_REGISTRY: dict[str, CheckSpec] = {}


def register_check(
    check_id: str,
    title: str,
    step: str,
    requirements: Iterable[str],
    description: str = "",
) -> CheckSpec:
    """Declare a check. Re-registering the same ID with a different definition is an error."""
    spec = CheckSpec(check_id, title, step, tuple(requirements), description)
    existing = _REGISTRY.get(check_id)
    if existing is not None and existing != spec:
        raise ValueError(f"check {check_id!r} registered twice with different definitions")
    _REGISTRY[check_id] = spec
    return spec


def check_spec(check_id: str) -> CheckSpec:
    """The registered spec of `check_id` (KeyError names the unknown ID)."""
    try:
        return _REGISTRY[check_id]
    except KeyError:
        raise KeyError(f"check {check_id!r} is not registered") from None


@dataclass
class CheckResult:
    """The outcome of one check on one model (or one file set).

    `reason` is mandatory for `fail` (the first divergence or counterexample) and for
    `not run` / `emulated` / `n/a` (why). `measured` holds numbers with their names; `read` and
    `written` list the artifact paths (relative to the project root where possible).
    `obtained` says where the verdict was obtained: by default the host that ran the step,
    or, for an `emulated` verdict, the emulation named by its reason; a check that ran on
    the target platform says so explicitly (`Obtained.target(name)`).
    """

    check_id: str
    subject: str
    verdict: Verdict
    reason: str = ""
    measured: dict[str, Any] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    obtained: Obtained | None = None

    def __post_init__(self) -> None:
        self.verdict = Verdict(self.verdict)
        if self.verdict is not Verdict.PASS and not self.reason:
            raise ValueError(f"check {self.check_id}: verdict {self.verdict.value!r} needs a reason")
        if self.verdict is Verdict.NOT_APPLICABLE:
            self.obtained = None       # nothing was obtained anywhere: the check does not apply
        elif self.obtained is None:
            self.obtained = (Obtained.emulation(self.reason) if self.verdict is Verdict.EMULATED
                             else Obtained.host())
        if self.verdict is Verdict.EMULATED and self.obtained.where is not Where.EMULATION:
            raise ValueError(f"check {self.check_id}: an emulated verdict is obtained by emulation")

    @property
    def requirements(self) -> tuple[str, ...]:
        return check_spec(self.check_id).requirements

    def to_json(self) -> dict[str, Any]:
        return {
            "check_id": self.check_id,
            "subject": self.subject,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "requirements": list(self.requirements),
            "measured": self.measured,
            "read": sorted(self.read),
            "written": sorted(self.written),
            "obtained": self.obtained.to_json() if self.obtained else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckResult":
        return cls(
            check_id=data["check_id"],
            subject=data["subject"],
            verdict=Verdict(data["verdict"]),
            reason=data.get("reason", ""),
            measured=dict(data.get("measured", {})),
            read=list(data.get("read", [])),
            written=list(data.get("written", [])),
            obtained=Obtained.from_json(data["obtained"]) if data.get("obtained") else None,
        )


def not_applicable(check_id: str, subject: str, reason: str) -> CheckResult:
    """The `n/a` result of a check with nothing to judge on `subject` (the reason says why it does not apply)."""
    return CheckResult(check_id, subject, Verdict.NOT_APPLICABLE, reason)


def results_document(results: Iterable[CheckResult]) -> dict[str, Any]:
    """The JSON document a step writes as `checks.json` beside its artifacts."""
    ordered = sorted(results, key=lambda r: (r.subject, r.check_id))
    return {"schema_version": SCHEMA_VERSION, "results": [r.to_json() for r in ordered]}


def read_results_document(data: Mapping[str, Any]) -> list[CheckResult]:
    """Parse a `checks.json` document written by `results_document`."""
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"checks document has schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    return [CheckResult.from_json(item) for item in data["results"]]
