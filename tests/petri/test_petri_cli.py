"""`python -m pipeline petri`: exit codes, text and JSON output, written nets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, DATA, LENET

from pipeline.cli import main

SPLIT = DATA / "lenet5_split2"


def test_a_clean_description_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["petri", str(LENET)]) == 0
    out = capsys.readouterr().out
    assert "paper encoding: 24 places, 13 transitions, 11 initial tokens" in out
    assert "PASS     valid_paths: 1 valid path(s)" in out and out.rstrip().endswith("ok")


def test_a_split_with_its_original_schedule_trace_and_plan(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["petri", str(SPLIT / "CPU0.nnef"), str(SPLIT / "CPU1.nnef"), "--original", str(LENET),
            "--schedule", str(SPLIT / "schedule.json"), "--trace", str(SPLIT / "trace.json"),
            "--plan", str(SPLIT / "plan.json"), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["analyses"]["equivalence"]["verdict"] == "pass"
    assert report["analyses"]["trace"]["verdict"] == "pass"
    assert report["analyses"]["pipeline"]["measured"]["pipeline_depth"] == 2


def test_the_original_may_be_given_among_the_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["petri", str(BRANCH3_ITEMS), str(BRANCH3), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["analyses"]["equivalence"]["verdict"] == "pass"
    assert report["analyses"]["valid_paths"]["measured"]["valid_paths"] == 6


def test_a_failing_check_exits_1_with_the_counterexample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "items.nnef"
    bad.write_text(BRANCH3_ITEMS.read_text().replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o2);"))
    assert main(["petri", str(bad), "--original", str(BRANCH3)]) == 1
    out = capsys.readouterr().out
    assert "FAIL     equivalence PETRI-E112: argument 1 of concat o6 (ITEM1" in out
    assert "counterexample:" in out and '"difference_count": 1' in out


def test_the_paper_encoding_shows_its_flaw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flaw = tmp_path / "flaw.nnef"
    flaw.write_text("version 1.0;\ngraph g( x ) -> ( y, z )\n{\n    x = external<scalar>(shape = [1, 4]);\n"
                    "    y = relu(x);\n    z = sigmoid(x);\n}\n")
    assert main(["petri", str(flaw)]) == 0
    capsys.readouterr()
    assert main(["petri", str(flaw), "--encoding", "paper"]) == 1
    assert "FAIL     deadlock PETRI-E105: paper encoding: relu y" in capsys.readouterr().out


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["petri", str(tmp_path / "nope.nnef")]) == 2
    broken = tmp_path / "broken.nnef"
    broken.write_text("version 1.0;\ngraph g( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1, 4]);\n    y = relu(q);\n}\n")
    assert main(["petri", str(broken)]) == 2
    assert "PETRI-E001" in capsys.readouterr().err
    schedule = tmp_path / "schedule.json"
    schedule.write_text('{"schema_version": 1, "sync": "sometimes", "items": {}}')
    assert main(["petri", str(LENET), "--schedule", str(schedule)]) == 2
    err = capsys.readouterr().err
    assert "PETRI-E010" in err and "sync" in err


def test_nets_are_written(tmp_path: Path) -> None:
    pnml, dot = tmp_path / "n.pnml", tmp_path / "n.dot"
    assert main(["petri", str(BRANCH3_ITEMS), "--pnml", str(pnml), "--dot", str(dot)]) == 0
    assert pnml.read_text().startswith('<?xml version="1.0" encoding="UTF-8"?>\n<pnml xmlns=')
    assert dot.read_text().startswith('digraph "ITEM1+ITEM2+ITEM3"')


@pytest.mark.parametrize("given", ["--original", "among the files"])
def test_the_command_with_loaders_reports_what_verify_gives_on_the_graphs(given: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The command hands `verify` loaders (the graphs dropped once translated): the report is the one
    `verify` gives the graphs themselves."""
    from pipeline.petri.load import load_graphs
    from pipeline.petri.schedule import load_schedule
    from pipeline.petri.trace import load_trace
    from pipeline.petri.verify import verify

    files = [str(SPLIT / "CPU0.nnef"), str(SPLIT / "CPU1.nnef")]
    extra = ["--original", str(LENET)] if given == "--original" else [str(LENET)]
    argv = ["petri", *files, *extra, "--schedule", str(SPLIT / "schedule.json"), "--trace", str(SPLIT / "trace.json"),
            "--plan", str(SPLIT / "plan.json"), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    listed = files if given == "--original" else files + [str(LENET)]
    items, findings = load_graphs(files)
    schedule = load_schedule(SPLIT / "schedule.json")
    expected = verify(items, label=", ".join(listed), original=load_graphs([LENET])[0], schedule=schedule,
                      traces=[load_trace(SPLIT / "trace.json")], depth=report["analyses"]["pipeline"]["measured"]
                      ["pipeline_depth"], sync=schedule.sync, findings=findings, sources=listed).to_json()
    assert report == {"schema_version": report["schema_version"], **json.loads(json.dumps(expected))}
