"""The coding standard of the generated C (MISRA C:2012), judged by cppcheck's MISRA addon.

codegen.standards   LLR-COD-011   every C source of a deployment (the items, the runtime, the harness, the
                                  deployment's tables) and every header they include, one cppcheck run

cppcheck (Debian `cppcheck`, 2.x) with `--addon=misra` reads the sources as gcc compiles them (C99,
`__GNUC__` defined as the host compiler's major version, no other define: the configuration the
qualified build compiles) and writes its findings as XML; the rule texts are not shipped, so a
finding is a rule number (`misra-c2012-18.4` -> `18.4`), a file and a line.

Every finding must be covered by a reviewed deviation of `misra-deviations.json` (next to this
module): the rule, the files it is accepted in (glob patterns on the path inside the deployment
folder: stable across models, never a line of generated code), the construct and why it is
accepted. A finding no deviation covers fails the check: a new rule, or a known rule in a new
file, is reviewed before it can pass. A deviation that matches nothing in a deployment is listed
in `measured` (`deviations_unmatched`), not a failure: the five shipped models do not all use every
construct.

Speed: the MISRA addon's initializer rules (9.2 to 9.5) are quadratic in the elements of an array
initializer, and a weights header holds tens of thousands of literals (branch3: 115 s per item, 3.9 s
reduced). cppcheck therefore reads a copy of each `nnef_weights_*.h` where an array of float
literals keeps its declaration, its first row of literals and its line numbers, its length cut to
that row: the constructs are all there, the values are codegen.trace's subject (bit for bit against
the tensor files). A row that is not only float literals keeps its array whole. cppcheck's own
(non-MISRA) findings are not this check's subject and are not judged (the reduced arrays would
make some of them spurious).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.codegen.shared.errors import CodegenError
from pipeline.diagnostics import Location, PipelineError
from pipeline.files import schema
from pipeline.files.treeguard import TreeRefused, parse_xml
from pipeline.ledger.checks import CheckResult, Verdict
from pipeline.toolchain import process
from pipeline.toolchain.cc import compiler_path

# The programs it runs (pipeline/ledger/dependencies.py): cppcheck's version enters the identities.
TOOLS: tuple[str, ...] = ("cppcheck", "${CC:-gcc}")

CPPCHECK = "cppcheck"
PACKAGE = "cppcheck"
DEVIATIONS_FILE = Path(__file__).with_name("misra-deviations.json")
TIMEOUT_S = 900.0
MAX_XML = 64 * 1024 * 1024                  # bytes of findings one run may write
MAX_ELEMENTS = 2_000_000
MISRA = "misra-c2012-"
# cppcheck could not read the code: the addon's findings on it are incomplete.
UNREAD = ("syntaxError", "internalError", "cppcheckError", "internalAstError", "preprocessorErrorDirective",
          "unknownMacro")
ROW = re.compile(r"^\s*(?:[-+]?(?:0[xX][0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?[pP][-+]?\d+[fF]|INFINITY|NAN)\s*,?\s*)+$")
ARRAY = re.compile(r"^(\s*static\s+const\s+float\s+\w+)\[(\d+)\](.*=\s*\{)\s*$")


@dataclass(frozen=True)
class Finding:
    """One MISRA finding: the rule (`18.4`, or `config` for the addon's own configuration note),
    the file inside the deployment folder, line and column."""
    rule: str
    file: str
    line: int
    column: int = 0

    def __str__(self) -> str:
        return f"MISRA C:2012 rule {self.rule} at {self.file}:{self.line}"


@dataclass(frozen=True)
class Deviation:
    """A reviewed deviation: `rule` accepted in the files matching `files` (globs on the path inside
    the deployment folder), for `construct`, because `reason`."""
    rule: str
    files: tuple[str, ...]
    construct: str
    reason: str

    def covers(self, finding: Finding) -> bool:
        return finding.rule == self.rule and any(fnmatch.fnmatchcase(finding.file, p) for p in self.files)


def load_deviations(path: Path = DEVIATIONS_FILE) -> list[Deviation]:
    """The deviations file, validated (schema misra-deviations-1; CODEGEN-E011 naming the problem)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CodegenError("CODEGEN-E011", f"the MISRA deviations file cannot be read: {error}",
                           Location.in_file(path)) from None
    schema.require(document, "misra-deviations-1", "CODEGEN-E011", path, error=CodegenError)
    seen: set[tuple[str, tuple[str, ...]]] = set()
    deviations = []
    for index, entry in enumerate(document["deviations"]):
        key = (entry["rule"], tuple(entry["files"]))
        if key in seen:
            raise CodegenError("CODEGEN-E011", f"deviation {index} repeats rule {entry['rule']} for the same files",
                               Location.in_file(path, key_path=f"deviations[{index}]"))
        seen.add(key)
        deviations.append(Deviation(entry["rule"], tuple(entry["files"]), " ".join(entry["construct"].split()),
                                    " ".join(entry["reason"].split())))
    return deviations


def parse_findings(text: str, folder: Path) -> tuple[list[Finding], list[str]]:
    """(MISRA findings, what cppcheck could not read) of cppcheck's `--xml` output run in `folder`;
    CODEGEN-E012 for output that is not cppcheck's XML (malformed, hostile, another format)."""
    try:
        root = parse_xml(text, max_elements=MAX_ELEMENTS, max_attributes=8 * MAX_ELEMENTS)
    except (TreeRefused, ET.ParseError) as error:
        raise CodegenError("CODEGEN-E012", f"cppcheck's XML output cannot be read: {error}") from None
    if root.tag != "results" or root.find("errors") is None:
        raise CodegenError("CODEGEN-E012", f"cppcheck's XML output has no <results><errors>: root <{root.tag[:40]}>")
    findings: set[Finding] = set()
    unread: list[str] = []
    for error in root.iter("error"):
        ident = str(error.get("id", ""))
        location = error.find("location")
        where = _inside(str(location.get("file", "")), folder) if location is not None else ""
        line = _number(location.get("line") if location is not None else None)
        if ident in UNREAD:
            unread.append(f"{ident} at {where}:{line}: {str(error.get('msg', ''))[:200]}")
        elif ident.startswith(MISRA) or ident == "misra-config":
            rule = ident[len(MISRA):] if ident.startswith(MISRA) else "config"
            if not re.fullmatch(r"\d{1,2}\.\d{1,2}|config|dir-\d{1,2}\.\d{1,2}", rule):
                raise CodegenError("CODEGEN-E012", f"cppcheck's XML names an unknown MISRA rule id {ident[:60]!r}")
            findings.add(Finding(rule, where, line, _number(location.get("column") if location is not None else None)))
    return sorted(findings, key=lambda f: (f.file, f.line, f.column, _rule_key(f.rule))), unread


def _number(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() and len(value) < 10 else 0


def _rule_key(rule: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", rule)) or (0,)


def _inside(name: str, folder: Path) -> str:
    """`name` (as cppcheck wrote it, relative to where it ran) as a posix path inside `folder`, or as given."""
    path = Path(name)
    try:
        resolved = (folder / path).resolve() if not path.is_absolute() else path.resolve()
        return resolved.relative_to(folder.resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


def judge(findings: list[Finding], deviations: list[Deviation]) -> tuple[list[Finding], dict[int, int]]:
    """(findings no deviation covers, {deviation index: findings it covers})."""
    uncovered, used = [], {i: 0 for i in range(len(deviations))}
    for finding in findings:
        covering = [i for i, d in enumerate(deviations) if d.covers(finding)]
        if not covering:
            uncovered.append(finding)
        for i in covering:
            used[i] += 1
    return uncovered, used


def reduce_weights(text: str) -> str:
    """A weights header with every float-literal array cut to its first row (same lines, module docstring)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        head = ARRAY.match(lines[i])
        end = i + 1
        while head and end < len(lines) and lines[end].strip() != "};":
            end += 1
        rows = lines[i + 1:end] if head else []
        if not head or end >= len(lines) or not rows or not all(ROW.match(r) for r in rows):
            out.append(lines[i])
            i += 1
            continue
        kept = rows[0].rstrip().rstrip(",")
        count = len([t for t in kept.split(",") if t.strip()])
        out += [f"{head.group(1)}[{count}]{head.group(3)}", kept] + [""] * (len(rows) - 1) + [lines[end]]
        i = end + 1
    return "\n".join(out)


def _gnuc_major() -> str:
    """`__GNUC__` of the host compiler (the configuration the qualified build compiles)."""
    said = process.text([compiler_path(), "-dumpversion"]).strip()
    major = said.split(".")[0]
    return major if major.isdigit() else "12"


def cppcheck_version() -> str | None:
    """`cppcheck --version`, or None when it is not installed."""
    if shutil.which(CPPCHECK) is None:
        return None
    return (process.text([CPPCHECK, "--version"]).splitlines() or ["unknown"])[0].strip()


def analyse(folder: Path, manifest: dict[str, Any], scratch: Path) -> tuple[list[Finding], list[str], dict[str, Any]]:
    """cppcheck's MISRA findings on the C sources of a generated deployment `folder` (a copy in `scratch`,
    weights headers reduced): (findings, what cppcheck could not read, measured)."""
    copy = scratch / "misra"
    if copy.exists():
        shutil.rmtree(copy)
    reduced = 0
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".c", ".h") or not path.is_file() or path.is_symlink():
            continue
        target = copy / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        if fnmatch.fnmatchcase(path.name, "nnef_weights_*.h"):
            small = reduce_weights(text)
            reduced += small != text
            text = small
        target.write_text(text, encoding="utf-8")
    sources = [s for s in manifest["sources"] if s.endswith(".c")]
    build = scratch / "cppcheck-build"
    build.mkdir(parents=True, exist_ok=True)
    output = scratch / "misra.xml"
    defines = [f"__GNUC__={_gnuc_major()}"]
    argv = [CPPCHECK, "--addon=misra", "--xml", f"--output-file={output}", f"--cppcheck-build-dir={build}",
            "--std=c99", "--language=c", "--quiet", *[f"-D{d}" for d in defines],
            *[f"-I{d}" for d in manifest.get("include_dirs", ["."])], *sources]
    started = time.perf_counter()
    done = process.run(argv, timeout=TIMEOUT_S, cwd=copy)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or not output.is_file():
        raise CodegenError("CODEGEN-E012", f"cppcheck exited {done.returncode}: {done.said.strip()[-500:]}")
    if output.stat().st_size > MAX_XML:
        raise CodegenError("CODEGEN-E012", f"cppcheck's XML output is larger than {MAX_XML} bytes")
    findings, unread = parse_findings(output.read_text(encoding="utf-8", errors="replace"), copy)
    measured = {"sources": sources, "defines": defines, "weights_headers_reduced": reduced,
                "cppcheck_seconds": round(seconds, 2)}
    return findings, unread, measured


def standards_result(check_id: str, subject: str, folder: Path, manifest: dict[str, Any], scratch: Path,
                     read: list[str], deviations_file: Path = DEVIATIONS_FILE) -> CheckResult:
    """codegen.standards of one generated C deployment: every MISRA finding covered by a deviation."""
    version = cppcheck_version()
    if version is None:
        return CheckResult(check_id, subject, Verdict.NOT_RUN,
                           f"{CPPCHECK} is not installed (Debian package {PACKAGE}): the MISRA C:2012 addon did not run",
                           {}, read, [])
    deviations = load_deviations(deviations_file)
    read = [*read, "pipeline/codegen/misra-deviations.json" if deviations_file == DEVIATIONS_FILE else deviations_file.name]
    measured: dict[str, Any] = {"cppcheck": version, "addon": "misra (MISRA C:2012, rule numbers only)"}
    try:
        findings, unread, more = analyse(folder, manifest, scratch)
    except (CodegenError, PipelineError) as error:
        return CheckResult(check_id, subject, Verdict.NOT_RUN, f"{error.code}: {error.message}", measured, read, [])
    measured.update(more)
    uncovered, used = judge(findings, deviations)
    by_rule: dict[str, dict[str, int]] = {}
    for finding in findings:
        files = by_rule.setdefault(finding.rule, {})
        files[finding.file] = files.get(finding.file, 0) + 1
    measured.update({
        "findings": len(findings), "rules": len(by_rule),
        "findings_by_rule": {r: by_rule[r] for r in sorted(by_rule, key=_rule_key)},
        "deviated": len(findings) - len(uncovered), "not_deviated": len(uncovered),
        "deviations_unmatched": [f"{deviations[i].rule} in {', '.join(deviations[i].files)}"
                                 for i, n in used.items() if n == 0]})
    if unread:
        measured["unread"] = unread[:10]
        return CheckResult(check_id, subject, Verdict.NOT_RUN,
                           f"cppcheck could not read the code ({len(unread)}): {unread[0]}", measured, read, [])
    if uncovered:
        listed = [str(f) for f in uncovered]
        measured["first_not_deviated"] = listed[:20]
        more_text = f" (and {len(uncovered) - 1} more)" if len(uncovered) > 1 else ""
        return CheckResult(check_id, subject, Verdict.FAIL,
                           f"{listed[0]}: no deviation in {deviations_file.name} covers it{more_text}",
                           measured, read, [])
    return CheckResult(check_id, subject, Verdict.PASS, "", measured, read, [])
