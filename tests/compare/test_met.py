"""MET statistics, the paper's table, the histogram picture, the baseline and its acceptance."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from pipeline.compare.met import (accept_baseline, baseline_path, jitter_ratio, load_baseline, markdown_table,
                                  step_rows, stats_us)
from pipeline.compare.svg import histogram_svg


def test_stats():
    s = stats_us([1000 * v for v in range(1, 101)])
    assert s["runs"] == 100 and s["min_us"] == 1.0 and s["max_us"] == 100.0 and s["mean_us"] == 50.5
    assert s["median_us"] == 50.5 and s["p99_us"] == 99.0
    assert abs(s["std_us"] - 28.866) < 1e-3
    assert jitter_ratio(s) == pytest.approx((99.0 - 50.5) / 50.5)


def test_step_rows_and_table():
    timing = {"items": {"CPU0": [{"step": 0, "ns": [2000, 3000]}, {"step": 1, "ns": [500, 700]}]},
              "functions": {"CPU0": [{"step": 0, "nnef_line": 8}, {"step": None}]}}
    schedule = {"items": {"CPU0": [{"kind": "compute", "result": "conv1", "op": "conv"},
                                   {"kind": "send", "var": "s1", "value": "conv1", "to": ["CPU1"]}]}}
    rows = step_rows(timing, schedule)
    assert rows[0]["layer"] == "conv1 (conv)" and rows[0]["mean_us"] == 2.5 and rows[0]["nnef_line"] == 8
    assert rows[1]["layer"] == "send s1 (conv1)"
    table = markdown_table("m", "d", stats_us([3000, 4000]), rows, 100.0)
    assert "| layer | mean (us) | min (us) | max (us) |" in table and "| conv1 (conv) | 2.50 | 2.00 | 3.00 |" in table
    assert "**whole network**" in table and "budget 100 us" in table


def test_histogram_is_svg_and_deterministic():
    samples = [10.0 + (i % 7) * 0.5 for i in range(200)]
    svg = histogram_svg(samples, "t <&>", marks=[("median", 11.0), ("budget", 1000.0)])
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and svg == histogram_svg(samples, "t <&>", marks=[("median", 11.0), ("budget", 1000.0)])
    # the budget far above every run is still drawn (the axis reaches it), with the runs above it counted
    assert "median 11" in svg and "budget 1000" in svg and 'class="mark-budget"' in svg
    assert "0 of 200 runs above the budget" in svg
    tail = histogram_svg(samples + [5000.0], "tail", marks=[("budget", 1000.0)])
    assert "1 of 201 runs above the budget" in tail and "log scale" in tail
    # a run of 1 in a bin is drawn with a visible height next to bins of 100
    heights = [float(h) for h in re.findall(r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)" fill="#4a7ab5"', tail)]
    assert min(heights) > 0.1 * max(heights)


def test_baseline_accept_and_load(tmp_path):
    (tmp_path / "models" / "m").mkdir(parents=True)
    assert load_baseline("m", tmp_path) is None
    doc = {"whole_network": stats_us([5000, 6000, 7000]), "compiler": "gcc 12", "flags": ["-O2"], "host_isa": "avx2"}
    path = accept_baseline("m", {"single": doc}, tmp_path)
    assert path == baseline_path("m", tmp_path)
    baseline = load_baseline("m", tmp_path)
    assert baseline["deployments"]["single"]["median_us"] == 6.0 and "time" not in json.dumps(baseline)
    os.remove(path)
