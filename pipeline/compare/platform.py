"""The platform part of the compare step: a deployment run on a platform other than the host (an emulator
such as qemu, a board reached over SSH): its outputs, traces, MET figures and instruction counts, judged
as what was obtained there (docs/execute.md "Platforms")."""

from __future__ import annotations

import numpy as np

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.compare.context import Run
from pipeline.compare.numeric import compare
from pipeline.compare.timing import judge_met, judge_path
from pipeline.compare.traces import judge_traces
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Obtained, Verdict
from pipeline.nnef.tensorfile import read_tensor
from pipeline.project.layout import project_relative, step_dir


def judge_platform(run: Run, reference: dict[str, np.ndarray]) -> list[CheckResult]:
    """A deployment run on a platform other than the host (docs/execute.md "Platforms"): its outputs
    against the reference on the vectors it ran (0 ULP, NaN = NaN: NaN bit patterns differ across
    platforms), its traces, its MET figures (judged only on a timing platform reached as a target:
    an emulator's are reported, never judged) and its instruction counts. Emulated runs never pass."""
    model, subject, doc, folder, root = run.model, run.subject, run.doc, run.folder, run.root
    platform = doc["platform"]
    where = platform["obtained"]["where"]
    obtained = (Obtained.emulation(platform["obtained"]["detail"]) if where == "emulation"
                else Obtained.target(platform["name"]) if where == "target" else Obtained.host())
    vectors = int(doc["vectors"])
    outputs = {n: read_tensor(root / p) for n, p in doc["outputs"].items()}
    exact = compare(outputs, {n: r[:vectors] for n, r in reference.items() if n in outputs}, exact=True)
    written = [project_relative(write_json(folder / "numeric.json", {"schema_version": 2, "platform": platform,
                                                                     "vectors": vectors, "reference": exact.to_json()}),
                                root)]
    read = list(doc["outputs"].values()) + [project_relative(step_dir(model, "compare", root) / "reference", root)]
    failure = exact.first_failure()
    said = f"on {platform['obtained']['detail']}, {vectors} vectors"
    if failure is not None:
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.FAIL, f"{said}: {failure.reason}", exact.measured(),
                         read, written, obtained)
    elif where == "emulation":
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.EMULATED, f"{said}: 0 ULP against the reference "
                         "(NaN = NaN); emulated, so never pass", exact.measured(), read, written, obtained)
    else:
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.PASS, "", exact.measured(), read, written, obtained)
    traces = judge_traces(subject, run.split_dir, run.run_dir, doc, folder, root)
    verdict = Verdict.EMULATED if traces.verdict is Verdict.PASS and where == "emulation" else traces.verdict
    traces = result(checks.PLATFORM_TRACES, subject, verdict,
                    f"{said}: every trace a valid path of the net, outputs identical across the runs"
                    if verdict is Verdict.EMULATED else traces.reason, traces.measured, traces.read, traces.written,
                    obtained if traces.verdict is not Verdict.NOT_RUN else None)
    if platform.get("timing") and where == "target":
        judged_on: tuple[Obtained | None, str] = (obtained, "")
    elif where == "emulation":
        judged_on = (None, f"measured on {platform['obtained']['detail']}: an emulator's timings are reported, never "
                           "judged")
    else:
        judged_on = (None, f"platform {platform['name']} is not a timing platform (deploy.yaml `timing: true`)")
    met = judge_met(run, judged_on, obtained)
    return [numbers, traces, *met, judge_path(subject, run.run_dir, folder, root, checks.PLATFORM_PATH)]
