"""Tensor files (.dat) against the Khronos reader/writer, and every validation error."""

from __future__ import annotations

import struct
from pathlib import Path

import nnef
import numpy as np
import pytest

from pipeline.diagnostics import PipelineError
from pipeline.nnef.tensorfile import (HEADER_SIZE, decode_tensor, encode_tensor, read_tensor, read_tensor_file,
                                      write_tensor)

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
          np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


def sample(dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (1, 2, 3, 1), (2, 1, 1, 1, 1, 1, 1, 3)])
def test_round_trip_with_khronos(tmp_path: Path, dtype: type, shape: tuple[int, ...]) -> None:
    array = sample(dtype, shape)
    ours = tmp_path / "ours.dat"
    write_tensor(ours, array)
    with open(ours, "rb") as handle:
        theirs_read = nnef.read_tensor(handle)
    assert theirs_read.dtype == array.dtype and np.array_equal(theirs_read.reshape(shape), array)
    theirs = tmp_path / "theirs.dat"
    with open(theirs, "wb") as handle:
        nnef.write_tensor(handle, array)
    assert np.array_equal(read_tensor(theirs), array) and read_tensor(theirs).dtype == array.dtype
    if shape:  # Khronos writes rank-0 tensors as rank 0 too; bytes agree for every shape we write
        assert ours.read_bytes() == theirs.read_bytes()


def test_quantized_round_trip(tmp_path: Path) -> None:
    array = np.arange(6, dtype=np.int8).reshape(2, 3)
    write_tensor(tmp_path / "q.dat", array, quantized=True)
    stored = read_tensor_file(tmp_path / "q.dat")
    assert stored.quantized and stored.nnef_dtype == "integer"
    with open(tmp_path / "q.dat", "rb") as handle:
        data, quantized = nnef.read_tensor(handle, return_quantization=True)
    assert quantized and np.array_equal(data, array)


def broken(mutate) -> bytes:
    blob = bytearray(encode_tensor(np.ones((2, 3), np.float32)))
    mutate(blob)
    return bytes(blob)


@pytest.mark.parametrize("blob,message", [
    (b"\x4e\xef\x01\x00", "truncated header"),
    (broken(lambda b: b.__setitem__(0, 0x00)), "bad magic"),
    (broken(lambda b: b.__setitem__(2, 2)), "unsupported tensor file version"),
    (broken(lambda b: struct.pack_into("<I", b, 8, 9)), "rank 9 exceeds"),
    (broken(lambda b: struct.pack_into("<I", b, 4, 20)), "header data length 20"),
    (broken(lambda b: struct.pack_into("<I", b, 48, 9)), "unsupported item type"),
    (broken(lambda b: b.extend(b"\x00")), "trailing bytes"),
    (broken(lambda b: b.__delitem__(slice(-4, None))), "truncated data"),
    (broken(lambda b: struct.pack_into("<I", b, 20, 7)), "extents beyond rank"),
])
def test_invalid_files_are_rejected_with_a_reason(blob: bytes, message: str) -> None:
    with pytest.raises(PipelineError) as error:
        decode_tensor(blob, "t.dat")
    assert error.value.code == "NNEF-E032"
    assert message in error.value.message and str(error.value.location) == "t.dat"


def test_header_is_128_bytes() -> None:
    assert len(encode_tensor(np.zeros(0, np.float32))) == HEADER_SIZE


def test_rank_above_eight_cannot_be_written() -> None:
    with pytest.raises(ValueError):
        encode_tensor(np.zeros((1,) * 9, np.float32))
