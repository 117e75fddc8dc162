"""Artifact records: what a step wrote, from what, with which tools.

A step calls `record_step` once at its end. The record lands beside the artifacts as
`artifacts/<model>/<step>/record.json` and lists every output and input with the SHA-256
and size computed here, the command, the tool versions, and the step's dependencies beyond
its inputs (the digest of its code and the identities of its tools, as its doit up-to-date
check compares them: pipeline.ledger.dependencies). It holds no timestamp, host or
absolute path, so the same inputs and tools give a byte-identical record.

`check_records` is the other side: it re-hashes what the records claim and follows the
chain of input hashes from step to step, so an artifact edited after it was recorded, or a
step that ran on an older version of its input, is reported.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pipeline.files.atomic import write_json
from pipeline.diagnostics import Finding, Location, PipelineError, Severity, Span
from pipeline.ledger.freshness import FAILED_FILE, check_output
from pipeline.ledger.hashing import FileDigest, file_digest, iter_files, relative_posix
from pipeline.ledger.dependencies import step_dependencies
from pipeline.ledger.tools import tool_versions
from pipeline.project.layout import CHECKS_FILE, RECORD_FILE, STEPS, step_dir

SCHEMA_VERSION = 1

E_RECORD_INPUT = "EVID-E030"
E_RECORD_CHANGED = "EVID-E031"
E_RECORD_STALE_INPUT = "EVID-E032"
E_RECORD_UNRECORDED = "EVID-E033"
E_RECORD_MISSING = "EVID-E034"
E_RECORD_INVALID = "EVID-E035"
E_STEP_FAILED = "EVID-E036"


@dataclass(frozen=True)
class StepRecord:
    """The content of one record.json."""

    model: str
    step: str
    command: tuple[str, ...]
    inputs: tuple[FileDigest, ...]
    outputs: tuple[FileDigest, ...]
    tools: Mapping[str, str] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)
    dependencies: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "step": self.step,
            "command": list(self.command),
            "inputs": [d.to_json() for d in self.inputs],
            "outputs": [d.to_json() for d in self.outputs],
            "tools": dict(sorted(self.tools.items())),
            "parameters": dict(self.parameters),
            "dependencies": dict(self.dependencies),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StepRecord":
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"record schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}")
        return cls(
            model=str(data["model"]),
            step=str(data["step"]),
            command=tuple(str(c) for c in data["command"]),
            inputs=tuple(FileDigest.from_json(d) for d in data["inputs"]),
            outputs=tuple(FileDigest.from_json(d) for d in data["outputs"]),
            tools=dict(data.get("tools", {})),
            parameters=dict(data.get("parameters", {})),
            dependencies=dict(data.get("dependencies", {})),
        )


def record_path(model: str, step: str, root: str | Path = ".") -> Path:
    return step_dir(model, step, root) / RECORD_FILE


def _digests(paths: Iterable[str | os.PathLike[str]], root: Path, what: str) -> tuple[FileDigest, ...]:
    found: dict[str, FileDigest] = {}
    for path in paths:
        full = Path(path) if Path(path).is_absolute() else root / path
        try:
            rel = relative_posix(full, root)
        except ValueError:
            raise PipelineError(E_RECORD_INPUT, f"{what} {path} lies outside the project root", Location.in_file(path)) from None
        if full.is_dir():
            for member in iter_files(full):
                digest = file_digest(member, root)
                found[digest.path] = digest
        elif full.is_file():
            found[rel] = file_digest(full, root)
        else:
            raise PipelineError(E_RECORD_INPUT, f"{what} {rel} does not exist; a record lists only files that exist", Location.in_file(rel))
    return tuple(sorted(found.values()))


def record_step(
    model: str,
    step: str,
    *,
    inputs: Sequence[str | os.PathLike[str]],
    outputs: Sequence[str | os.PathLike[str]] | None = None,
    command: Sequence[str] | str = (),
    parameters: Mapping[str, Any] | None = None,
    extra_tools: Mapping[str, str] | None = None,
    root: str | os.PathLike[str] = ".",
) -> Path:
    """Write artifacts/<model>/<step>/record.json; call it once, after the step's last write.

    `inputs`: files or folders the step read (project-relative or absolute under `root`).
    `outputs`: files or folders it wrote; default: every file in the step folder (checks.json
    included). `command`: the argv (or a shell string) that reproduces the step.
    `parameters`: JSON values that influenced the outputs (seeds, tolerances).
    `extra_tools`: versions of non-Python tools used (e.g. {"gcc": "12.2.0"}).
    """
    base = Path(root)
    folder = step_dir(model, step, base)
    record_file = folder / RECORD_FILE
    output_paths = list(outputs) if outputs is not None else [folder]
    for path in output_paths:
        check_output(model, step, Path(path) if Path(path).is_absolute() else base / path)
    produced = tuple(d for d in _digests(output_paths, base, "output") if d.path != relative_posix(record_file, base))
    argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(str(c) for c in command)
    tools = tool_versions()
    tools.update(extra_tools or {})
    record = StepRecord(
        model=model,
        step=step,
        command=argv,
        inputs=_digests(inputs, base, "input"),
        outputs=produced,
        tools=tools,
        parameters=dict(parameters or {}),
        dependencies=step_dependencies(model, step, base),
    )
    return write_json(record_file, record.to_json())


def read_record(path: str | os.PathLike[str]) -> StepRecord:
    with open(path, encoding="utf-8") as handle:
        return StepRecord.from_json(json.load(handle))


def _failure_finding(model: str, step: str, failed: Path, base: Path) -> Finding:
    """EVID-E036: the last run of `step` failed; its outputs and the later steps' are gone."""
    rel = relative_posix(failed, base)
    try:
        data = json.loads(failed.read_text(encoding="utf-8"))
        detail = f"{data.get('code', '?')}: {data.get('message', '')}"
    except (OSError, ValueError, AttributeError) as exc:
        detail = f"(unreadable {FAILED_FILE}: {exc})"
    return Finding(E_STEP_FAILED, Severity.ERROR, f"{model}/{step}: the step failed, {detail}; its outputs were "
                   "removed, and so were those of every later step that read them", Span(rel, 1, 1))


@dataclass
class RecordCheck:
    """What `check_records` found for one model: findings, plus the digests it verified."""

    findings: list[Finding] = field(default_factory=list)
    records: dict[str, StepRecord] = field(default_factory=dict)
    current: dict[str, FileDigest] = field(default_factory=dict)
    steps_with_results: list[str] = field(default_factory=list)


def check_records(model: str, root: str | os.PathLike[str] = ".") -> RecordCheck:
    """Re-hash every recorded file of `model` and follow input hashes across steps.

    Errors: a step with results but no record, a record that cannot be read, a recorded file
    changed or missing, an input whose hash differs from its producer's current record.
    Warning: a file in a step folder that no record lists.
    """
    base = Path(root)
    outcome = RecordCheck()
    for step in STEPS:
        folder = step_dir(model, step, base)
        if not folder.is_dir():
            continue
        rec_path = folder / RECORD_FILE
        rel_rec = relative_posix(rec_path, base)
        failed = folder / FAILED_FILE
        if failed.is_file():
            outcome.findings.append(_failure_finding(model, step, failed, base))
            continue
        has_results = (folder / CHECKS_FILE).is_file()
        if has_results:
            outcome.steps_with_results.append(step)
        if not rec_path.is_file():
            if has_results or any(True for _ in iter_files(folder)):
                outcome.findings.append(
                    Finding(E_RECORD_MISSING, Severity.ERROR, f"{model}/{step}: no {RECORD_FILE}; the step must call record_step()", Span(rel_rec, 1, 1))
                )
            continue
        try:
            record = read_record(rec_path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            outcome.findings.append(Finding(E_RECORD_INVALID, Severity.ERROR, f"{model}/{step}: unreadable record: {exc}", Span(rel_rec, 1, 1)))
            continue
        outcome.records[step] = record
        recorded = {d.path for d in record.outputs}
        for digest in record.outputs:
            full = base / digest.path
            if not full.is_file():
                outcome.findings.append(
                    Finding(E_RECORD_CHANGED, Severity.ERROR, f"{model}/{step}: recorded output {digest.path} is missing", Span(rel_rec, 1, 1))
                )
                continue
            current = file_digest(full, base)
            outcome.current[current.path] = current
            if current.sha256 != digest.sha256 or current.size != digest.size:
                outcome.findings.append(
                    Finding(
                        E_RECORD_CHANGED,
                        Severity.ERROR,
                        f"{model}/{step}: {digest.path} changed since it was recorded (recorded sha256 {digest.sha256[:12]}, now {current.sha256[:12]})",
                        Span(rel_rec, 1, 1),
                    )
                )
        for member in iter_files(folder):
            rel = relative_posix(member, base)
            if rel != rel_rec and rel not in recorded:
                outcome.findings.append(
                    Finding(E_RECORD_UNRECORDED, Severity.WARNING, f"{model}/{step}: {rel} is not listed in {RECORD_FILE}", Span(rel_rec, 1, 1))
                )
    producers = {d.path: (step, d) for step, rec in outcome.records.items() for d in rec.outputs}
    for step, record in outcome.records.items():
        rel_rec = relative_posix(record_path(model, step, base), base)
        for used in record.inputs:
            producer = producers.get(used.path)
            if producer is not None and producer[1].sha256 != used.sha256:
                outcome.findings.append(
                    Finding(
                        E_RECORD_STALE_INPUT,
                        Severity.ERROR,
                        f"{model}/{step}: input {used.path} was {used.sha256[:12]} when {step} ran, but {producer[0]} now records "
                        f"{producer[1].sha256[:12]}; re-run {step}",
                        Span(rel_rec, 1, 1),
                    )
                )
            elif producer is None and not (base / used.path).is_file():
                outcome.findings.append(
                    Finding(E_RECORD_CHANGED, Severity.ERROR, f"{model}/{step}: recorded input {used.path} no longer exists", Span(rel_rec, 1, 1))
                )
            elif producer is None:
                now = outcome.current.get(used.path) or file_digest(base / used.path, base)
                outcome.current[now.path] = now
                if now.sha256 != used.sha256:
                    outcome.findings.append(
                        Finding(
                            E_RECORD_STALE_INPUT,
                            Severity.ERROR,
                            f"{model}/{step}: input {used.path} changed since {step} ran (was {used.sha256[:12]}, now {now.sha256[:12]}); re-run {step}",
                            Span(rel_rec, 1, 1),
                        )
                    )
    return outcome
