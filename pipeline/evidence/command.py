"""`python -m pipeline evidence ...`: build, verify and inspect evidence outside doit.

    evidence verify PACKAGE [--key PUB]   re-hash a package against its manifest and records, check its
                                   signature with --key (0 ok, 1 mismatch, 2 unreadable)
    evidence build [--model M] [--strict] [--exclude M] [--baseline PREVIOUS] [--sign-key KEY]
                                   packages + trace matrix + JUnit XML; 1 if any requirement fails, a
                                   model's chain did not run, or anything got worse than PREVIOUS
    evidence merge SHARD... [--strict] [--exclude M] [--baseline PREVIOUS] [--sign-key KEY]
                                   copy the shards' artifacts in, then build (one CI job per model)
    evidence keygen PRIVATE PUBLIC a new Ed25519 signing key pair
    evidence summary               the summary of reports/trace.json; 1 if any requirement fails
    evidence requirements          lint the requirement set like a compiler; 1 on errors
    evidence baseline              accept the current links as reviewed (requirements/links.lock.json)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pipeline.diagnostics import Location, PipelineError
from pipeline.evidence.matrix import DEVELOPMENT, STRICT
from pipeline.terminal import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, print_findings, report_error, say
from pipeline.project.layout import check_output_folders, model_names



def _verify(args: argparse.Namespace) -> int:
    from pipeline.evidence.package import E_EXTRA, E_MISSING, E_TAMPERED, verify_package
    from pipeline.evidence.signing import load_public_key

    public = load_public_key(args.key) if args.key else None
    report = verify_package(args.package, public)
    if args.json:
        say(json.dumps(report.to_json(), indent=2, sort_keys=True))
        return report.exit_code
    for name, expected, actual in report.tampered:
        say(f"{E_TAMPERED} TAMPERED {name}: manifest sha256 {expected}, actual {actual}")
    for name in report.missing:
        say(f"{E_MISSING} MISSING  {name}")
    for name in report.extra:
        say(f"{E_EXTRA} EXTRA    {name}")
    other = [f for f in report.findings if f.code not in (E_TAMPERED, E_MISSING, E_EXTRA)]
    print_findings(other, sys.stdout)
    if report.ok:
        say(f"OK {args.package}: {report.checked} entries match the manifest and the step records")
    else:
        counts: dict[str, int] = {}
        for finding in report.findings:
            counts[finding.code] = counts.get(finding.code, 0) + 1
        listed = ", ".join(f"{count} x {code}" for code, count in sorted(counts.items()))
        say(f"FAILED {args.package}: {len(report.tampered)} tampered, {len(report.missing)} missing, "
              f"{len(report.extra)} extra ({listed})")
    say(_authenticity(report))
    return report.exit_code


def _authenticity(report: Any) -> str:
    """The line saying what was checked: integrity only, or who built the package. Without --key a
    signature is only present: the key id it names is a claim anyone can write, never "signed by"."""
    from pipeline.evidence.signing import E_SIGNATURE

    if report.authenticated:
        return f"authentic: signed by keyid {', '.join(report.signed_by)}, verified with the --key given"
    if report.key_given:
        claimed = f"its signature names keyid {', '.join(report.signed_by)}" if report.signed_by else "unsigned"
        return f"{E_SIGNATURE} NOT AUTHENTIC: {claimed}; no signature by the --key given verifies"
    if report.signed_by:
        return ("integrity checked, not authenticity (signature present, not checked: it names keyid "
                f"{', '.join(report.signed_by)}; give --key PUBLIC to check who built it)")
    return "integrity checked, not authenticity (unsigned; give --key PUBLIC to check who built it)"


def _build(args: argparse.Namespace) -> int:
    from pipeline.evidence.build import build_all
    from pipeline.evidence.regression import read_baseline
    from pipeline.evidence.signing import signing_with
    from pipeline.evidence.summary import error_count, summary_text

    root = Path(args.root).absolute()    # joined once: paths below it are never joined to a relative root again
    check_output_folders(root)
    known = model_names(root)
    unknown = [m for m in args.model or [] if m not in known]
    if unknown:
        return report_error(PipelineError("EVID-E060", f"unknown model(s) {', '.join(unknown)}; "
                                          f"models: {', '.join(known) or 'none'}"))
    unknown = [m for m in args.exclude or [] if m not in known]
    if unknown:
        return report_error(PipelineError("EVID-E060", f"--exclude: unknown model(s) {', '.join(unknown)}; "
                                          f"models: {', '.join(known) or 'none'}"))
    baseline = read_baseline(args.baseline) if args.baseline else None
    with signing_with(args.sign_key):
        packages, matrix = build_all(root, args.model or None, mode=STRICT if args.strict else DEVELOPMENT,
                                     exclude=args.exclude or (), baseline=baseline)
    for package in packages:
        state = "verified" if package.verify.ok else "DOES NOT VERIFY"
        say(f"{os.path.relpath(package.path)}: {state}; {package.reproducibility['reason']}")
    document = matrix.to_json()
    say(summary_text(document))
    return EXIT_FAILED if error_count(document) else EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    from pipeline.evidence.build import build_all
    from pipeline.evidence.regression import read_baseline
    from pipeline.evidence.merge import merge_shards
    from pipeline.evidence.signing import signing_with
    from pipeline.evidence.summary import error_count, summary_text

    root = Path(args.root).absolute()    # a relative --root was joined twice (tinyproj/tinyproj/..., PIPE-E901)
    unknown = [m for m in args.exclude or [] if m not in model_names(root)]
    if unknown:
        return report_error(PipelineError("EVID-E060", f"--exclude: unknown model(s) {', '.join(unknown)}"))
    baseline = read_baseline(args.baseline) if args.baseline else None
    with signing_with(args.sign_key):   # an unusable key is refused before anything is copied
        origin = merge_shards(args.shards, root)
        for model, shard in sorted(origin.items()):
            say(f"merged {model} from {shard}")
        packages, matrix = build_all(root, mode=STRICT if args.strict else DEVELOPMENT, exclude=args.exclude or (),
                                     baseline=baseline)
    for package in packages:
        say(f"{os.path.relpath(package.path)}: {'verified' if package.verify.ok else 'DOES NOT VERIFY'}")
    document = matrix.to_json()
    say(summary_text(document))
    return EXIT_FAILED if error_count(document) else EXIT_OK


def _keygen(args: argparse.Namespace) -> int:
    from pipeline.evidence.signing import generate_key_pair

    keyid = generate_key_pair(args.private, args.public)
    say(f"{args.private}: Ed25519 signing key (mode 0600; keep it secret)\n{args.public}: its public key, "
          f"keyid {keyid} (give it to `evidence verify --key`)")
    return EXIT_OK


def _summary(args: argparse.Namespace) -> int:
    from pipeline.evidence.build import report_paths
    from pipeline.evidence.summary import error_count, summary_text

    path = report_paths(args.root)["json"]
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return report_error(PipelineError("EVID-E061", f"cannot read {path}: {exc} (run `doit evidence` first)",
                                          Location.in_file(path)))
    say(summary_text(document))
    return EXIT_FAILED if error_count(document) else EXIT_OK


def _requirements(args: argparse.Namespace) -> int:
    from pipeline.evidence.checklinks import load_checks, registry_findings
    from pipeline.ledger.requirements import read_requirements

    requirements, findings = read_requirements(args.root)
    if args.checks:
        specs, load_findings = load_checks()
        findings = findings + load_findings + registry_findings(specs, requirements)
    if args.json:
        say(json.dumps({
            "requirements": [r.to_json() for r in requirements],
            "findings": [f.to_json() for f in findings],
        }, indent=2, sort_keys=True))
    else:
        print_findings(findings, sys.stdout)
        say(f"{len(requirements)} requirements in {len(requirements.files)} files; "
              f"{sum(f.is_error for f in findings)} errors, {sum(not f.is_error for f in findings)} warnings")
    return EXIT_FAILED if any(f.is_error for f in findings) else EXIT_OK


def _baseline(args: argparse.Namespace) -> int:
    from pipeline.evidence.baseline import write_baseline
    from pipeline.evidence.checklinks import load_checks
    from pipeline.ledger.requirements import RequirementsInvalid, load_requirements

    try:
        requirements = load_requirements(args.root)
    except RequirementsInvalid as exc:
        print_findings(exc.findings, sys.stderr)
        return EXIT_BAD_INPUT
    specs, findings = load_checks()
    print_findings(findings, sys.stderr)
    path = write_baseline(specs, requirements, args.root)
    say(f"{path}: baselined the links of {len(requirements)} requirements and {len(specs)} checks")
    return EXIT_OK


def _guard(func):  # type: ignore[no-untyped-def]
    """PipelineError from the library becomes exit 2 with its code and location."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except PipelineError as exc:
            return report_error(exc)

    return run


def _run_rule_options(parser: argparse.ArgumentParser) -> None:
    """--exclude and --baseline (docs/evidence.md, "Runs that cannot pass on nothing")."""
    parser.add_argument("--exclude", action="append", metavar="MODEL",
                        help="a model this run may leave out: its chain not running does not fail the run (repeatable)")
    parser.add_argument("--baseline", metavar="PREVIOUS",
                        help="a previous run's reports/trace.json or junit.xml: fail if anything got worse, list what improved")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `evidence` and its sub-commands to `python -m pipeline`."""
    parser = subparsers.add_parser("evidence", help="evidence packages, trace matrix, JUnit XML, requirement checks")
    sub = parser.add_subparsers(dest="evidence_command", metavar="SUBCOMMAND")

    verify = sub.add_parser("verify", help="re-hash an evidence package against its manifest and step records")
    verify.add_argument("package", metavar="PACKAGE", help="reports/<model>/evidence.zip")
    verify.add_argument("--key", metavar="PUBLIC", help="Ed25519 public key (PEM or ssh-ed25519): also check who "
                        "signed the package (without it, only integrity is checked)")
    verify.add_argument("--json", action="store_true", help="machine-readable report")
    verify.set_defaults(func=_guard(_verify))

    keygen = sub.add_parser("keygen", help="write a new Ed25519 signing key pair (PEM)")
    keygen.add_argument("private", metavar="PRIVATE", help="the private key file to create (mode 0600)")
    keygen.add_argument("public", metavar="PUBLIC", help="the public key file")
    keygen.set_defaults(func=_guard(_keygen))

    build = sub.add_parser("build", help="build packages, trace matrix and JUnit XML")
    build.add_argument("--model", action="append", help="only this model (repeatable); default: every model")
    build.add_argument("--root", default=".", help="project root (default: .)")
    build.add_argument("--strict", action="store_true",
                       help="fail unless every requirement is verified on its platform (the certification run)")
    _run_rule_options(build)
    build.add_argument("--sign-key", metavar="PRIVATE", help="sign every package with this Ed25519 key (PEM; "
                       "default: the file named by NNCERT_SIGNING_KEY, else unsigned)")
    build.set_defaults(func=_guard(_build))

    merge = sub.add_parser("merge", help="merge the artifacts of shards (one per model) and build the whole evidence")
    merge.add_argument("shards", nargs="+", metavar="SHARD", help="a project folder where some models ran")
    merge.add_argument("--root", default=".", help="the merge project (default: .; a clean checkout)")
    merge.add_argument("--strict", action="store_true", help="as for build")
    _run_rule_options(merge)
    merge.add_argument("--sign-key", metavar="PRIVATE", help="as for build")
    merge.set_defaults(func=_guard(_merge))

    summary = sub.add_parser("summary", help="print the summary of reports/trace.json")
    summary.add_argument("--root", default=".", help="project root (default: .)")
    summary.set_defaults(func=_guard(_summary))

    reqs = sub.add_parser("requirements", help="check the requirement set (and the check registry)")
    reqs.add_argument("--root", default=".", help="project root (default: .)")
    reqs.add_argument("--checks", action="store_true", help="also check that every registered check names existing requirements")
    reqs.add_argument("--json", action="store_true", help="requirements with fingerprints, and findings, as JSON")
    reqs.set_defaults(func=_guard(_requirements))

    baseline = sub.add_parser("baseline", help="record the current links as reviewed (requirements/links.lock.json)")
    baseline.add_argument("--root", default=".", help="project root (default: .)")
    baseline.set_defaults(func=_guard(_baseline))

    def usage(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT

    parser.set_defaults(func=usage)
