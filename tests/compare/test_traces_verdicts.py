"""Issue 42: compare.traces' verdict (pipeline/compare/traces.py) on planted traces, the Petri replay replaced.

The replay itself is judged on real captured traces in test_traces.py (a build and a run: too slow to
run once per mutant); here the Petri functions are recorders, so what traces.py decides around them is
judged in a second: an unreadable trace, an overflowed trace buffer, a replay that fails, runs whose
outputs differ from the uninstrumented one, and no run under temporal noise are never a pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.compare import checks, traces
from pipeline.compare.traces import TraceVerdict, judge_traces, replay_traces
from pipeline.ledger.checks import Verdict
from pipeline.petri import load, schedule, trace, translate
from pipeline.petri.outcome import failed, passed


class Petri:
    """Recorders in place of the Petri package: the replay fails a trace whose document says `bad`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, split: Path) -> None:
        self.split = split
        self.seen: dict[str, Any] = {}
        monkeypatch.setattr(load, "load_graphs", self.load_graphs)
        monkeypatch.setattr(translate, "translate", self.translate)
        monkeypatch.setattr(schedule, "load_schedule", self.load_schedule)
        monkeypatch.setattr(trace, "parse_trace", self.parse_trace)
        monkeypatch.setattr(trace, "replay", self.replay)

    def load_graphs(self, files: list[Path], root: Path) -> tuple[list[str], list[Any]]:
        self.seen["files"], self.seen["root"] = files, root
        return ["graphs"], []

    def translate(self, graphs: list[str], encoding: str, name: str) -> str:
        self.seen["translate"] = (graphs, encoding, name)
        return "net"

    def load_schedule(self, path: Path) -> str:
        self.seen["schedule"] = path
        return "schedule"

    def parse_trace(self, document: dict[str, Any], file: str) -> dict[str, Any]:
        if "items" not in document:
            raise ValueError("no items")
        return {**document, "file": file}

    def replay(self, net: str, schedule: str, parsed: dict[str, Any]) -> Any:
        assert (net, schedule) == ("net", "schedule") and parsed["file"].endswith(".json")
        if parsed.get("bad"):
            return failed("trace", "PETRI-E131", "ITEM2 read s1 before ITEM1 sent it", events=7, inferences=2)
        return passed("trace", events=parsed["events"], inferences=parsed["inferences"])


def _split(tmp_path: Path) -> Path:
    split = tmp_path / "split"
    split.mkdir(parents=True)
    (split / "plan.json").write_text(json.dumps({"model": "m", "deployment": "d", "items": [
        {"file": "ITEM1.nnef"}, {"file": "ITEM2.nnef"}]}))
    (split / "schedule.json").write_text("{}")
    return split


def _trace(folder: Path, name: str, **document: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"trace-{name}.json"
    path.write_text(json.dumps({"items": {}, "events": 5, "inferences": 2, **document}))
    return path


def test_replay_verdicts_of_good_unreadable_overflowed_and_invalid_traces(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    split = _split(tmp_path)
    petri = Petri(monkeypatch, split)
    run = tmp_path / "run"
    good = _trace(run, "a")
    unreadable = run / "trace-b.json"
    unreadable.write_text("{not json")
    no_items = run / "trace-c.json"
    no_items.write_text(json.dumps({"events": 1}))
    overflow = _trace(run, "d", dropped={"ITEM1": 3, "ITEM2": 0})
    quiet = _trace(run, "e", dropped={"ITEM1": 0})
    invalid = _trace(run, "f", bad=True)
    verdicts = replay_traces(split, [good, unreadable, no_items, overflow, quiet, invalid], tmp_path)
    assert petri.seen["files"] == [split / "ITEM1.nnef", split / "ITEM2.nnef"] and petri.seen["root"] == tmp_path
    assert petri.seen["translate"] == (["graphs"], "ours", "m.d")
    assert petri.seen["schedule"] == split / "schedule.json"
    assert [(v.trace, v.passed) for v in verdicts] == [("trace-a.json", True), ("trace-b.json", False),
                                                      ("trace-c.json", False), ("trace-d.json", False),
                                                      ("trace-e.json", True), ("trace-f.json", False)]
    assert verdicts[0].reason == "" and verdicts[0].measured == {"events": 5, "inferences": 2}
    assert verdicts[1].reason.startswith("unreadable trace: ") and verdicts[1].measured == {}
    assert verdicts[2].reason == "unreadable trace: no items"
    assert verdicts[3].reason == "trace buffer overflowed: {'ITEM1': 3} events dropped" and verdicts[3].measured == {}
    assert verdicts[5].reason == "PETRI-E131: ITEM2 read s1 before ITEM1 sent it"
    assert verdicts[5].measured == {"events": 7, "inferences": 2}
    assert verdicts[5].to_json() == {"trace": "trace-f.json", "verdict": "fail",
                                     "reason": "PETRI-E131: ITEM2 read s1 before ITEM1 sent it",
                                     "measured": {"events": 7, "inferences": 2}}
    assert verdicts[0].to_json()["verdict"] == "pass"


def _judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found: list[TraceVerdict],
           runs: list[dict[str, Any]]) -> Any:
    split = _split(tmp_path)
    run = tmp_path / "artifacts/run"
    for v in found:
        _trace(run, v.trace)
    seen: list[Any] = []
    monkeypatch.setattr(traces, "replay_traces", lambda s, t, r: seen.append((s, t, r)) or found)
    outcome = judge_traces("m/d", split, run, {"traced_runs": runs}, tmp_path / "out", tmp_path)
    if found:
        assert seen == [(split, sorted(run.glob("trace-*.json")), tmp_path)]
    return outcome


GOOD = [TraceVerdict("a", True, "", {"events": 5, "inferences": 2}),
        TraceVerdict("b", True, "", {"events": 7, "inferences": 3})]
NOISY = [{"name": "plain", "outputs_identical_to_plain": True},
         {"name": "noise5", "outputs_identical_to_plain": True, "noise_seed": 5}]


def test_traces_pass_only_valid_identical_and_under_noise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    passed_ = _judge(tmp_path, monkeypatch, GOOD, NOISY)
    assert (passed_.check_id, passed_.subject, passed_.verdict, passed_.reason) == (checks.TRACES, "m/d", Verdict.PASS, "")
    assert passed_.measured == {"traces": 2, "noise_runs": 1, "valid": 2, "events": 12, "inferences_per_trace": 3,
                                "outputs_identical_across_runs": True}
    assert passed_.read == ["artifacts/run/trace-a.json", "artifacts/run/trace-b.json", "split/schedule.json"]
    assert passed_.written == ["out/traces.json"]
    written = json.loads((tmp_path / "out/traces.json").read_text())
    assert written == {"schema_version": 1, "traces": [v.to_json() for v in GOOD], "runs_with_different_outputs": []}


def test_one_invalid_trace_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [GOOD[0], TraceVerdict("b", False, "PETRI-E131: early", {"events": 1}),
           TraceVerdict("c", False, "second", {})]
    outcome = _judge(tmp_path, monkeypatch, bad, NOISY)
    assert (outcome.verdict, outcome.reason) == (Verdict.FAIL, "b: PETRI-E131: early")
    assert outcome.measured["valid"] == 1 and outcome.measured["traces"] == 3 and outcome.measured["events"] == 6
    assert outcome.written == ["out/traces.json"]


def test_outputs_that_differ_from_the_uninstrumented_run_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [*NOISY, {"name": "noise7", "noise_seed": 7}, {"name": "noise9", "outputs_identical_to_plain": False}]
    outcome = _judge(tmp_path, monkeypatch, GOOD, runs)
    assert outcome.verdict is Verdict.FAIL
    assert outcome.reason == "outputs of noise7, noise9 differ from the uninstrumented run"
    assert outcome.measured["outputs_identical_across_runs"] is False and outcome.measured["noise_runs"] == 2
    assert json.loads((tmp_path / "out/traces.json").read_text())["runs_with_different_outputs"] == ["noise7", "noise9"]


def test_no_run_under_noise_or_no_trace_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = _judge(tmp_path, monkeypatch, GOOD, NOISY[:1])
    assert (outcome.verdict, outcome.reason) == (Verdict.NOT_RUN, "no run under temporal noise was captured")
    assert outcome.measured["noise_runs"] == 0 and outcome.written == ["out/traces.json"]
    none = _judge(tmp_path / "none", monkeypatch, [], NOISY)
    assert (none.verdict, none.reason, none.measured) == (Verdict.NOT_RUN, "the execute step captured no trace", {})
    assert none.read == ["split/schedule.json"] and none.written == []
