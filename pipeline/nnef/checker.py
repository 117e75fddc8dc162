"""The NNEF checker: files -> all findings + flat graphs.

`check_paths` parses every file, checks each document (version, extensions, fragments),
builds the flat graph of every graph or graphitem (pipeline.nnef.lowering), checks the
tensor files of the variables, and applies the cross-item rules to all graphitems given
together. It never stops at the first problem: every finding is returned, sorted by
location, each with a stable code (pipeline.nnef.findings).

A path may be a file or a directory holding `graph.nnef` (the layout the Khronos
`nnef.load_graph` reads); tensor files are looked up as `<dir>/<label>.dat` relative to
the description's directory, or to `tensor_dir` when given (item files of a split live
apart from the exported tensors).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from pipeline.diagnostics import Finding, Severity, Span, has_errors, sorted_findings
from pipeline.files.gcpause import gc_paused
from pipeline.nnef import ast
from pipeline.nnef.catalogue import standard_catalogue
from pipeline.nnef.findings import PROFILE_DEPENDENT
from pipeline.nnef.fragments import user_catalogue
from pipeline.nnef.graph import Graph, Operation
from pipeline.nnef.lowering import GraphBuilder, Options
from pipeline.nnef.multiitem import check_items
from pipeline.nnef.parser import parse_text, read_description
from pipeline.nnef.masks import judge
from pipeline.nnef.tensorfile import LABEL_CODE, TensorFileError, first_non_finite, label_problem, read_tensor_file

log = logging.getLogger(__name__)

PROFILES = ("certification", "standard")
KNOWN_EXTENSIONS = ("KHR_enable_fragment_definitions", "KHR_enable_operator_expressions")
GRAPH_FILE = "graph.nnef"


@dataclass
class CheckReport:
    """Everything the checker found: findings, the graphs built, the source texts."""

    findings: list[Finding] = field(default_factory=list)
    graphs: list[Graph] = field(default_factory=list)
    documents: dict[str, ast.Document] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """A description file: the path itself, or `graph.nnef` inside a directory."""
    candidate = Path(path)
    return candidate / GRAPH_FILE if candidate.is_dir() else candidate


def _document_findings(document: ast.Document) -> list[Finding]:
    findings = []
    version = document.version
    if (version.major, version.minor) != (1, 0):
        shown = f"{version.major}.{version.minor}" if version.major >= 0 else "in an invalid format"
        findings.append(Finding("NNEF-E002", Severity.ERROR, f"unsupported version {shown}; NNEF 1.0 is supported",
                                version.span))
    for extension in document.extensions:
        for name in extension.names:
            if name.value not in KNOWN_EXTENSIONS:
                findings.append(Finding("NNEF-E007", Severity.ERROR, f"unknown extension '{name.value}'; known: "
                                        + ", ".join(KNOWN_EXTENSIONS), name.span))
    if document.fragments and "KHR_enable_fragment_definitions" not in document.extension_names():
        for fragment in document.fragments:
            findings.append(Finding("NNEF-E006", Severity.ERROR, f"fragment '{fragment.name.value}' is defined "
                                    "without 'extension KHR_enable_fragment_definitions;'", fragment.name.span))
    if not document.graphs:
        findings.append(Finding("NNEF-E004", Severity.ERROR, "the document has no graph definition",
                                Span(document.file, 1, 1)))
    return findings


def check_document(document: ast.Document, profile: str = "certification") -> tuple[list[Graph], list[Finding]]:
    """Findings and flat graphs of one parsed document (no tensor files, no cross-item rules)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; profiles are {', '.join(PROFILES)}")
    findings = _document_findings(document)
    catalogue, fragment_findings = user_catalogue(document, standard_catalogue())
    findings += fragment_findings
    extensions = document.extension_names()
    options = Options(
        profile=profile,
        operator_expressions="KHR_enable_operator_expressions" in extensions,
        fragment_definitions="KHR_enable_fragment_definitions" in extensions,
    )
    graphs = []
    for definition in document.graphs:
        builder = GraphBuilder(definition, catalogue, options, document.file, flat_document=document.flat)
        graphs.append(builder.build())
        findings += builder.findings
    return graphs, findings


def check_tensor_files(graph: Graph, base: Path, read: bool = True, finite: bool = False) -> list[Finding]:
    """Each `variable` has a label inside the folder and (with `read`) a readable `<base>/<label>.dat`
    matching its shape and type; with `finite`, holding finite numbers only (NNEF-E034), except an
    attention mask's -inf (pipeline.nnef.masks: a -inf that reaches only softmaxes, no row masked whole)."""
    findings = []
    unfinished: dict[str, tuple[np.ndarray, Operation, Path]] = {}
    for op in graph.operations:
        if op.name != "variable":
            continue
        label = str(op.attribs.get("label", ""))
        problem = label_problem(label)
        if problem is not None:  # judged before anything is opened: no read outside the folder
            findings.append(Finding(LABEL_CODE, Severity.ERROR, f"variable '{op.output_refs()[0].name}': {problem}",
                                    op.span))
            continue
        if not read:
            continue
        path = base / f"{label.lstrip('/')}.dat"
        try:  # below `base`, no link followed (pipeline.files.readguard)
            stored = read_tensor_file(f"{label.lstrip('/')}.dat", base=base)
        except TensorFileError as error:
            code = "NNEF-E030" if error.missing else "NNEF-E032"
            message = (f"tensor file '{path}' of variable '{op.output_refs()[0].name}' is missing" if error.missing
                       else f"tensor file '{path}': {error.message}")
            findings.append(Finding(code, Severity.ERROR, message, op.span))
            continue
        declared = list(op.attribs.get("shape", []))
        if list(stored.data.shape) != declared:
            findings.append(Finding("NNEF-E031", Severity.ERROR, f"tensor file '{path}' holds shape "
                                    f"{list(stored.data.shape)}, the declaration says {declared}", op.span))
        if stored.nnef_dtype != (op.dtype or "scalar"):
            findings.append(Finding("NNEF-E031", Severity.ERROR, f"tensor file '{path}' holds {stored.nnef_dtype} "
                                    f"items ({stored.bits} bits), the declaration says {op.dtype}", op.span))
        bad = first_non_finite(stored.data) if finite else None
        if bad is not None:
            unfinished[op.output_refs()[0].name] = (stored.data, op, path)
    if unfinished:
        _, problems = judge(graph, {name: data for name, (data, _, _) in unfinished.items()})
        for problem in problems:
            _, op, path = unfinished[problem.variable]
            what = "" if problem.full_row else f" holds {problem.value} at index {list(problem.index)} and"
            findings.append(Finding("NNEF-E034", Severity.ERROR, f"tensor file '{path}'{what} {problem.reason} (a "
                                    "weight must be a finite number; a -inf only an attention mask ahead of a softmax)",
                                    op.span))
    return findings


def _apply_profile(findings: Iterable[Finding], profile: str) -> list[Finding]:
    """Explicitness findings are errors for certification, warnings otherwise."""
    severity = Severity.ERROR if profile == "certification" else Severity.WARNING
    return [
        Finding(f.code, severity, f.message, f.span, f.related) if f.code in PROFILE_DEPENDENT else f
        for f in findings
    ]


def check_text(text: str, file: str = "<string>", profile: str = "certification") -> CheckReport:
    """Check one description given as text (no tensor files)."""
    with gc_paused():
        return _check_text(text, file, profile)


def _check_text(text: str, file: str, profile: str) -> CheckReport:
    report = CheckReport(texts={file: text})
    if _check_one(report, text, file, profile):
        report.findings += check_items(report.graphs)
    report.findings = sorted_findings(_apply_profile(report.findings, profile))
    return report


def _check_one(report: CheckReport, text: str, file: str, profile: str) -> list[Graph] | None:
    """Parse and check one document into `report`; its graphs, or None when it does not parse."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; profiles are {', '.join(PROFILES)}")
    parsed = parse_text(text, file)
    report.findings += parsed.findings
    if parsed.document is None:
        return None
    report.documents[file] = parsed.document
    graphs, findings = check_document(parsed.document, profile)
    report.graphs += graphs
    report.findings += findings
    return graphs


def check_paths(
    paths: Sequence[str | os.PathLike[str]],
    profile: str = "certification",
    tensors: bool = True,
    tensor_dir: str | os.PathLike[str] | None = None,
    finite: bool = False,
) -> CheckReport:
    """Check NNEF files (or directories holding graph.nnef) together.

    All graphitems across the files form one multi-item description for the cross-item
    rules. With `tensors`, variable tensor files are checked too; with `finite` (the `check`
    command and step), a NaN or an infinity in one is an error (NNEF-E034). The code
    generators' and the interpreter's own readers do not ask: their tests run IEEE specials
    through the kernels on purpose, and the export refuses non-finite weights at the source.
    """
    with gc_paused():
        return _check_paths(paths, profile, tensors, tensor_dir, finite)


def _check_paths(paths: Sequence[str | os.PathLike[str]], profile: str, tensors: bool,
                 tensor_dir: str | os.PathLike[str] | None, finite: bool = False) -> CheckReport:
    report = CheckReport()
    for given in paths:
        path = resolve_path(given)
        log.info("checking %s", path)
        text, problem = read_description(path)
        report.texts[str(path)] = text
        if problem is not None:
            report.findings.append(problem)
            continue
        graphs = _check_one(report, text, str(path), profile)
        if graphs is None:
            continue
        base = Path(tensor_dir) if tensor_dir is not None else path.parent
        for graph in graphs:  # labels are judged even when the files are not read
            report.findings += check_tensor_files(graph, base, read=tensors, finite=finite)
    report.findings += check_items(report.graphs)
    report.findings = sorted_findings(_apply_profile(report.findings, profile))
    return report
