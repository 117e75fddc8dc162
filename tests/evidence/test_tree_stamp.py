"""The evidence tasks' up-to-date stamp notices every edit of an artifact, however it was made."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.evidence.tasks import TreeStamp


def test_a_same_size_edit_that_restores_the_mtime_changes_the_stamp(tmp_path: Path) -> None:
    tree = tmp_path / "artifacts" / "m" / "split"
    tree.mkdir(parents=True)
    schedule = tree / "schedule.json"
    schedule.write_text('{"result": "relu1"}', encoding="utf-8")
    (tree / "plan.json").write_text("{}", encoding="utf-8")
    stamp = TreeStamp(lambda: [tmp_path / "artifacts"])
    before = stamp.stamp()
    assert stamp.stamp() == before  # nothing changed, nothing re-runs
    stat = schedule.stat()
    schedule.write_text('{"result": "relu9"}', encoding="utf-8")
    os.utime(schedule, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert schedule.stat().st_size == stat.st_size and schedule.stat().st_mtime_ns == stat.st_mtime_ns
    assert stamp.stamp() != before


def test_a_file_replaced_by_one_with_the_same_times_changes_the_stamp(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("one", encoding="utf-8")
    stamp = TreeStamp(lambda: [tmp_path])
    before = stamp.stamp()
    stat = (tmp_path / "a").stat()
    (tmp_path / "b").write_text("two", encoding="utf-8")
    os.utime(tmp_path / "b", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(tmp_path / "b", tmp_path / "a")
    assert stamp.stamp() != before
