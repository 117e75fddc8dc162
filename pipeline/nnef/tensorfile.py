"""NNEF binary tensor files (`.dat`): read and write every item type the spec defines.

Layout (NNEF 1.0.5, "Tensor File Format"), all integers little-endian uint32 unless noted:

    offset  size  field
    0       2     magic 0x4E 0xEF
    2       1     major version (1)        3  1  minor version (0)
    4       4     data length in bytes (after the 128-byte header)
    8       4     rank (at most 8)
    12      32    extents, 8 x uint32 (unused ones zero)
    44      4     bits per item
    48      4     item type code: 0 float, 1 unsigned int, 2 quantized unsigned,
                  3 quantized signed, 4 signed int, 5 logical (1 bit per item, packed
                  most significant bit first)
    52      76    reserved (19 x uint32); a legacy writer marked signed integers as
                  code 1 with reserved[0] != 0, which we read as signed
    128     ...   data, row-major

Reading validates everything and raises TensorFileError (code NNEF-E032) with the path
and what is wrong, never the file's bytes; writing goes through pipeline.files.atomic. A variable's
file is opened below its tensor folder without following a link (`read_variable_file`,
pipeline.files.readguard): a label's text is judged first (`label_problem`), then each component
of its path is opened with O_NOFOLLOW, so neither `../x` nor a linked `fc3_bias.dat` reads
a file outside the folder. Only version 1.0 is read (the one NNEF 1.0.5 defines).
"""

from __future__ import annotations

import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from pipeline.files.atomic import write_bytes
from pipeline.diagnostics import Location, PipelineError
from pipeline.files.readguard import InputRefused, open_input

HEADER_SIZE = 128
MAX_DATA_BYTES = 2**31  # 2 GiB: the largest tensor data read (docs/nnef.md, Limits)
MAX_RANK = 8
MAGIC = b"\x4e\xef"
SUPPORTED_VERSION = (1, 0)
CODE = "NNEF-E032"

FLOAT, UINT, QUINT, QINT, INT, BOOL = 0, 1, 2, 3, 4, 5
ITEM_TYPE_NAMES = {FLOAT: "float", UINT: "unsigned", QUINT: "quantized unsigned",
                   QINT: "quantized signed", INT: "signed", BOOL: "logical"}

_DTYPES: dict[tuple[int, int], np.dtype] = {
    (FLOAT, 16): np.dtype("<f2"), (FLOAT, 32): np.dtype("<f4"), (FLOAT, 64): np.dtype("<f8"),
    (INT, 8): np.dtype("i1"), (INT, 16): np.dtype("<i2"), (INT, 32): np.dtype("<i4"), (INT, 64): np.dtype("<i8"),
    (UINT, 8): np.dtype("u1"), (UINT, 16): np.dtype("<u2"), (UINT, 32): np.dtype("<u4"), (UINT, 64): np.dtype("<u8"),
    (QINT, 8): np.dtype("i1"), (QINT, 16): np.dtype("<i2"), (QINT, 32): np.dtype("<i4"), (QINT, 64): np.dtype("<i8"),
    (QUINT, 8): np.dtype("u1"), (QUINT, 16): np.dtype("<u2"), (QUINT, 32): np.dtype("<u4"), (QUINT, 64): np.dtype("<u8"),
    (BOOL, 1): np.dtype(bool),
}


class TensorFileError(PipelineError):
    """A `.dat` file that is not a valid NNEF tensor file (`missing`: there is no such file)."""

    def __init__(self, path: str | os.PathLike[str], message: str, missing: bool = False) -> None:
        super().__init__(CODE, message, Location.in_file(path))
        self.missing = missing


@dataclass(frozen=True)
class TensorFile:
    """A decoded tensor file: the array and how it was stored."""

    data: np.ndarray
    item_type: int
    bits: int
    version: tuple[int, int]

    @property
    def quantized(self) -> bool:
        return self.item_type in (QINT, QUINT)

    @property
    def nnef_dtype(self) -> str:
        """The NNEF tensor item type this file can back: scalar, integer or logical."""
        if self.item_type == FLOAT:
            return "scalar"
        if self.item_type == BOOL:
            return "logical"
        return "integer"


def _item_code(dtype: np.dtype, quantized: bool) -> tuple[int, int]:
    kind, bits = dtype.kind, dtype.itemsize * 8
    if kind == "b":
        return BOOL, 1
    if kind == "f" and bits in (16, 32, 64):
        if quantized:
            raise ValueError(f"a quantized tensor must have an integer dtype, not {dtype}")
        return FLOAT, bits
    if kind in "iu" and bits in (8, 16, 32, 64):
        if kind == "i":
            return (QINT if quantized else INT), bits
        return (QUINT if quantized else UINT), bits
    raise ValueError(f"dtype {dtype} has no NNEF tensor file item type")


def _data_length(count: int, bits: int) -> int:
    return (count + 7) // 8 if bits == 1 else count * (bits // 8)


def encode_tensor(array: np.ndarray, quantized: bool = False) -> bytes:
    """The bytes of a tensor file holding `array` (header + little-endian data)."""
    array = np.asarray(array)
    if array.ndim > MAX_RANK:
        raise ValueError(f"tensor rank {array.ndim} exceeds the maximum of {MAX_RANK}")
    item_type, bits = _item_code(array.dtype, quantized)
    count = int(array.size)
    header = bytearray(HEADER_SIZE)
    header[0:4] = MAGIC + bytes(SUPPORTED_VERSION)
    extents = list(array.shape) + [0] * (MAX_RANK - array.ndim)
    struct.pack_into("<II8III", header, 4, _data_length(count, bits), array.ndim, *extents, bits, item_type)
    if bits == 1:
        payload = np.packbits(array.reshape(-1).astype(bool)).tobytes()
    else:
        payload = np.ascontiguousarray(array, dtype=_DTYPES[(item_type, bits)]).tobytes()
    return bytes(header) + payload


@dataclass(frozen=True)
class _Header:
    shape: tuple[int, ...]
    dtype: np.dtype
    bits: int
    item_type: int
    version: tuple[int, int]
    count: int
    length: int


def _header(blob: bytes, path: str | os.PathLike[str]) -> _Header:
    """The validated header of a tensor file (its first HEADER_SIZE bytes); sizes in Python integers."""
    if len(blob) < HEADER_SIZE:
        raise TensorFileError(path, f"truncated header: {len(blob)} bytes, expected at least {HEADER_SIZE}")
    if blob[0:2] != MAGIC:  # not a tensor file: nothing of it is shown (it may be any file)
        raise TensorFileError(path, "not an NNEF tensor file (bad magic: its first two bytes are not 4e ef)")
    version = (blob[2], blob[3])
    if version != SUPPORTED_VERSION:
        raise TensorFileError(path, f"unsupported tensor file version {version[0]}.{version[1]} "
                              f"(NNEF 1.0.5 defines {SUPPORTED_VERSION[0]}.{SUPPORTED_VERSION[1]} only)")
    length, rank = struct.unpack_from("<II", blob, 4)
    if rank > MAX_RANK:
        raise TensorFileError(path, f"rank {rank} exceeds the maximum of {MAX_RANK}")
    extents = struct.unpack_from("<8I", blob, 12)
    bits, item_type = struct.unpack_from("<II", blob, 44)
    reserved0 = struct.unpack_from("<I", blob, 52)[0]
    if item_type == UINT and reserved0 != 0:
        item_type = INT  # legacy signed marking
    if any(extents[rank:]):
        raise TensorFileError(path, f"extents beyond rank {rank} must be zero, found {list(extents[rank:])}")
    shape = tuple(int(e) for e in extents[:rank])
    dtype = _DTYPES.get((item_type, bits))
    if dtype is None:
        name = ITEM_TYPE_NAMES.get(item_type, f"code {item_type}")
        raise TensorFileError(path, f"unsupported item type {name} with {bits} bits per item")
    count = math.prod(shape)  # Python integers: no overflow, whatever the extents
    expected = _data_length(count, bits)
    if length != expected:
        raise TensorFileError(path, f"header data length {length} does not match {count} items of {bits} bits ({expected} bytes)")
    if length > MAX_DATA_BYTES:
        raise TensorFileError(path, f"{length} data bytes exceed the limit of {MAX_DATA_BYTES} (MAX_DATA_BYTES)")
    return _Header(shape, dtype, bits, item_type, version, count, length)


def decode_tensor(blob: bytes, path: str | os.PathLike[str] = "<bytes>") -> TensorFile:
    """Decode and validate the bytes of a tensor file."""
    header = _header(blob[:HEADER_SIZE], path)
    _check_length(len(blob) - HEADER_SIZE, header, path)
    return _decode_payload(blob[HEADER_SIZE:], header)


def _check_length(actual: int, header: _Header, path: str | os.PathLike[str]) -> None:
    if actual != header.length:
        kind = "truncated data" if actual < header.length else "trailing bytes after data"
        raise TensorFileError(path, f"{kind}: file holds {actual} data bytes, header says {header.length}")


def _decode_payload(payload: bytes, header: _Header) -> TensorFile:
    shape, dtype, bits, count = header.shape, header.dtype, header.bits, header.count
    item_type, version = header.item_type, header.version
    if bits == 1:
        data = np.unpackbits(np.frombuffer(payload, dtype=np.uint8))[:count].astype(bool).reshape(shape)
    else:
        data = np.frombuffer(payload, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=True)
    return TensorFile(data, item_type, bits, version)


LABEL_CODE = "NNEF-E033"
_LABEL_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def label_problem(label: str) -> str | None:
    """Why a variable label cannot name a tensor file inside the tensor folder (None if it can).

    A label is the file's path relative to the folder of the description, without `.dat`
    (NNEF spec, "Tensor files"); `/`-separated segments of letters, digits, `_`, `.` and `-`,
    none `..` or empty, no leading `/` beyond the one the spec's writers sometimes add. A label
    such as `../../etc/passwd` would make every reader open a file outside the folder.
    """
    segments = label[1:].split("/") if label.startswith("/") else label.split("/")
    if not label or not all(_LABEL_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments):
        return (f"label '{label[:80]}' is not a path inside the tensor folder ('/'-separated names of letters, "
                "digits, '_', '.', '-'; no '..', no empty segment)")
    return None


def label_path(base: str | os.PathLike[str], label: str) -> Path:
    """The tensor file of `label` under `base`; ValueError (the label_problem text) if it would leave it."""
    problem = label_problem(label)
    if problem is not None:
        raise ValueError(problem)
    return Path(base) / f"{label.lstrip('/')}.dat"


def read_tensor_file(path: str | os.PathLike[str], base: str | os.PathLike[str] | None = None) -> TensorFile:
    """Read and validate the tensor file at `path` (below `base` when given): header judged before the body.

    Opened by pipeline.files.readguard: no symbolic link followed (below `base`, none at all; without
    it, not at the last component), a regular file only (a FIFO, a device or a directory is
    refused without reading), at most HEADER_SIZE + MAX_DATA_BYTES bytes; the header's sizes
    are checked against the file's size before the data is read, so a hostile file costs at
    most its declared, bounded size.
    """
    shown = Path(base) / path if base is not None else Path(path)
    try:
        fd, size = open_input(path, base=base, max_bytes=HEADER_SIZE + MAX_DATA_BYTES)
    except InputRefused as refused:
        raise TensorFileError(shown, refused.reason, refused.missing) from None
    try:
        with os.fdopen(fd, "rb") as handle:
            header = _header(handle.read(HEADER_SIZE), shown)
            _check_length(size - HEADER_SIZE, header, shown)
            payload = handle.read(header.length)
    except OSError as error:
        raise TensorFileError(shown, f"cannot read: {error.strerror or error}") from None
    if len(payload) != header.length:
        raise TensorFileError(shown, f"truncated data: read {len(payload)} data bytes, header says {header.length}")
    return _decode_payload(payload, header)


def read_variable_file(base: str | os.PathLike[str], label: str) -> TensorFile:
    """The tensor file of variable `label` in the tensor folder `base`, read without leaving it.

    PipelineError NNEF-E033 for a label outside the grammar (judged before anything is
    opened), TensorFileError (NNEF-E032; `missing` when absent) for a file that is a link,
    not regular, too large or not a valid tensor file.
    """
    problem = label_problem(label)
    if problem is not None:
        raise PipelineError(LABEL_CODE, problem, Location.in_file(base))
    return read_tensor_file(f"{label.lstrip('/')}.dat", base=base)


def first_non_finite(data: np.ndarray) -> tuple[tuple[int, ...], float] | None:
    """(index in C order, value) of the first NaN or infinity of a float array, or None."""
    if data.dtype.kind not in "fc" or data.size == 0:
        return None
    bad = ~np.isfinite(data)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), data.shape))
    return index, data[index].item()


def read_tensor(path: str | os.PathLike[str]) -> np.ndarray:
    """The array stored in the tensor file at `path`."""
    return read_tensor_file(path).data


def write_tensor(path: str | os.PathLike[str], array: np.ndarray, quantized: bool = False) -> Path:
    """Write `array` as an NNEF tensor file, atomically."""
    return write_bytes(path, encode_tensor(array, quantized))


def write_arrays(arrays: Mapping[str, np.ndarray], folder: str | os.PathLike[str]) -> dict[str, Path]:
    """<folder>/<name>.dat for each array (already stacked [N, ...], float32): how runs and comparisons store
    their inputs and outputs."""
    out = Path(folder)
    return {name: write_tensor(out / f"{name}.dat", np.ascontiguousarray(array, np.float32))
            for name, array in sorted(arrays.items())}
