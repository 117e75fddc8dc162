"""Hostile and broken input: every text and tensor file ends in coded findings, bounded, never a traceback.

tests/nnef/data/hostile/ holds the inputs that once crashed or fooled the checker (deep
nesting, a 5,000-digit integer, floats in integer lists, 1e29 extents, duplicate graph
parameters or results, a result that is a parameter, send_var in a plain graph); the fuzz
tests below are seeded and bounded in time so that CI runs them on every change.
"""

from __future__ import annotations

import os
import random
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.nnef.checker import check_text
from pipeline.nnef.findings import CODES
from pipeline.nnef.tensorfile import HEADER_SIZE, TensorFileError, encode_tensor, read_tensor
from tests.nnef.nnef_corpus import valid_cases

HOSTILE = Path(__file__).parent / "data" / "hostile"
EXPECTED = {
    "bigint.nnef": "NNEF-E022", "deep_array.nnef": "NNEF-E022", "deep_paren.nnef": "NNEF-E022",
    "deep_fragment.nnef": "NNEF-E022", "long_chain.nnef": "NNEF-E022", "unary_chain.nnef": "NNEF-E022",
    "huge_extent.nnef": "NNEF-E022", "float_in_int.nnef": "NNEF-E015", "dup_param.nnef": "NNEF-E043",
    "dup_result.nnef": "NNEF-E043", "result_is_param.nnef": "NNEF-E043", "sendvar_plain.nnef": "NNEF-E081",
    "recursive_fragment.nnef": "NNEF-E009", "long_version.nnef": "NNEF-E002",
}
FUZZ_SECONDS = float(os.environ.get("NNCERT_FUZZ_SECONDS", "20"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_file_is_refused_with_its_code(name: str) -> None:
    started = time.perf_counter()
    report = check_text((HOSTILE / name).read_text(encoding="utf-8"), name)
    assert time.perf_counter() - started < 30
    codes = {f.code for f in report.findings if f.is_error}
    assert EXPECTED[name] in codes, sorted(codes)
    assert all(f.code in CODES and f.span is not None for f in report.findings)


def test_extents_are_bounded_on_inferred_shapes() -> None:
    text = ("version 1.0;\ngraph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [65536, 65536]);\n"
            "    y = tile(x, repeats = [2, 2]);\n}\n")
    report = check_text(text, "t.nnef")
    assert any(f.code == "NNEF-E022" and "elements exceed" in f.message for f in report.findings)
    wide = text.replace("repeats = [2, 2]", "repeats = [65536, 1]")
    assert any(f.code == "NNEF-E022" and "an extent exceeds" in f.message for f in check_text(wide, "t.nnef").findings)


def _mutations(rng: random.Random, text: str) -> str:
    pieces = ["(" * rng.randint(1, 400), "[" * rng.randint(1, 400), "9" * rng.randint(15, 6000), "1.0e400",
              " + x" * rng.randint(1, 3000), "-" * rng.randint(1, 3000), "x, x", "y, y", "send_var([A], x)", ",", ";"]
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(pieces) + text[at + rng.randint(0, 5):]
    return text


def test_seeded_fuzz_of_the_checker_with_hostile_pieces() -> None:
    rng = random.Random(1234)
    cases = valid_cases()
    deadline = time.perf_counter() + FUZZ_SECONDS
    done = 0
    while time.perf_counter() < deadline and done < 2000:
        text = _mutations(rng, rng.choice(cases).text)
        report = check_text(text, "fuzz.nnef")  # an exception fails the test
        assert all(f.code in CODES for f in report.findings)
        done += 1
    assert done >= 20


def test_seeded_fuzz_of_the_tensor_reader(tmp_path: Path) -> None:
    rng = random.Random(99)
    good = encode_tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    deadline = time.perf_counter() + FUZZ_SECONDS / 2
    path = tmp_path / "t.dat"
    done = 0
    while time.perf_counter() < deadline and done < 3000:
        blob = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            if kind < 0.5:
                at = rng.randrange(len(blob)) if blob else 0
                if blob:
                    blob[at] = rng.randrange(256)
            elif kind < 0.7 and len(blob) >= HEADER_SIZE:
                struct.pack_into("<I", blob, 12 + 4 * rng.randrange(8), rng.choice([0, 1, 2**31, 2**32 - 1]))
            elif blob:
                del blob[rng.randrange(len(blob)):]
        path.write_bytes(bytes(blob))
        try:
            read_tensor(path)
        except TensorFileError as error:
            assert error.code == "NNEF-E032" and error.location.file == str(path)
        done += 1
    assert done >= 100


def test_description_files_must_be_regular(tmp_path: Path) -> None:
    from pipeline.nnef.parser import parse_file

    fifo = tmp_path / "graph.nnef"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        result = parse_file(path)  # would block or never end if it were read
        assert [f.code for f in result.findings] == ["NNEF-E003"] and "not a regular file" in result.findings[0].message


def test_special_files_are_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.dat"
    os.mkfifo(fifo)
    link = tmp_path / "zero.dat"
    link.symlink_to("/dev/zero")
    for path in (fifo, link, tmp_path):
        with pytest.raises(TensorFileError, match="not a regular file|symbolic link"):
            read_tensor(path)


@pytest.mark.parametrize("label", ["../outside", "../../etc/passwd", "a/../../b", "/abs/../x", "a//b", "", "a b", "./x"])
def test_a_label_leaving_the_tensor_folder_is_refused_before_any_read(tmp_path: Path, label: str) -> None:
    from pipeline.nnef.checker import check_paths
    from pipeline.nnef.tensorfile import LABEL_CODE, label_path, write_tensor

    folder = tmp_path / "export"
    folder.mkdir()
    write_tensor(tmp_path / "outside.dat", np.zeros((1, 2), np.float32))  # what '../outside' would reach
    (folder / "graph.nnef").write_text(
        "version 1.0;\n\ngraph g( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1, 2]);\n"
        f"    w = variable<scalar>(shape = [1, 2], label = '{label}');\n    y = add(x, w);\n}}\n", encoding="utf-8")
    report = check_paths([folder / "graph.nnef"], tensors=True)
    codes = [f.code for f in report.findings if f.is_error]
    assert codes == [LABEL_CODE], [str(f) for f in report.findings]
    with pytest.raises(ValueError):
        label_path(folder, label)


def test_ordinary_labels_name_files_inside_the_folder(tmp_path: Path) -> None:
    from pipeline.nnef.tensorfile import label_path

    assert label_path(tmp_path, "conv1/filter") == tmp_path / "conv1" / "filter.dat"
    assert label_path(tmp_path, "/w.1-a") == tmp_path / "w.1-a.dat"


# -- round three (issue 28): the tensor folder is left by no link, nothing of a refused file is shown

GRAPH = ("version 1.0;\n\ngraph g( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1, 2]);\n"
         "    w = variable<scalar>(shape = [1, 2], label = '%s');\n    y = add(x, w);\n}\n")


def _export(tmp_path: Path, label: str = "w") -> Path:
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "graph.nnef").write_text(GRAPH % label, encoding="utf-8")
    return folder


def _errors(folder: Path, tensors: bool = True) -> list:
    from pipeline.nnef.checker import check_paths

    return [f for f in check_paths([folder / "graph.nnef"], tensors=tensors).findings if f.is_error]


def test_a_tensor_file_linked_to_a_valid_tensor_elsewhere_is_refused_by_every_reader(tmp_path: Path) -> None:
    from pipeline.diagnostics import PipelineError
    from pipeline.nnef.checker import check_paths
    from pipeline.nnef.tensorfile import write_tensor
    from pipeline.semantics import load_variables

    folder = _export(tmp_path)
    write_tensor(tmp_path / "foreign.dat", np.full((1, 2), 7.0, np.float32))   # valid, matching, outside
    (folder / "w.dat").symlink_to(tmp_path / "foreign.dat")
    errors = _errors(folder)
    assert [f.code for f in errors] == ["NNEF-E032"] and "symbolic link" in errors[0].message
    graph = check_paths([folder / "graph.nnef"], tensors=False).graphs[0]
    with pytest.raises(PipelineError) as caught:   # the interpreter (and through it split and validation)
        load_variables(graph, folder)
    assert caught.value.code == "NNEF-E032" and "symbolic link" in caught.value.message


def test_a_linked_sub_folder_is_not_followed(tmp_path: Path) -> None:
    from pipeline.nnef.tensorfile import write_tensor

    folder = _export(tmp_path, "sub/w")
    (tmp_path / "elsewhere").mkdir()
    write_tensor(tmp_path / "elsewhere" / "w.dat", np.ones((1, 2), np.float32))
    (folder / "sub").symlink_to(tmp_path / "elsewhere")
    errors = _errors(folder)
    assert [f.code for f in errors] == ["NNEF-E032"] and "'sub' is a symbolic link" in errors[0].message
    (folder / "sub").unlink()
    (folder / "sub").mkdir()
    write_tensor(folder / "sub" / "w.dat", np.ones((1, 2), np.float32))
    assert _errors(folder) == []   # the same layout, inside the folder, is read


def test_a_refused_file_is_named_never_echoed(tmp_path: Path) -> None:
    folder = _export(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"SECRET:x:0:0:hunter2\n" * 8)
    shown = ("SECRET", "53 45", "hunter2")   # its text, or its first bytes in hex (once: 'bad magic 53 45')
    (folder / "w.dat").symlink_to(secret)
    (first,) = _errors(folder)
    assert "w.dat" in first.message and not any(s in first.message for s in shown), first.message
    (folder / "w.dat").unlink()
    (folder / "w.dat").write_bytes(secret.read_bytes())   # a regular file that is no tensor file
    (first,) = _errors(folder)
    assert "not an NNEF tensor file" in first.message and not any(s in first.message for s in shown)


def test_no_tensors_still_judges_labels(tmp_path: Path) -> None:
    folder = _export(tmp_path, "../../etc/passwd")
    assert [f.code for f in _errors(folder, tensors=False)] == ["NNEF-E033"]


@pytest.mark.parametrize("version", [(0, 9), (1, 1), (2, 0)])
def test_only_tensor_file_version_1_0_is_read(tmp_path: Path, version: tuple[int, int]) -> None:
    blob = bytearray(encode_tensor(np.ones((1, 2), np.float32)))
    blob[2:4] = bytes(version)
    path = tmp_path / "w.dat"
    path.write_bytes(bytes(blob))
    with pytest.raises(TensorFileError, match=f"version {version[0]}.{version[1]}"):
        read_tensor(path)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_reports_non_finite_tensor_data(tmp_path: Path, bad: float, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: `check` accepted a tensor file full of NaN (the command and the check step now ask for finite data)."""
    from pipeline import cli
    from pipeline.nnef.checker import check_paths
    from pipeline.nnef.checks import TENSORS, verdicts
    from pipeline.nnef.tensorfile import write_tensor

    folder = _export(tmp_path)
    write_tensor(folder / "w.dat", np.array([[1.0, bad]], np.float32))
    assert cli.main(["check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "NNEF-E034" in out and "at index [0, 1]" in out and "w.dat" in out
    findings = check_paths([folder / "graph.nnef"], finite=True).findings
    (result,) = verdicts(findings, "m", [TENSORS], [], [])
    assert result.verdict.value == "fail" and "NNEF-E034" in result.reason
    assert _errors(folder) == []   # the generators' own reading does not judge the numbers (IEEE tests)


def test_a_deep_fragment_chain_is_refused_as_a_limit_not_as_recursion() -> None:
    """Issue 28: a non-recursive chain of 20,000 fragments was refused as "unbounded recursion?"."""
    lines = ["version 1.0;", "extension KHR_enable_fragment_definitions;"]
    depth = 2000
    for index in range(depth):
        body = f"f{index + 1}(x)" if index + 1 < depth else "relu(x)"
        lines.append(f"fragment f{index}( x: tensor<scalar> ) -> ( y: tensor<scalar> ) {{ y = {body}; }}")
    lines.append("graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [1, 4]);\n    y = f0(x);\n}\n")
    findings = [f for f in check_text("\n".join(lines), "chain.nnef").findings if f.is_error]
    assert [f.code for f in findings] == ["NNEF-E009"]
    assert "limit" in findings[0].message and "not recursive" in findings[0].message
    assert "recursion?" not in findings[0].message
    recursive = check_text((HOSTILE / "recursive_fragment.nnef").read_text(encoding="utf-8"), "r.nnef").findings
    assert any(f.code == "NNEF-E009" and "calls itself" in f.message for f in recursive)


@pytest.mark.parametrize("literal", ["3.0", "0.0", "-1.5"])
def test_a_literal_sent_to_a_sync_variable_of_another_shape_is_an_error(literal: str) -> None:
    """Issue 28: send_var([ITEM2, ITEM3], 3.0) to a [1, 4, 16, 16] sync variable passed with a warning only."""
    writer = ("graphitem ITEM1 a( x ) -> ( s )\n{\n    x = external<scalar>(shape = [1, 4, 16, 16]);\n"
              "    s = variablesync<scalar>(shape = [1, 4, 16, 16]);\n"
              f"    s = send_var([ITEM2, ITEM3], {literal});\n}}\n")
    readers = "".join(f"graphitem {item} r{item[-1]}( s ) -> ( y )\n{{\n    s = variablesync<scalar>(shape = [1, 4, 16, 16]);\n"
                      f"    u = get_var(ITEM1, s);\n    y = relu(u);\n}}\n" for item in ("ITEM2", "ITEM3"))
    errors = [f for f in check_text("version 1.0;\n\n" + writer + readers, "m.nnef").findings if f.is_error]
    assert [f.code for f in errors] == ["NNEF-E072"] and "literal" in errors[0].message, errors


def test_a_description_linked_out_of_its_folder_is_not_read(tmp_path: Path) -> None:
    from pipeline.nnef.checker import check_paths

    elsewhere = tmp_path / "elsewhere.nnef"
    elsewhere.write_text(GRAPH % "w", encoding="utf-8")
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "graph.nnef").symlink_to(elsewhere)
    findings = check_paths([folder], tensors=False).findings
    assert [f.code for f in findings] == ["NNEF-E003"] and "symbolic link" in findings[0].message
