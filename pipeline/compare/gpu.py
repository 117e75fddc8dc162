"""The GPU part of the compare step: a cuda deployment's outputs (host emulation in two block orders, and
the GPU where one ran), its runs on the GPU, and the C program's other judgements on a mixed deployment
whose cuda or nvdla items ran on an emulation.
"""

from __future__ import annotations

import numpy as np

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.compare.context import Run
from pipeline.compare.numeric import compare
from pipeline.compare.timing import judge_met, timing_platform
from pipeline.compare.traces import judge_traces
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Obtained, Verdict
from pipeline.nnef.tensorfile import read_tensor
from pipeline.project.layout import project_relative


def judge_cuda(run: Run, reference: dict[str, np.ndarray]) -> CheckResult:
    """compare.cuda_reference on an emulated run: both orders 0 ULP -> emulated, else fail; on the GPU where it ran."""
    subject, doc, folder, root = run.subject, run.doc, run.folder, run.root
    read = [*doc["outputs"].values(), *doc["outputs_shuffled"].values()]
    orders = {"in order": doc["outputs"], f"shuffled (seed {doc['shuffle_seed']})": doc["outputs_shuffled"]}
    comparisons = {order: compare({n: read_tensor(root / p) for n, p in paths.items()}, reference, exact=True)
                   for order, paths in orders.items()}
    path = write_json(folder / "cuda-numeric.json", {"schema_version": 1, "emulation": doc["emulation"],
                                                     **{o: c.to_json() for o, c in comparisons.items()}})
    obtained = Obtained.emulation("CUDA host emulation (g++ -ffp-contract=off, nnef_cuda_emulate.h)")
    measured = {"vectors": doc["vectors"], "emulation": doc["emulation"], "gpu": doc["gpu"]["run"],
                **{o: c.measured() for o, c in comparisons.items()}}
    for order, comparison in comparisons.items():
        failure = comparison.first_failure()
        if failure is not None:
            return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"host emulation, blocks and threads {order}: "
                          f"{failure.reason}", measured, read, [project_relative(path, root)], obtained)
    gpu = doc.get("gpu") or {}
    if gpu.get("status") == "failed":
        return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"GPU run {gpu['run']}", measured, read,
                      [project_relative(path, root)], Obtained.target(gpu["obtained"].removeprefix("target:")))
    if gpu.get("status") == "ran":       # on the GPU: pass or fail there (the emulation agreed above)
        on_gpu = Obtained.target(gpu["obtained"].removeprefix("target:"))
        count = int(gpu["vectors"])
        ran = compare({n: read_tensor(root / p) for n, p in gpu["outputs"].items()},
                      {n: r[:count] for n, r in reference.items() if n in gpu["outputs"]}, exact=True)
        written = [project_relative(path, root), project_relative(
            write_json(folder / "gpu-numeric.json", {"schema_version": 1, "device": gpu["device"], **ran.to_json()}), root)]
        measured = {**measured, "gpu_vectors": count, **{f"gpu_{k}": v for k, v in ran.measured().items()}}
        failure = ran.first_failure()
        if failure is not None:
            return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"on the GPU: {failure.reason}", measured,
                          read + list(gpu["outputs"].values()), written, on_gpu)
        return result(checks.CUDA_REFERENCE, subject, Verdict.PASS, "", measured, read + list(gpu["outputs"].values()),
                      written, on_gpu)
    return result(checks.CUDA_REFERENCE, subject, Verdict.EMULATED,
                  f"{doc['emulation']}: 0 ULP on {doc['vectors']} vectors, blocks and threads in order and shuffled; "
                  f"GPU run {doc['gpu']['run']}", measured, read, [project_relative(path, root)], obtained)


def gpu_runs(run: Run) -> list[CheckResult]:
    """compare.traces, met.budget and met.stability of the runs on the GPU (pipeline/execute/gpu.py): the
    traces replayed on the net and the MET figures, obtained on the GPU; the figures judged only where the
    GPU is the timing platform (deploy.yaml met.platform = NNCERT_PLATFORM), else reported."""
    subject, root = run.subject, run.root
    gpu = run.doc["gpu"]
    on_gpu = Obtained.target(gpu["obtained"].removeprefix("target:"))
    run_dir = root / gpu["folder"]
    traces = judge_traces(subject, run.split_dir, run_dir, gpu, run.folder / "gpu", root)
    traces = result(checks.TRACES, subject, traces.verdict, traces.reason, traces.measured, traces.read, traces.written,
                    on_gpu if traces.verdict is not Verdict.NOT_RUN else None)
    timing, why = timing_platform(run.spec)
    judged_on = (on_gpu, "") if timing is not None else (None, f"the GPU is not the timing platform ({why})")
    return [traces, *judge_met(run, judged_on, on_gpu, run_dir=run_dir, run_doc=gpu, folder=run.folder / "gpu")]


def mixed(run: Run) -> list[CheckResult]:
    """The C program's other judgements on a mixed deployment whose cuda items ran on the host emulation
    or whose nvdla items on the emulator server: traces replayed on the net (emulated: those items'
    steps did not run on their hardware), MET figures reported but never judged (host figures say
    nothing about a GPU or a DLA; with nvdla items none are measured), no instruction-count verdict."""
    subject, doc = run.subject, run.doc
    dla = doc.get("nvdla_items", [])
    what = " and ".join(([f"cuda items ({', '.join(doc['cuda_items'])}) on the CUDA host emulation"]
                         if doc.get("cuda_items") else [])
                        + ([f"nvdla items ({', '.join(dla)}) on the NVDLA emulator server"] if dla else []))
    emulation = Obtained.emulation(f"C program with its {what}")
    traces = judge_traces(subject, run.split_dir, run.run_dir, doc, run.folder, run.root)
    if traces.verdict is Verdict.PASS:
        traces = result(checks.TRACES, subject, Verdict.EMULATED, f"every trace a valid path of the net, the {what}",
                        traces.measured, traces.read, traces.written, emulation)
    if dla:
        met = [result(c, subject, Verdict.NOT_RUN, doc.get("met", "not measured")) for c in (checks.BUDGET,
                                                                                              checks.STABILITY)]
        path = result(checks.PATH, subject, Verdict.NOT_RUN, doc.get("met", "not measured"))
        return [traces, *met, path]
    if (doc.get("gpu") or {}).get("status") == "ran" and traces.verdict is not Verdict.FAIL:
        gpu_traces, *gpu_met = gpu_runs(run)
        path = result(checks.PATH, subject, Verdict.NOT_RUN, "instruction counts are not taken for a program with cuda "
                      "items (valgrind does not see a GPU)")
        return [gpu_traces, *gpu_met, path]
    met = judge_met(run)
    why = "the cuda items ran on the host emulation: these are host figures, not a GPU timing"
    met = [result(r.check_id, subject, Verdict.NOT_RUN,
                  f"{why}; {r.reason}" if r.reason else why, r.measured, r.read, r.written,
                  emulation if r.measured else None) for r in met]     # figures of the emulation, when measured
    path = result(checks.PATH, subject, Verdict.NOT_RUN, "instruction counts are not taken on the host emulation of "
                  "cuda items (they say nothing about a GPU)")
    return [traces, *met, path]
