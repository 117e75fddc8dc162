"""`python -m pipeline check`: compiler-style text, JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pipeline.cli import main

ROOT = Path(__file__).parents[2]

BAD = """version 1.0;

graph G( x ) -> ( y )
{
    x = external<scalar>(shape = [1, 2]);
    y = rectify(x);
}
"""


def test_text_output_has_location_code_source_and_caret(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.nnef"
    path.write_text(BAD)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}:6:9: error NNEF-E012: unknown operation 'rectify'"
    assert out[1] == "        y = rectify(x);"
    assert out[2] == "            ^~~~~~~"
    assert "1 error(s)" in out[-1]


def test_json_output(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.nnef"
    path.write_text(BAD)
    assert main(["check", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["schema_version"] == 1
    assert report["findings"][0]["code"] == "NNEF-E012"
    assert report["findings"][0]["span"]["line"] == 6
    assert report["counts"]["error"] == 1


def test_clean_multi_item_example_exits_zero(capsys) -> None:
    example = ROOT / "examples" / "nnef" / "branch3_items.nnef"
    assert main(["check", "--no-tensors", str(example)]) == 0
    assert "3 graph(s)" in capsys.readouterr().out


def test_missing_path_is_bad_usage(tmp_path: Path, capsys) -> None:
    assert main(["check", str(tmp_path / "nope.nnef")]) == 2
    assert "no NNEF description" in capsys.readouterr().err


def test_profile_standard_downgrades_explicitness(tmp_path: Path) -> None:
    path = tmp_path / "g.nnef"
    path.write_text(BAD.replace("rectify(x)", "softmax(x)"))
    assert main(["check", str(path)]) == 1
    assert main(["check", "--profile", "standard", str(path)]) == 0


def test_module_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "bad.nnef"
    path.write_text(BAD)
    done = subprocess.run([sys.executable, "-m", "pipeline", "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1 and "NNEF-E012" in done.stdout
