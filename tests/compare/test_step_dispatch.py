"""Issue 42: the compare step hands each deployment's run to the part that judges it (pipeline/compare/step.py).

The parts are replaced by recorders (each part has its own light tests in test_step_verdicts.py), the
references by fixed arrays, so that a mutant of the step's dispatch costs a second: a run that did not
run, failed or is missing is `not run` for every check of its kind, an emulated NVDLA, CUDA or mixed run
goes to the parts that never call it pass, a run on another platform to the platform part, and a part
that raises fails every check not yet judged (never a silent pass).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.compare import checks, step
from pipeline.compare.checks import result
from pipeline.compare.context import parameters
from pipeline.compare.numbers import output_tolerances
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import Verdict
from pipeline.nnef.tensorfile import write_arrays
from pipeline.project.deploy import load_deploy

REPO = Path(__file__).resolve().parents[2]
MODEL = "lenet5"
PROB = np.linspace(0, 1, 20, dtype=np.float32).reshape(2, 10)


def _project(tmp_path: Path, docs: dict[str, dict[str, Any]]) -> Path:
    """lenet5's deploy.yaml and requirements, the execute step's run.json of each deployment in `docs`."""
    root = tmp_path / "p"
    (root / "models" / MODEL).mkdir(parents=True)
    shutil.copy(REPO / "models" / MODEL / "deploy.yaml", root / "models" / MODEL / "deploy.yaml")
    shutil.copytree(REPO / "requirements", root / "requirements")
    execute = root / "artifacts" / MODEL / "execute"
    write_arrays({"input": np.zeros((2, 1, 1, 32, 32), np.float32)}, execute / "inputs")
    for name, doc in docs.items():
        (execute / name).mkdir(parents=True)
        if doc.get("status") in ("ran", "emulated") and "outputs" not in doc:
            paths = write_arrays({"prob": PROB}, execute / name)
            doc = {**doc, "outputs": {n: str(p.relative_to(root)) for n, p in paths.items()}}
        (execute / name / "run.json").write_text(json.dumps(doc))
    return root


class Parts:
    """Recorders in place of the parts, the references and the inputs: who was called with what."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, raise_in: str = "") -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.raise_in = raise_in
        for name, ids in (("judge_outputs", (checks.REFERENCE, checks.ONNXRUNTIME)), ("judge_met", (checks.BUDGET,
                          checks.STABILITY)), ("judge_platform", checks.PLATFORM_ALL),
                          ("mixed", (checks.TRACES, checks.BUDGET, checks.STABILITY, checks.PATH)),
                          ("gpu_runs", (checks.TRACES, checks.BUDGET, checks.STABILITY))):
            monkeypatch.setattr(step, name, self._many(name, ids))
        for name, check_id in (("judge_traces", checks.TRACES), ("judge_path", checks.PATH),
                               ("judge_nvdla", checks.NVDLA_REFERENCE), ("judge_cuda", checks.CUDA_REFERENCE)):
            monkeypatch.setattr(step, name, self._one(name, check_id))
        monkeypatch.setattr(step, "read_inputs", self._inputs)
        monkeypatch.setattr(step, "reference_outputs", self._reference)
        monkeypatch.setattr(step, "onnxruntime_outputs", self._ort)

    def _inputs(self, model: str, root: Path) -> dict[str, np.ndarray]:
        assert model == MODEL and (root / "models" / MODEL).is_dir()
        return {"input": np.zeros((2, 1, 1, 32, 32), np.float32)}

    def _reference(self, model: str, root: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        assert model == MODEL and (root / "models" / MODEL).is_dir() and list(inputs) == ["input"]
        return {"prob": PROB}

    def _ort(self, model: str, root: Path, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
        assert model == MODEL and (root / "models" / MODEL).is_dir() and list(inputs) == ["input"]
        return {"prob": PROB + 1}, "onnxruntime"

    def _record(self, name: str, args: tuple[Any, ...]) -> str:
        first = args[0]
        subject = first if isinstance(first, str) else first.subject
        self.calls.append((name, subject, args))
        if name == self.raise_in:
            raise PipelineError("COMPARE-E999", "a part raised")
        return subject

    def _many(self, name: str, ids: tuple[str, ...]):  # type: ignore[no-untyped-def]
        def part(*args: Any, **kw: Any) -> list[Any]:
            subject = self._record(name, args)
            return [result(c, subject, Verdict.PASS, name) for c in ids]
        return part

    def _one(self, name: str, check_id: str):  # type: ignore[no-untyped-def]
        return lambda *args, **kw: result(check_id, self._record(name, args), Verdict.PASS, name)

    def called(self, subject: str) -> list[str]:
        return [name for name, s, _ in self.calls if s == subject]


def _found(results: list[Any]) -> dict[tuple[str, str], Any]:
    found = {(r.subject, r.check_id): r for r in results}
    assert len(found) == len(results), "one result per subject and check"
    return found


EVERY = {
    "single": {"status": "ran"},
    "split2": {"status": "not run", "reason": "no compiler here"},
    "convgpu": {"status": "emulated", "target": "mixed", "cuda_items": ["GPU0"]},
    "gpu": {"status": "emulated", "target": "cuda", "gpu": {"status": "ran"}},
    "dla": {"status": "emulated", "target": "nvdla"},
    "convdla": {"status": "emulated", "target": "mixed", "nvdla_items": ["DLA0"]},
    "aarch64": {"status": "ran", "platform": {"name": "aarch64_qemu"}},
}


def test_each_run_goes_to_the_part_that_judges_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {**EVERY, "layer2": {"status": "failed", "reason": "segfault"}})
    stale = root / "artifacts" / MODEL / "compare"
    (stale / "gone").mkdir(parents=True)
    (stale / "reference").mkdir()
    parts = Parts(monkeypatch)
    found = _found(step.run_compare_step(MODEL, root))
    assert parts.called("lenet5/single") == ["judge_outputs", "judge_traces", "judge_met", "judge_path"]
    assert parts.called("lenet5/gpu") == ["judge_cuda", "gpu_runs"]
    assert parts.called("lenet5/convgpu") == ["judge_cuda", "mixed"]
    assert parts.called("lenet5/dla") == ["judge_nvdla"]
    assert parts.called("lenet5/convdla") == ["judge_nvdla", "mixed"]
    assert parts.called("lenet5/aarch64") == ["judge_platform"]
    assert parts.called("lenet5/split2") == parts.called("lenet5/layer2") == []
    # the runs that did not run or failed: not run, for every check of their kind, with the run's reason
    for check_id in checks.ALL:
        assert found["lenet5/split2", check_id].verdict is Verdict.NOT_RUN
        assert found["lenet5/split2", check_id].reason == "the run did not run: no compiler here"
        assert found["lenet5/split2", check_id].read == ["artifacts/lenet5/execute/split2/run.json"]
        assert found["lenet5/layer2", check_id].reason == "the run failed: segfault"
    assert not any(s == "lenet5/split2" and c in checks.PLATFORM_ALL and c not in checks.ALL for s, c in found)
    # each part got the run of its deployment, the host part the run's outputs, the references, the rules
    args = {(name, subject): a for name, subject, a in parts.calls}
    deployed, outputs, reference, ort, rules, read = args["judge_outputs", "lenet5/single"]
    assert (deployed.name, deployed.doc["status"], deployed.root) == ("single", "ran", root)
    assert deployed.params == parameters(root)
    np.testing.assert_array_equal(outputs["prob"], PROB)
    np.testing.assert_array_equal(reference["prob"], PROB)
    np.testing.assert_array_equal(ort["prob"], PROB + 1)
    assert rules == output_tolerances(MODEL, load_deploy(root / "models/lenet5/deploy.yaml"), root)
    assert read == ["artifacts/lenet5/execute/single/prob.dat", "artifacts/lenet5/compare/reference",
                    "artifacts/lenet5/compare/onnxruntime"]
    assert args["judge_traces", "lenet5/single"][1:] == (deployed.split_dir, deployed.run_dir, deployed.doc,
                                                         deployed.folder, root)
    assert args["judge_met", "lenet5/single"] == (deployed,)
    assert args["judge_path", "lenet5/single"][1:] == (deployed.run_dir, deployed.folder, root)
    for name, subject in (("judge_cuda", "gpu"), ("judge_nvdla", "dla"), ("judge_platform", "aarch64")):
        run, given = args[name, f"lenet5/{subject}"]
        assert run.name == subject and run.doc == json.loads(
            (root / f"artifacts/lenet5/execute/{subject}/run.json").read_text())
        np.testing.assert_array_equal(given["prob"], PROB)
    # the references are written where the parts read them; a folder of no deployment is removed
    for which, values in (("reference", PROB), ("onnxruntime", PROB + 1)):
        from pipeline.nnef.tensorfile import read_tensor
        np.testing.assert_array_equal(read_tensor(stale / which / "prob.dat"), values)
    assert not (stale / "gone").exists()
    assert ("lenet5", checks.NVDLA_REFERENCE) not in found
    record = json.loads((stale / "record.json").read_text())
    assert record["parameters"]["budget_us"] == 5000
    assert record["parameters"]["deploy_max_abs_error"] == 1e-5
    assert record["parameters"]["deploy_max_rel_error"] is None
    assert record["parameters"]["max_jitter_ratio"] == parameters(root)["max_jitter_ratio"]
    read_paths = {i["path"] for i in record["inputs"]}
    assert {"models/lenet5/deploy.yaml", "artifacts/lenet5/execute/inputs/input.dat",
            "artifacts/lenet5/execute/single/run.json"} <= read_paths
    written = json.loads((stale / "checks.json").read_text())
    assert len(written["results"]) == len(found)


def test_a_part_that_raises_fails_every_check_not_yet_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"single": {"status": "ran"}, "split2": {"status": "ran"}})
    Parts(monkeypatch, raise_in="judge_met")
    found = _found(step.run_compare_step(MODEL, root))
    for subject in ("lenet5/single", "lenet5/split2"):
        assert [found[subject, c].verdict for c in checks.ALL] == [Verdict.PASS] * 3 + [Verdict.FAIL] * 3
        assert found[subject, checks.BUDGET].reason == "comparison failed: COMPARE-E999: a part raised"


def test_no_nvdla_run_is_not_run_for_a_model_with_an_nvdla_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"single": {"status": "ran"}})
    Parts(monkeypatch)
    found = _found(step.run_compare_step(MODEL, root))
    nvdla = found["lenet5", checks.NVDLA_REFERENCE]
    assert nvdla.verdict is Verdict.NOT_RUN
    assert nvdla.reason == "no nvdla deployment of this model ran (dla, convdla: see the execute step's run.json)"
    missing = found["lenet5/split2", checks.REFERENCE]
    assert (missing.verdict, missing.reason) == (Verdict.NOT_RUN, "the execute step did not run this deployment")
    assert found["lenet5/aarch64", checks.PLATFORM_REFERENCE].verdict is Verdict.NOT_RUN
    assert ("lenet5/aarch64", checks.REFERENCE) not in found


def test_no_input_vectors_is_a_coded_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"single": {"status": "ran"}})
    Parts(monkeypatch)
    monkeypatch.setattr(step, "read_inputs", lambda model, root: {})
    with pytest.raises(PipelineError) as raised:
        step.run_compare_step(MODEL, root)
    assert raised.value.code == "COMPARE-E001"
    assert "no input vectors under artifacts/<m>/execute/inputs" in str(raised.value)

    def broken(model: str, root: Path, inputs: Any) -> Any:
        raise PipelineError("SEM-E001", "no kernel")

    Parts(monkeypatch)
    monkeypatch.setattr(step, "reference_outputs", broken)
    with pytest.raises(PipelineError) as raised:
        step.run_compare_step(MODEL, root)
    assert raised.value.code == "COMPARE-E002" and "SEM-E001: no kernel" in str(raised.value)


def test_the_met_documents_of_the_last_comparison(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts" / MODEL / "compare"
    for name, median in (("b", 2.0), ("a", 1.0)):
        (folder / name).mkdir(parents=True)
        (folder / name / "met.json").write_text(json.dumps({"median_us": median}))
    (folder / "c").mkdir()
    assert step.current_met_documents(MODEL, tmp_path) == {"a": {"median_us": 1.0}, "b": {"median_us": 2.0}}


def test_output_tolerances_apply_the_rule_to_what_the_export_validation_recorded(tmp_path: Path) -> None:
    spec = load_deploy(REPO / "models/lenet5/deploy.yaml")
    assert output_tolerances(MODEL, spec, tmp_path) == {}
    path = tmp_path / "artifacts" / MODEL / "export" / "validation.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"enclosure": {"bound": {"unavailable": "no bound rule for op X"}}, "outputs": [
        {"nnef": "prob", "tolerance": {"computed_max_abs_error": 2e-6, "measured_rounding_max_abs_error": 1e-7}},
        {"nnef": "other", "tolerance": {"measured_rounding_max_abs_error": 3e-6}},
        {"nnef": "none"}]}))
    from pipeline.numerics.tolerance import effective_tolerance
    rules = output_tolerances(MODEL, spec, tmp_path)
    assert rules == {"prob": effective_tolerance(1e-5, 2e-6, 1e-7, "no bound rule for op X"),
                     "other": effective_tolerance(1e-5, None, 3e-6, "no bound rule for op X"),
                     "none": effective_tolerance(1e-5, None, None, "no bound rule for op X")}
    assert rules["prob"].effective == 2e-6
    path.write_text(json.dumps({"enclosure": {"unavailable": "no enclosure"}, "outputs": [{"nnef": "prob"}]}))
    assert "no enclosure" in output_tolerances(MODEL, spec, tmp_path)["prob"].reason


def test_a_failed_run_without_a_reason_says_so_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"single": {"status": "failed"}})
    Parts(monkeypatch)
    found = _found(step.run_compare_step(MODEL, root))
    assert found["lenet5/single", checks.PATH].reason == "the run failed: "


def test_the_step_record_names_the_command_that_reproduces_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"single": {"status": "ran"}})
    Parts(monkeypatch)
    step.run_compare_step(MODEL, root)
    record = json.loads((root / "artifacts" / MODEL / "compare" / "record.json").read_text())
    assert record["command"] == ["doit", f"compare:{MODEL}"]


def test_a_validation_record_without_an_enclosure_still_gives_each_output_its_rule(tmp_path: Path) -> None:
    """A validation.json that records no enclosure (an export that did not evaluate one) is read, not a crash."""
    spec = load_deploy(REPO / "models/lenet5/deploy.yaml")
    path = tmp_path / "artifacts" / MODEL / "export" / "validation.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"outputs": [{"nnef": "prob", "tolerance": {"computed_max_abs_error": 2e-6}}]}))
    from pipeline.numerics.tolerance import effective_tolerance
    assert output_tolerances(MODEL, spec, tmp_path) == {"prob": effective_tolerance(1e-5, 2e-6, None, "")}
