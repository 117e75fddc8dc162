"""The checks of the compare step (one result per check and deployment, `<model>/<deployment>`).

compare.reference    HLR-NUM-001, LLR-NUM-001  C outputs bit-identical to the reference semantics
compare.onnxruntime  HLR-NUM-002, LLR-NUM-002  C outputs within pipeline.numerics.tolerance's effective tolerance of onnxruntime's
compare.traces       HLR-EXE-004, LLR-RUN-001  every captured trace (with and without noise) a valid
                                               path of the net; outputs identical across runs
met.budget           HLR-MET-001, LLR-MET-001  max measured time per inference <= budget
met.stability        HLR-MET-002, LLR-MET-001  jitter bound; no drift against the accepted baseline
met.path             HLR-MET-002, LLR-MET-002  identical instruction counts for every input
compare.cuda_reference HLR-NUM-003, LLR-NUM-001, LLR-COD-007  CUDA outputs (host emulation, in order
                                               and shuffled; the GPU where one answers) bit-identical to the reference
compare.nvdla_reference HLR-NUM-004           NVDLA outputs (emulator, mode ideal) within fp16_max_abs_error of the
                                               reference; verdict emulated (never pass here)
compare.platform_reference HLR-NUM-005        a deployment on another platform than the host (qemu-aarch64, a
                                               board): outputs bit-identical to the reference (NaN = NaN)
compare.platform_traces HLR-EXE-005           its traces valid paths of the net, outputs identical across its runs
met.platform_path    HLR-MET-002              its instruction counts (valgrind, where the platform is the host's
                                               architecture; not run elsewhere)
"""

from __future__ import annotations

from typing import Any, Sequence

from pipeline.ledger.checks import CheckResult, Obtained, Verdict, register_check

STEP = "compare"
REFERENCE = "compare.reference"
ONNXRUNTIME = "compare.onnxruntime"
TRACES = "compare.traces"
BUDGET = "met.budget"
STABILITY = "met.stability"
PATH = "met.path"
CUDA_REFERENCE = "compare.cuda_reference"
NVDLA_REFERENCE = "compare.nvdla_reference"
PLATFORM_REFERENCE = "compare.platform_reference"
PLATFORM_TRACES = "compare.platform_traces"
PLATFORM_PATH = "met.platform_path"
PLATFORM_ALL = (PLATFORM_REFERENCE, PLATFORM_TRACES, BUDGET, STABILITY, PLATFORM_PATH)
ALL = (REFERENCE, ONNXRUNTIME, TRACES, BUDGET, STABILITY, PATH)

register_check(REFERENCE, "Executed C code reproduces the reference semantics bit for bit on every validation vector",
               STEP, ["HLR-NUM-001", "LLR-NUM-001", "LLR-COD-005"],
               "Outputs of the uninstrumented build on the N seeded vectors against pipeline.semantics.interpret "
               "on the exported description: 0 ULP, same sign of zero, NaN where NaN; the first diverging element "
               "(vector, index, both values, ULP) on failure.")
register_check(CUDA_REFERENCE, "Generated CUDA code reproduces the reference semantics bit for bit on every "
               "validation vector, whatever the order of blocks and threads", STEP,
               ["HLR-NUM-003", "LLR-NUM-001", "LLR-COD-007"],
               "The host emulation of the generated .cu (g++ -ffp-contract=off, every (block, thread) of every "
               "launch run in order, then in a seeded shuffled order) on the N seeded vectors against "
               "pipeline.semantics.interpret: 0 ULP, same sign of zero, NaN where NaN, in both orders. Verdict "
               "emulated (never pass) with the emulation named and the GPU device query's answer; pass or fail "
               "only from a run on a GPU.")
register_check(NVDLA_REFERENCE, "NVDLA loadables agree with the network within the error bound of their "
               "precision on every validation vector", STEP, ["HLR-NUM-004"],
               "The NVDLA emulator (pipeline/execute/nvdla/emulator.py, mode ideal) runs each loadable the codegen "
               "step wrote, decoded from its bytes, on the N seeded vectors; every output element against the "
               "network's exact value (pipeline.numerics.enclosure) within the FP16 error bound computed from model.onnx "
               "(pipeline.numerics.sensitivity with the NVDLA arithmetic: FP16 storage, float32 accumulation, the SDP's "
               "lookup tables; a mixed deployment's CPU operations in float32; pipeline/compare/nvdla_bound.py); "
               "where that bound is unavailable (BOUND-E001..E005) or does not discriminate, within HLR-NUM-004's "
               "fp16_max_abs_error (the requirement's parameter, read, not copied). Verdict emulated (never pass) naming "
               "the precision, the "
               "mode, the basis applied and why, the max error, max bound and tightest error/bound; fail naming the "
               "first element beyond.")
register_check(PLATFORM_REFERENCE, "C code run on its deployment platform reproduces the reference semantics bit "
               "for bit", STEP, ["HLR-NUM-005"],
               "A deployment on a platform other than the host (pipeline/toolchain/platforms.py: the built-in "
               "aarch64_qemu, a board over SSH): the outputs of its uninstrumented build, run by the platform's runner "
               "on the first V of the N seeded vectors (V: the platform's `vectors`, 20 under emulation), against "
               "pipeline.semantics.interpret: 0 ULP, same sign of zero, any NaN equal to any NaN (NaN bit patterns "
               "differ across platforms: x86-64 0xffc00000, AArch64 0x7fc00000). Verdict emulated under an emulator "
               "(obtained: the emulator and its version), pass or fail on a board (target:<platform>).")
register_check(PLATFORM_TRACES, "Every trace captured on the deployment platform, with and without temporal noise, is "
               "a valid path of the net", STEP, ["HLR-EXE-005"],
               "The instrumented runs on the platform (one plain, seeded noise runs) replayed on the coloured Petri net "
               "of the items under schedule.json; every run's outputs identical to the platform's uninstrumented run. "
               "Verdict emulated under an emulator, pass or fail on a board.")
register_check(PLATFORM_PATH, "The execution path on the deployment platform is data-independent: identical instruction "
               "counts for every input", STEP, ["HLR-MET-002"],
               "callgrind on the platform's own executable (static, its compiler and flags), run on this host, where the "
               "platform's architecture is the host's: counts of one inference for several vectors, zeros and special "
               "values all equal. Not run for another architecture (valgrind runs programs of the host's instruction "
               "set only).")
register_check(ONNXRUNTIME, "Executed C code agrees with onnxruntime within the deployment tolerance",
               STEP, ["HLR-NUM-002", "LLR-NUM-002"],
               "Outputs against the ONNX model run by onnxruntime (one thread) on the same vectors: per output, max "
               "abs error within the effective tolerance of pipeline.numerics.tolerance (the computed bound when tighter than "
               "the deploy.yaml limit, else the limit; the rule the export validation applies, on its "
               "validation.json), max rel error if given; top-1 agreement reported.")
register_check(TRACES, "Every captured execution trace, with and without temporal noise, is a valid path of the net",
               STEP, ["HLR-EXE-004", "LLR-RUN-001"],
               "Instrumented runs (one plain, seeded noise runs) replayed on the coloured Petri net of the items "
               "under schedule.json (pipeline.petri.trace.replay, shared clock); every run's outputs byte-identical "
               "to the uninstrumented run's.")
register_check(BUDGET, "The maximum measured execution time of one inference is within the budget",
               STEP, ["HLR-MET-001", "LLR-MET-001"],
               "met.runs timed inferences of the uninstrumented build (after warm-up): max <= deploy.yaml "
               "met.budget_us.")
register_check(STABILITY, "Measured execution time is stable: bounded jitter and no drift against the accepted baseline",
               STEP, ["HLR-MET-002"],
               "(p99 - median) / median <= max_jitter_ratio; median <= accepted median * (1 + max_drift_ratio) "
               "(models/<m>/met-baseline.json; not run without one).")
register_check(PATH, "The execution path is data-independent: identical instruction counts for every input",
               STEP, ["HLR-MET-002", "LLR-MET-002"],
               "callgrind instruction count of one inference (item run functions, waits excluded) for several "
               "validation vectors, an all-zero and a special-value input (NaN, inf, subnormals): all equal.")


def result(check_id: str, subject: str, verdict: Verdict, reason: str = "", measured: dict[str, Any] | None = None,
           read: Sequence[str] = (), written: Sequence[str] = (), obtained: Obtained | None = None) -> CheckResult:
    return CheckResult(check_id, subject, verdict, reason, dict(measured or {}), list(read), list(written), obtained)


def not_run_all(subject: str, reason: str, read: Sequence[str] = ()) -> list[CheckResult]:
    return [result(check, subject, Verdict.NOT_RUN, reason, read=read) for check in ALL]
