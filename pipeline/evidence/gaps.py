"""What a requirement still owes, as an auditor reads it: one finding per requirement, model and check.

A finding of the coverage rules (pipeline/evidence/matrix.py) names one requirement, one model and
one check, and says in one line of at most MAX_MESSAGE characters its verdict and the reason in
brief (`brief`); it points at the input that caused it: the deploy.yaml key that asks for the
check (the tolerance a numeric comparison applies, the deployment, its platform, the MET budget
or platform), the requirement's own line for a stale link; and `Finding.fix` says what to do.
The full reason stays with the result (the model's page, trace.json's outcomes).

`owed_why` is the same reason in brief for the list of what a requirement still owes (the "why"
column of the console summary and of the index).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Sequence

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.ledger.checks import Verdict, Where
from pipeline.project.oneline import shorten

MAX_MESSAGE = 200     # a finding's message: one line
MAX_FIX = 200         # its fix: one line
MAX_WHY = 90          # the "why" of a requirement still owed

E_NOT_APPLICABLE = "EVID-E027"   # a requirement that applies to no model (note)

# The verdicts of results, worst first (a finding reports its check's worst result).
_WORST = (Verdict.FAIL, Verdict.NOT_RUN, Verdict.EMULATED, Verdict.PASS, Verdict.NOT_APPLICABLE)


def _separators(text: str, separator: str) -> list[int]:
    """Where `separator` occurs in `text` outside parentheses and brackets."""
    found, depth = [], 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(separator, index):
            found.append(index)
    return found


def brief(reason: str, limit: int = 120) -> str:
    """The first clause of a reason, on one line, at most `limit` characters (cut between words).

    Reasons lead with what happened and append figures after `; ` (`host is not the timing
    platform (...); measured here: max ...`) or `: ` (`no computed bound: not discriminating:
    output 'prob', ...`): the clause before the first `; ` is kept, then, while too long,
    what comes before the last `: ` (separators inside parentheses do not count), unless that
    says too little (a bare name, less than half the room): then words are cut.
    """
    text = " ".join(str(reason).split())
    cuts = _separators(text, "; ")
    if cuts:
        text = text[:cuts[0]]
    while len(text) > limit:
        cuts = _separators(text, ": ")
        head = text[:cuts[-1]] if cuts else ""
        if " " not in head or len(head) < limit // 2:
            break
        text = head
    return shorten(text, limit)


@dataclass(frozen=True)
class Cause:
    """The input behind a gap (a key path in the model's deploy.yaml, or a span of its own) and the fix."""

    key_path: str
    fix: str
    span: Span | None = None


_INSTALL = re.compile(r"apt-get install ([a-z0-9][a-z0-9 .+-]*[a-z0-9+])")
_JUSTIFIED = re.compile(r"of at least ([0-9.]+e[+-]?[0-9]+|[0-9.]+) would be justified")


def _deployment(subject: str, model: str) -> str:
    prefix = f"{model}/"
    return subject[len(prefix):].split("/", 1)[0] if subject.startswith(prefix) else ""


ONNX_STEPS = ("export", "check")     # steps judging the exported model: the input that caused a gap is model.onnx


def cause(check_id: str, verdict: Verdict, reason: str, subject: str, model: str, where: Where | None = None,
          step: str = "") -> Cause:
    """The input behind this result (a deploy.yaml key, model.onnx) and what to do about it (module docstring)."""
    deployment = _deployment(subject, model)
    of_deployment = f"deployments.{deployment}" if deployment else "deployments"
    packages = _INSTALL.search(reason)
    if packages:
        names = packages.group(1).strip()
        return Cause(f"{of_deployment}.platform" if deployment else of_deployment,
                     f"install {names} (`sudo apt-get install {names}`, or `bash tools/setup verify`), then `doit verify`")
    justified = _JUSTIFIED.search(reason)
    if justified:
        return Cause("validation.tolerance.max_abs_error",
                     f"raise validation.tolerance.max_abs_error to at least {justified.group(1)} (the measured "
                     "float32 rounding), or find why the results are this far apart")
    if check_id in ("export.numeric", "export.tolerance") and verdict is Verdict.FAIL:
        return Cause("validation.tolerance.max_abs_error", "find why the exported description is this far from the "
                     "model (the model page has the worst element), or justify a larger validation.tolerance")
    if step in ONNX_STEPS and verdict is not Verdict.EMULATED and not check_id.startswith("export.bound_"):
        return Cause("", f"fix the model or the exporter: reports/{model}/report.html#check-{check_id} has the full "
                     "reason", Span(f"models/{model}/model.onnx", 1, 1))
    if step == "evidence":
        return Cause("", f"see reports/{model}/report.html#check-{check_id}; `doit verify` rebuilds the evidence",
                     Span(f"artifacts/{model}", 1, 1) if check_id != "evidence.package"
                     else Span(f"reports/{model}/evidence.zip", 1, 1))
    if check_id == "compare.onnxruntime" and verdict is Verdict.FAIL:
        return Cause("validation.tolerance.max_abs_error", "find why the code is this far from onnxruntime (the model "
                     "page has the worst element), or justify a larger validation.tolerance.max_abs_error")
    if check_id.startswith("export.bound_") and "not discriminating" in reason:
        return Cause("validation.tolerance", "nothing to do for this model: the computed bound does not discriminate "
                     "here, the measured-rounding rule decides (docs/compare.md)")
    if check_id.startswith("met."):
        return _met_cause(check_id, verdict, reason, model, of_deployment, where)
    if verdict is Verdict.EMULATED:
        return Cause(of_deployment, _on_target_fix(check_id))
    if verdict is Verdict.PASS:     # a pass obtained off the target platform
        return Cause(of_deployment, "verify it on the target platform (`doit verify strict=1` there)")
    page = f"reports/{model}/report.html#check-{check_id}"
    if verdict is Verdict.FAIL:
        return Cause(of_deployment, f"fix what {page} names (the full reason and its artifacts)")
    return Cause(of_deployment, f"make it run here: {page} says what it lacks")


def _on_target_fix(check_id: str) -> str:
    if "cuda" in check_id:
        return "run it on a GPU: tools/gpu-check (docs/codegen-cuda.md)"
    if "nvdla" in check_id or "accelerator" in check_id:
        return "run the loadables on an NVDLA board (docs/codegen-nvdla.md)"
    if "platform" in check_id:
        return "run it on a board: a platform with an ssh runner in deploy.yaml (docs/execute.md \"Platforms\")"
    if "traces" in check_id:
        return "capture the traces where every item runs on its own hardware (a GPU, a board)"
    return "run it on the target platform"


def _met_cause(check_id: str, verdict: Verdict, reason: str, model: str, of_deployment: str,
               where: Where | None) -> Cause:
    if verdict is Verdict.FAIL and check_id == "met.budget":
        return Cause("met.budget_us", "make the code faster on the target, or justify a larger met.budget_us")
    if verdict is Verdict.FAIL:
        return Cause("met", f"find the cause of the variation (reports/{model}/report.html#met)")
    if "accepted baseline" in reason or "accept-met" in reason:
        return Cause("met", f"accept a baseline on the timing platform: `python -m pipeline compare accept-met {model}`")
    if "emulat" in reason and where is not Where.TARGET:
        return Cause(f"{of_deployment}.platform" if of_deployment != "deployments" else "met",
                     "measure on the hardware itself: an emulator's figures are never judged (docs/compare.md)")
    if "timing platform" in reason:
        return Cause("met.platform", "measure on the timing platform: name it in met.platform and set NNCERT_PLATFORM "
                     "to that name there (docs/compare.md)")
    if verdict is Verdict.PASS:
        return Cause("met.platform", "measure on the timing platform (`doit verify strict=1` there)")
    return Cause(of_deployment, f"count on a machine of the code's architecture (reports/{model}/report.html"
                 f"#check-{check_id})")


class Locator:
    """Spans of deploy.yaml keys of each model (`models/<m>/deploy.yaml:<line>`: the line of the key, or of its
    nearest written ancestor's for a key the spec leaves out), read once per model through load_deploy."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def span(self, model: str, key_path: str) -> Span:
        file = f"models/{model}/deploy.yaml"
        positions = _positions(str(self.root / file))
        line, column = _nearest(positions, key_path)
        return Span(file, line, column)


@lru_cache(maxsize=64)
def _positions_cached(path: str, stamp: tuple[int, int]) -> dict[str, tuple[int, int]]:
    from pipeline.project.deploy import DeployError, load_deploy

    try:
        return dict(load_deploy(path).key_positions)
    except (DeployError, OSError):
        return {}


def _positions(path: str) -> dict[str, tuple[int, int]]:
    try:
        stat = Path(path).stat()
    except OSError:
        return {}
    return _positions_cached(path, (stat.st_mtime_ns, stat.st_size))


def _nearest(positions: Mapping[str, tuple[int, int]], key_path: str) -> tuple[int, int]:
    """The key's position, else its nearest written ancestor's, else line 1."""
    path = key_path
    while path:
        if path in positions:
            return positions[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return 1, 1


@dataclass(frozen=True)
class Gap:
    """One check short of a pass on one model, for one requirement: its worst result."""

    requirement: str
    model: str
    check_id: str
    verdict: Verdict
    subject: str
    reason: str
    subjects: int                    # how many results of the check share that worst verdict
    where: Where | None = None
    stale: bool = False
    step: str = ""


def _worst(results: Sequence[tuple[Verdict, str, str, Where | None]], on_target: bool
           ) -> tuple[Verdict, str, str, Where | None, int] | None:
    """The worst result short of a pass where it must be, and how many share its verdict (None: all fine)."""
    short = [r for r in results if r[0] not in (Verdict.PASS, Verdict.NOT_APPLICABLE)
             or (r[0] is Verdict.PASS and on_target and r[3] is not Where.TARGET)]
    if not short:
        return None
    worst = min(short, key=lambda r: _WORST.index(r[0]))
    return (*worst, sum(1 for r in short if r[0] is worst[0]))


def gaps_of(requirement: str, model: str, check_id: str,
            results: Sequence[tuple[Verdict, str, str, Where | None]], on_target: bool, stale: bool,
            step: str = "") -> Gap | None:
    """The gap of one check on one model for `requirement` (results: verdict, subject, reason, where)."""
    if stale:
        return Gap(requirement, model, check_id, Verdict.NOT_RUN, model, "stale link", 1, None, True, step)
    worst = _worst(results, on_target)
    if worst is None:
        return None
    verdict, subject, reason, where, count = worst
    return Gap(requirement, model, check_id, verdict, subject, reason, count, where, False, step)


def message(gap: Gap) -> str:
    """`HLR-NUM-002 on lenet5: compare.onnxruntime fail (lenet5/single): <reason in brief>`, at most MAX_MESSAGE."""
    if gap.stale:
        return shorten(f"{gap.requirement} on {gap.model}: {gap.check_id} links through a stale link: the requirement "
                       "changed since the link was reviewed", MAX_MESSAGE)
    verdict = "pass off the target" if gap.verdict is Verdict.PASS else gap.verdict.value
    subject = "" if gap.subject == gap.model else f" ({gap.subject}{f' and {gap.subjects - 1} more' if gap.subjects > 1 else ''})"
    head = f"{gap.requirement} on {gap.model}: {gap.check_id} {verdict}{subject}"
    reason = gap.reason or ("obtained on the host or an emulator, not on the target" if gap.verdict is Verdict.PASS
                            else "no reason given")
    return shorten(f"{head}: {brief(reason, max(40, MAX_MESSAGE - len(head) - 2))}", MAX_MESSAGE)


def finding(gap: Gap, code: str, severity: Severity, locate: Callable[[str, str], Span],
            requirement_span: Span | None) -> Finding:
    """The finding of `gap` (module docstring)."""
    if gap.stale:
        return Finding(code, severity, message(gap), requirement_span,
                       fix="review the check against the requirement's new text, re-run it, then "
                           "`python -m pipeline evidence baseline` (docs/evidence.md)")
    found = cause(gap.check_id, gap.verdict, gap.reason, gap.subject, gap.model, gap.where, gap.step)
    span = found.span or locate(gap.model, found.key_path)
    return Finding(code, severity, message(gap), span, fix=shorten(found.fix, MAX_FIX))


def owed_why(gaps: Sequence[Gap]) -> str:
    """What most of a requirement's gaps say, in brief: `not run on 5 models: no computed bound: not
    discriminating` (the check named first when several fall short; `+n other reasons` when they differ)."""
    if not gaps:
        return ""
    keys = Counter((g.check_id, "stale link" if g.stale else g.verdict.value, "" if g.stale else brief(g.reason, 60))
                   for g in gaps)
    (check_id, verdict, reason), _ = keys.most_common(1)[0]
    models = len({g.model for g in gaps if g.check_id == check_id})
    verdict = "pass off the target" if verdict == "pass" else verdict
    several = len({g.check_id for g in gaps}) > 1
    head = (f"{check_id} " if several else "") + verdict + (f" on {models} models" if models > 1 else "")
    more = f" (+{len(keys) - 1} other)" if len(keys) > 1 else ""
    return shorten(f"{head}{more}: {reason}" if reason else f"{head}{more}", MAX_WHY)


# What to do about the findings that are not gaps (docs/evidence.md "Error codes"), by code.
FIXES: dict[str, str] = {
    "EVID-E012": "register a check that verifies it (docs/conventions.md \"Checks and results\")",
    "EVID-E015": "review the check against the requirement's new text, then `python -m pipeline evidence baseline`",
    "EVID-E016": "review the new links, then `python -m pipeline evidence baseline`",
    "EVID-E017": "`python -m pipeline evidence baseline` drops the entry",
    "EVID-E022": "re-run the step that wrote the file (`doit verify`); a result file is never edited by hand",
    "EVID-E023": "register the check (docs/conventions.md) or remove its results",
    "EVID-E024": "re-run the step (`doit verify`) so that its results record the check's requirements now",
    "EVID-E031": "re-run the step that wrote it (`doit --always-execute verify`); an artifact is never edited by hand",
    "EVID-E032": "re-run the step on its current inputs (`doit verify`)",
    "EVID-E033": "remove the file, or have the step record it",
    "EVID-E034": "re-run the step (`doit verify`)",
    "EVID-E035": "re-run the step (`doit verify`)",
    "EVID-E036": "fix what the message names, then `doit verify`",
    "EVID-E040": "re-run the code generation (`doit verify`); a trace is never edited by hand",
    "EVID-E080": "run the model's chain (`doit evidence:<model>`), or give its deploy.yaml `excluded: <reason>`",
    "EVID-E081": "see why the step stopped (its failed.json), fix it, then `doit verify`",
    "EVID-E084": "find what made it worse (the model's page); accept a new baseline only deliberately",
}


def with_fixes(findings: Sequence[Finding]) -> list[Finding]:
    """`findings`, each without a fix given the one its code calls for (FIXES; a refused model folder's
    DEPLOY-/NAME- code: its spec or its name); the others as they are."""
    from dataclasses import replace

    fixed = []
    for f in findings:
        fix = f.fix or FIXES.get(f.code, "")
        if not fix and f.code.startswith(("DEPLOY-", "NAME-")):
            fix = "fix the model folder as the message says (docs/deploy.md), then `doit verify`"
        fixed.append(replace(f, fix=fix) if fix != f.fix else f)
    return fixed
