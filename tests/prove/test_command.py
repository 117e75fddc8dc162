"""`python -m pipeline prove`: the prove step outside `doit verify`, with CPU limits of the user's choosing;
bad input (a deployment the model does not have, a limit out of range) is a coded error, exit 2."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.projects import ROOT
from pipeline.cli import main
from pipeline.prove import eva


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "models" / "branch3").mkdir(parents=True)
    shutil.copy(ROOT / "models" / "branch3" / "deploy.yaml", tmp_path / "models" / "branch3" / "deploy.yaml")
    folder = tmp_path / "artifacts" / "branch3" / "codegen" / "c" / "single"
    folder.mkdir(parents=True)
    (folder / "build.json").write_text("{}")
    monkeypatch.setattr(eva, "available", lambda: False)
    return tmp_path / "models" / "branch3"


def test_the_command_runs_the_step_on_the_named_deployments(project, capsys):
    assert main(["prove", str(project), "--deployment", "single", "--deployment", "gpu", "--item-limit", "900",
                 "--budget", "1800", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    verdicts = {r["subject"]: r["verdict"] for r in document["results"]}
    assert verdicts == {"branch3/single": "not run", "branch3/gpu": "n/a"}
    record = json.loads((project.parents[1] / "artifacts/branch3/prove/record.json").read_text())
    assert record["parameters"] == {"item_limit_s": 900.0, "budget_s": 1800.0}


def test_strict_fails_on_a_proof_that_did_not_run(project, capsys):
    """The nightly job's exit status: without Frama-C `single` is not run, which --strict counts as failed."""
    assert main(["prove", str(project), "--deployment", "gpu", "--strict"]) == 0
    assert main(["prove", str(project), "--deployment", "single"]) == 0
    assert main(["prove", str(project), "--deployment", "single", "--strict"]) == 1
    assert "not run" in capsys.readouterr().out


def test_a_deployment_the_model_lacks_is_a_coded_error(project, capsys):
    assert main(["prove", str(project), "--deployment", "nosuch"]) == 2
    said = capsys.readouterr().err
    assert "PROVE-E001" in said and "nosuch" in said and "deploy.yaml" in said


@pytest.mark.parametrize("limit", ["0", "-5", "1e9", "many"])
def test_a_limit_out_of_range_is_refused(project, capsys, limit):
    assert main(["prove", str(project), "--item-limit", limit]) == 2
    assert "--item-limit" in capsys.readouterr().err
