"""What `doit` prints while it works (pipeline/project/progress.py, pipeline/project/tasklog.py) and how it refuses a model folder.

End to end on a fake project whose dodo.py uses the same reporter, logging set-up and
refusal announcement as the project's own (dodo.py), with a short notice interval so
that a task of 1.5 s counts as long.
"""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.project import progress, tasking, tasklog
from tests.evidence.evidence_fakeproject import MINIMAL_CHECKS, REPO, FakeProject, isolated_registry

FAKECHECKS = """\
from pipeline.ledger.checks import register_check
{registrations}
"""

DODO = """\
import logging, time
from pathlib import Path
from doit import get_var
from pipeline.ledger import checks
checks.CHECK_MODULES = ("fakechecks", "pipeline.evidence.selfchecks")
import fakechecks  # noqa: F401
from pipeline.project import progress, tasklog
from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import announce_refusals, runnable_models

progress.NOTICE_EVERY = 0.5
tasklog.configure(".", tasklog.console_level(get_var("log", "")))
announce_refusals(".")
DOIT_CONFIG = {{"default_tasks": ["verify"], "backend": "json", "dep_file": ".doit.db", "verbosity": 2,
               "reporter": progress.ProgressReporter, "num_process": 2}}


def _export(model):
    from tests.evidence.evidence_fakeproject import FakeProject
    logging.getLogger("pipeline.fake").info("exporting %s", model)
    time.sleep(1.5)
    if Path("fail-export").exists():
        raise ValueError("planted failure")
    FakeProject(Path("."), requirements=False).add_model(model, steps=("export",))


def task_export():
    for model in runnable_models("."):
        yield {{"name": model, "actions": [(step_action("export", _export), [model])],
               "file_dep": [f"models/{{model}}/deploy.yaml"], "targets": [f"artifacts/{{model}}/export/graph.nnef"]}}


from pipeline.evidence.tasks import evidence_tasks

task_evidence, task_verify = evidence_tasks(after=("export",))
"""


def doit(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), NNCERT_DEBUG="")
    return subprocess.run([sys.executable, "-m", "doit", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    with isolated_registry(MINIMAL_CHECKS):
        fake = FakeProject(tmp_path, minimal=True)
        fake.add_model("alpha", steps=("export", "codegen"))
    registrations = "\n".join(f"register_check({cid!r}, 'fake {cid}', {step!r}, {list(reqs)!r})"
                              for cid, (step, reqs) in MINIMAL_CHECKS.items())
    (tmp_path / "fakechecks.py").write_text(FAKECHECKS.format(registrations=registrations))
    (tmp_path / "dodo.py").write_text(DODO.format())
    return tmp_path


def test_units() -> None:
    from pipeline.execute.outputs import RUN_FILE, STEP

    assert (progress.RUN_STEP, progress.RUN_FILE) == (STEP, RUN_FILE)
    assert progress.verdict_counts(["pass", "fail", "pass", "not run"]) == "fail 1 not run 1 pass 2"
    assert progress.duration(6.24) == "6.2 s" and progress.duration(163) == "2 min 43 s"
    assert tasklog.console_level("info") == logging.INFO and tasklog.console_level("bogus") == logging.WARNING


def test_each_task_ends_with_its_time_and_verdicts_then_the_profile(project: Path) -> None:
    done = doit(project, "verify")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"^ok +export:alpha +\d+\.\d s  pass 1$", out, re.M), out
    assert re.search(r"^ok +evidence:alpha +\d+\.\d s  pass 1$", out, re.M), out
    assert re.search(r"^ok +evidence:reports +\d+\.\d s  14 requirements, 0 error findings$", out, re.M), out
    assert re.search(r"^\.\.\. +still running: export:alpha \d\.\d s$", out, re.M), out
    profile = out.index("Time per step")
    assert re.search(r"^  export +1 tasks +\d+\.\d s +longest export:alpha", out[profile:], re.M)
    assert profile < out.index("Models: alpha") < out.index("VERIFY PASSED")   # the summary comes last
    assert max(len(line) for line in out.splitlines()) <= 240
    # INFO records: not on the console by default, in .doit.log with their task
    assert "exporting alpha" not in done.stdout + done.stderr
    assert "  export:alpha: exporting alpha" in (project / tasklog.LOG_FILE).read_text()

    again = doit(project, "verify")
    assert "Up to date, not run: 3 tasks" in again.stdout and "ok " not in again.stdout
    assert "  export:alpha: exporting alpha" in (project / tasklog.LOG_FILE).read_text()   # a no-op run keeps the log


def test_log_info_shows_the_steps_records_with_their_task(project: Path) -> None:
    done = doit(project, "verify", "log=info")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  export:alpha: exporting alpha" in done.stderr


def test_a_failing_task_is_reported_with_its_coded_message(project: Path) -> None:
    (project / "fail-export").write_text("")
    done = doit(project, "verify")
    assert done.returncode != 0
    assert re.search(r"^FAIL +export:alpha +\d+\.\d s", done.stdout, re.M), done.stdout
    assert "PIPE-E900" in done.stdout and "planted failure" in done.stdout and "Traceback" not in done.stdout


def test_a_model_folder_without_a_spec_is_refused_and_the_others_run(project: Path) -> None:
    assert doit(project, "verify").returncode == 0
    reports = sorted(p.name for p in (project / "reports").iterdir())
    (project / "models/newnet").mkdir()
    (project / "models/newnet/model.onnx").write_bytes(b"an onnx model")
    listed = doit(project, "list")
    refusal = [line for line in listed.stderr.splitlines() if line.startswith("refused:")]
    assert refusal == ["refused: models/newnet: DEPLOY-E001: has model.onnx but no deploy.yaml; write one "
                       "(docs/deploy.md; for an example, see models/lenet5/deploy.yaml)"], listed.stderr
    assert "newnet" not in listed.stdout

    done = doit(project, "verify")
    assert done.returncode != 0
    assert "Models: alpha; refused: newnet" in done.stdout
    assert "DEPLOY-E001: model newnet not run: models/newnet: has model.onnx but no deploy.yaml" in done.stdout
    assert "VERIFY FAILED" in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert sorted(p.name for p in (project / "reports").iterdir()) == reports   # the good model's reports survive
    assert (project / "reports/alpha/evidence.zip").is_file()

    (project / "models/newnet/deploy.yaml").write_text("schema_version: 1\nmodel: newnet\n")
    bad = doit(project, "verify")
    assert bad.returncode != 0 and "refused: models/newnet/deploy.yaml" in bad.stderr and "DEPLOY-E002" in bad.stderr


def test_refusals_one_line_each(tmp_path: Path) -> None:
    models = tmp_path / "models"
    for name in ("good", "nospec", "badspec", "bad name"):
        (models / name).mkdir(parents=True)
        (models / name / "model.onnx").write_bytes(b"")
    (models / "good/deploy.yaml").write_text((REPO / "models/lenet5/deploy.yaml").read_text().replace("lenet5", "good"))
    (models / "badspec/deploy.yaml").write_text("schema_version: 1\nmodel: badspec\nbogus: [\n")
    refused = tasking.refusals_by_model(tmp_path)
    assert sorted(refused) == ["bad name", "badspec", "nospec"]
    assert [refused[m].code for m in ("bad name", "badspec", "nospec")] == ["NAME-E001", "DEPLOY-E001", "DEPLOY-E001"]
    assert tasking.runnable_models(tmp_path) == ["good"]
    stream = io.StringIO()
    lines = tasking.announce_refusals(tmp_path, stream)
    assert len(lines) == 3 and stream.getvalue().count("\n") == 3
    assert all("\n" not in line and line.startswith("refused: ") for line in lines)
    assert "not valid YAML" in refused["badspec"].message and "fix the spec (docs/deploy.md" in refused["badspec"].message
    assert tasking.refusals_by_model(tmp_path).keys() == refused.keys()   # the second time from the cache


def test_a_timing_campaign_says_it_waits_at_the_measuring_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.project import lock

    monkeypatch.setattr(lock, "GATE_NOTICE_AFTER", 0.3)
    worker = ("import sys, time\nfrom pipeline.project.lock import working\n"
              "with working(sys.argv[1]):\n    print('in', flush=True)\n    time.sleep(1.0)\n")
    holder = subprocess.Popen([sys.executable, "-c", worker, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert holder.stdout is not None and holder.stdout.readline().strip() == "in"
    stream = io.StringIO()
    tasklog.configure(tmp_path, logging.WARNING, stream)
    try:
        from pipeline.project.lock import measuring

        with tasklog.in_task("compare:lenet5"), measuring(tmp_path):
            pass
        holder.wait(timeout=30)
        waited = stream.getvalue()
        with tasklog.in_task("compare:lenet5"), measuring(tmp_path):   # nobody at work: no notice
            pass
        assert stream.getvalue() == waited
    finally:
        tasklog.reset()
    text = stream.getvalue()
    assert "  compare:lenet5: waiting at the measuring gate for 0 s: the other tasks at work finish first" in text, text
    assert re.search(r"compare:lenet5: through the measuring gate after \d\.\d s: timing alone", text), text


def test_the_progress_line_counts_checks_as_the_summary_table_does(tmp_path: Path) -> None:
    """Several results of one check (one per deployment) count once, as its worst; n/a only when all are."""
    import pipeline.codegen.checks  # noqa: F401 (registers the codegen checks)
    from pipeline.ledger.checks import CheckResult, Verdict, results_document
    from pipeline.files.atomic import write_json
    from pipeline.project.layout import checks_path

    results = [CheckResult("codegen.static", "m/single", Verdict.PASS),
               CheckResult("codegen.static", "m/aarch64", Verdict.NOT_RUN, "platform aarch64_qemu needs ..."),
               CheckResult("codegen.trace", "m/single", Verdict.PASS),
               CheckResult("codegen.trace", "m/aarch64", Verdict.PASS),
               CheckResult("codegen.accelerators", "m", Verdict.NOT_APPLICABLE, "no nvdla item")]
    write_json(checks_path("m", "codegen", tmp_path), results_document(results))
    assert progress.task_outcome("codegen:m", tmp_path) == "not run 1 pass 1 n/a 1"
