"""Trace replay on the Petri net: captured traces of a real run pass, tampered ones fail."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest


from tests.codegen import cghelpers as H
from tests.projects import copy_exports

from pipeline.compare.traces import replay_traces


@pytest.fixture(scope="module")
def captured(tmp_path_factory, exported_project):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    from pipeline.split.step import run_split_step

    root = copy_exports(exported_project, tmp_path_factory.mktemp("traces") / "p", ["branch3"])
    run_split_step("branch3", root, vectors=1)
    split = root / "artifacts" / "branch3" / "split" / "paper3"
    code = root / "code"
    H.generate(split, root / "artifacts" / "branch3" / "export", code, 4, root)
    binary = H.build(code, 4, trace=True)
    inputs = {"e1": np.random.default_rng(3).random((4, 1, 1, 16, 16)).astype(np.float32)}
    paths = []
    for seed in (None, 5):
        path = root / f"trace-{seed}.json"
        extra = ["--trace", str(path)] + (["--noise-seed", str(seed)] if seed else [])
        H.run(binary, inputs, root / f"run{seed}", ["out"], extra=extra)
        paths.append(path)
    return root, split, paths


def test_captured_traces_are_valid(captured):
    root, split, paths = captured
    verdicts = replay_traces(split, paths, root)
    assert [v.passed for v in verdicts] == [True, True], [v.reason for v in verdicts]
    assert verdicts[0].measured["inferences"] == 4 and verdicts[0].measured["items"] == 3


def test_tampered_traces_fail(captured, tmp_path):
    root, split, paths = captured
    doc = json.loads(paths[0].read_text())
    # ITEM2 reads s1 (sent by ITEM1): shift ITEM2's whole log earlier, so that its get ends
    # before ITEM1's send started (each item's own log stays monotonic)
    item1 = doc["items"]["ITEM1"]
    send_start = next(e for e in item1 if e["step"] == 1 and e["event"] == "start" and e["inference"] == 0)
    shift = max(e["t"] for e in doc["items"]["ITEM2"]) - send_start["t"] + 1
    for e in doc["items"]["ITEM2"]:
        e["t"] -= shift
    early = tmp_path / "early.json"
    early.write_text(json.dumps(doc))
    # steps out of schedule order
    doc = json.loads(paths[0].read_text())
    events = doc["items"]["ITEM3"]
    events[2], events[4] = events[4], events[2]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(doc))
    # overflowed buffer
    doc = json.loads(paths[0].read_text())
    doc["dropped"]["ITEM1"] = 7
    dropped = tmp_path / "dropped.json"
    dropped.write_text(json.dumps(doc))
    verdicts = replay_traces(split, [early, swapped, dropped], root)
    assert not any(v.passed for v in verdicts)
    assert "PETRI-E132" in verdicts[0].reason
    assert "PETRI-E13" in verdicts[1].reason
    assert "overflowed" in verdicts[2].reason
