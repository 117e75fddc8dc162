"""The shipped GitLab recipe, run by a real runner: `gitlab-ci-local` (npm), shell executor.

On a copy of the project cut to two small models (tests/ci/cutproject.py), the recipe runs as
shipped except for what a team with those two models would change (the model matrix) and three
runner settings a team with a shell runner would use instead of the `image:` line:
`--force-shell-executor` (no container runtime: every job in a shell, the `image:` ignored),
`--shell-isolation` (each job in its own checkout, artifacts passed between jobs as GitLab does),
and the recipe's own variables PIPELINE_VENV (the prepared environment: this test's venv) and
EVIDENCE_BASELINE. Then:

1. the whole pipeline: both model jobs and the merge pass, and the merge's trace holds both models;
2. one model dropped from the matrix, only the merge job re-run (gitlab-ci-local reuses the kept
   model job's artifacts) with the first run's trace.json as baseline: the merge fails, naming the
   model whose chain did not run and what got worse;
3. one model's job failing (its ONNX file truncated): its job fails, and the merge fails naming it.

The cut (why these two models and deployments): branch3 and lenet5 are the two smallest shipped
models (177k and 417k MACs); between them the kept deployments have every item kind once (cpu,
cuda, nvdla), a multi-item CPU deployment with barrier sync (branch3 paper3), and a layer-parallel
rewrite (lenet5 layer2), so that every host requirement keeps a passing check and the merge of a
complete run passes; 10 validation vectors and 100 MET runs instead of 100 and 1000 (the numbers
themselves are checked elsewhere; here the wiring of jobs, artifacts and verdicts is). About two
minutes on two cores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process

from tests.ci.cutproject import cut_project, set_gitlab_matrix

KEEP = {"branch3": ["single", "paper3"], "lenet5": ["layer2", "convgpu", "convdla"]}
TOOLS = ("gcc", "g++", "nm", "valgrind", "dot")   # what the recipe's before_script would otherwise apt-get
VENV = Path(sys.prefix)
LOG_BYTES = 256 * 1024 * 1024     # what gitlab-ci-local may print of a whole pipeline's logs


def _skip_reason() -> str | None:
    for tool, why in (("node", "Node.js (Debian package nodejs)"), ("gitlab-ci-local", "gitlab-ci-local (npm package)"),
                      ("rsync", "rsync (Debian; gitlab-ci-local's shell isolation copies with it)"), ("git", "git")):
        if shutil.which(tool) is None:
            return f"{why} is not installed (.ci/run installs it)"
    try:
        version = process.run(["gitlab-ci-local", "--version"], timeout=60)
    except PipelineError as exc:
        return f"gitlab-ci-local does not start: {exc.message}"
    if version.returncode != 0:
        last = (version.err.strip().splitlines() or ["?"])[-1]
        return f"gitlab-ci-local does not start on this Node ({last[:200]}); .ci/run installs 4.65.1"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"the recipe's tools {', '.join(missing)} are missing (its before_script would apt-get them)"
    if not (VENV / "bin" / "doit").is_file():
        return f"{VENV} is not a virtual environment with doit (PIPELINE_VENV for the recipe)"
    return None


SKIP = _skip_reason()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=str(SKIP))]


class Runner:
    """gitlab-ci-local on one project folder, with the settings of the module docstring."""

    def __init__(self, project: Path, home: Path) -> None:
        self.project, self.home = project, home

    def __call__(self, *jobs: str, baseline: str = "none", timeout: int = 900) -> subprocess.CompletedProcess[str]:
        command = ["gitlab-ci-local", "--file", "ci/gitlab-ci.yml", "--home", str(self.home),
                   "--force-shell-executor", "--shell-isolation", "--no-artifacts-to-source", "--no-color",
                   "--variable", f"PIPELINE_VENV={VENV}", "--variable", f"EVIDENCE_BASELINE={baseline}", *jobs]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CI_", "GITLAB_"))}
        # bounded like every program the pipeline runs (pipeline/toolchain/process.py): its own process group
        # (the shell jobs, the doit runs inside them) killed whole at the limit, its log bounded on disk
        done = process.run(command, cwd=self.project, env=env, timeout=timeout, max_output=LOG_BYTES,
                           max_errors=LOG_BYTES)
        return subprocess.CompletedProcess(done.command, done.returncode, done.out, done.err)

    def merge_trace(self) -> dict[str, Any]:
        return json.loads((self.project / ".gitlab-ci-local/artifacts/evidence/reports/trace.json").read_text("utf-8"))


def codes(trace: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in trace["findings"]:
        found.setdefault(finding["code"], []).append(finding["message"])
    return found


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Runner, subprocess.CompletedProcess[str]]:
    """The cut project and the run of its whole pipeline."""
    base = tmp_path_factory.mktemp("gitlab-local")
    runner = Runner(cut_project(base / "project", KEEP, vectors=10, runs=100), base / "home")
    return runner, runner()


def test_complete_pipeline_passes(pipeline: tuple[Runner, subprocess.CompletedProcess[str]]) -> None:
    runner, result = pipeline
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    for job in ("model: [branch3]", "model: [lenet5]", "evidence"):
        assert re.search(rf"PASS +(\[[^\]]*\] +)?{re.escape(job)}", log), f"{job} did not pass"
    assert "VERIFY PASSED" in log
    trace = runner.merge_trace()
    assert trace["models"] == ["branch3", "lenet5"]
    assert not [f for f in trace["findings"] if f["severity"] == "error"]
    assert not {"EVID-E080", "EVID-E081"} & set(codes(trace))
    # the merge rebuilt each package from the jobs' artifacts and got the same bytes
    assert "reports/branch3/evidence.zip: verified; byte-identical to the previous build" in log


def test_model_dropped_from_the_matrix_fails_the_merge(pipeline: tuple[Runner, subprocess.CompletedProcess[str]],
                                                       tmp_path: Path) -> None:
    runner, first = pipeline
    assert first.returncode == 0
    baseline = tmp_path / "last-night-trace.json"
    baseline.write_text(json.dumps(runner.merge_trace()), encoding="utf-8")
    recipe = runner.project / "ci/gitlab-ci.yml"
    shipped = recipe.read_text(encoding="utf-8")
    set_gitlab_matrix(recipe, ["branch3"])
    try:
        result = runner("evidence", baseline=str(baseline))
    finally:
        recipe.write_text(shipped, encoding="utf-8")
    log = result.stdout + result.stderr
    assert result.returncode != 0, log[-6000:]
    assert re.search(r"FAIL +evidence", log) and "VERIFY FAILED" in log
    assert "lenet5: its chain did not run" in log
    found = codes(runner.merge_trace())
    assert len(found["EVID-E080"]) == 1 and found["EVID-E080"][0].startswith("lenet5: ")
    # every requirement both models verified is now verified on one model only
    assert any(re.search(r"HLR-[A-Z]+-\d+: verified -> partially verified \(verified on 1 model\(s\), was 2", m)
               for m in found["EVID-E084"]), found["EVID-E084"]
    assert "Worse than the baseline (the run fails):" in log


def test_failed_model_job_fails_the_merge(pipeline: tuple[Runner, subprocess.CompletedProcess[str]]) -> None:
    runner, first = pipeline
    assert first.returncode == 0
    onnx = runner.project / "models/lenet5/model.onnx"
    original = onnx.read_bytes()
    onnx.write_bytes(original[:1000])
    try:
        job = runner("model: [lenet5]")
        merge = runner("evidence")
    finally:
        onnx.write_bytes(original)
    assert job.returncode != 0 and "EXPORT-E001" in job.stdout + job.stderr
    log = merge.stdout + merge.stderr
    assert merge.returncode != 0 and re.search(r"FAIL +evidence", log)
    assert "lenet5: its chain did not run" in log
    found = codes(runner.merge_trace())
    assert any(m.startswith("lenet5/export: the step failed, EXPORT-E001") for m in found["EVID-E036"])
