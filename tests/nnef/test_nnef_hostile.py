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
from pipeline.nnef.codes import CODES
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
        with pytest.raises(TensorFileError, match="not a regular file"):
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
