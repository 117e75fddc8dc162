"""A package's ZIP structure judged before any entry is trusted: counts, kinds, headers, overlaps.

Python's `zipfile` reads the central directory and, when an entry is opened, checks only the
name in its local header; a reader such as `unzip` uses the local headers. An archive whose
two copies disagree (another CRC, size or method in the local header), whose entries overlap
(one compressed stream shared by several names: the zip-bomb layout) or whose entry is
encrypted, a symbolic link or compressed with a method our packages never use is therefore
refused here, with the entry's name, before its data is read. Nothing is read beyond the
sizes judged: the entry count and the central directory's size come from the end record,
before `zipfile` parses the directory.

Reference: PKWARE APPNOTE.TXT 6.3.10, sections 4.3.7 (local file header), 4.3.9 (data
descriptor), 4.3.12 (central directory header), 4.3.14-4.3.16 (zip64 and end records),
4.5.3 (zip64 extended information).
"""

from __future__ import annotations

import posixpath
import stat
import struct
import unicodedata
import zipfile
from typing import BinaryIO, Iterable

from pipeline.diagnostics import printable

LOCAL = b"PK\x03\x04"
END = b"PK\x05\x06"
END64 = b"PK\x06\x06"
LOCATOR64 = b"PK\x06\x07"
DESCRIPTOR = b"PK\x07\x08"
_LOCAL = struct.Struct("<4sHHHHHLLLHH")      # 30 bytes
_END = struct.Struct("<4sHHHHLLH")           # 22 bytes
_LOCATOR = struct.Struct("<4sLQL")           # 20 bytes
_END64 = struct.Struct("<4sQHHLLQQQQ")       # 56 bytes
ENCRYPTED, DATA_DESCRIPTOR = 0x1, 0x8
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def directory_size(handle: BinaryIO) -> tuple[int, int] | None:
    """(entries, central directory bytes) from the end record(s), or None when there is none.

    Read from the last 64 KiB + 22 bytes of the file, so a directory of millions of entries
    is counted without being parsed.
    """
    handle.seek(0, 2)
    size = handle.tell()
    tail_length = min(size, _END.size + 0xFFFF)
    handle.seek(size - tail_length)
    tail = handle.read(tail_length)
    at = tail.rfind(END)
    if at < 0 or len(tail) - at < _END.size:
        return None
    _, _, _, _, entries, directory, _, _ = _END.unpack_from(tail, at)
    if entries == 0xFFFF or directory == 0xFFFFFFFF:
        locator = at - _LOCATOR.size
        if locator >= 0 and tail[locator:locator + 4] == LOCATOR64:
            _, _, offset, _ = _LOCATOR.unpack_from(tail, locator)
            handle.seek(offset)
            record = handle.read(_END64.size)
            if len(record) == _END64.size and record[:4] == END64:
                fields = _END64.unpack(record)
                entries, directory = fields[7], fields[8]
    return int(entries), int(directory)


def kind_problem(info: zipfile.ZipInfo) -> str | None:
    """Why an entry is not a plain file our packages hold: encrypted, a link, not regular, another method."""
    if info.flag_bits & ENCRYPTED:
        return "the entry is encrypted (packages are never encrypted)"
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_IFMT(mode):   # a mode without a type (0o600) is a file's
        if stat.S_ISLNK(mode):
            return "the entry is a symbolic link (its mode says so; packages hold regular files only)"
        if not stat.S_ISREG(mode):
            return f"the entry's mode {oct(mode)} is not a regular file's"
    if info.compress_type not in METHODS:
        return f"compression method {info.compress_type} (packages use {' or '.join(METHODS.values())} only)"
    return None


def _zip64_sizes(extra: bytes) -> tuple[int, int] | None:
    """(uncompressed, compressed) from a local header's zip64 extended information field."""
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 0x0001 and length >= 16:
            return struct.unpack_from("<QQ", extra, at + 4)
        at += 4 + length
    return None


def _descriptor(handle: BinaryIO, at: int, zip64: bool) -> tuple[tuple[int, int, int], int] | None:
    """((crc, compressed, uncompressed), bytes) of the data descriptor at `at`."""
    handle.seek(at)
    data = handle.read(4 + 4 + 16)
    offset = 4 if data[:4] == DESCRIPTOR else 0
    layout = "<LQQ" if zip64 else "<LLL"
    need = struct.calcsize(layout)
    if len(data) < offset + need:
        return None
    return struct.unpack_from(layout, data, offset), offset + need


def header_problems(handle: BinaryIO, infos: Iterable[zipfile.ZipInfo], directory_start: int) -> list[tuple[str, str]]:
    """(entry, what disagrees) for each entry whose local header differs from its central directory
    record, or whose data overlaps another entry or the central directory."""
    problems: list[tuple[str, str]] = []
    spans: list[tuple[int, int, str]] = []
    for info in infos:
        name = info.filename
        handle.seek(info.header_offset)
        raw = handle.read(_LOCAL.size)
        if len(raw) < _LOCAL.size or raw[:4] != LOCAL:
            problems.append((name, "no local file header where the central directory points"))
            continue
        _, _, flags, method, _, _, crc, compressed, size, name_length, extra_length = _LOCAL.unpack(raw)
        local_name = handle.read(name_length)
        extra = handle.read(extra_length)
        expected_name = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace")
        differences = []
        if local_name != expected_name:
            differences.append("name")
        if (flags & (ENCRYPTED | DATA_DESCRIPTOR | 0x800)) != (info.flag_bits & (ENCRYPTED | DATA_DESCRIPTOR | 0x800)):
            differences.append("flags")
        if method != info.compress_type:
            differences.append("compression method")
        start = info.header_offset + _LOCAL.size + name_length + extra_length
        end = start + info.compress_size
        if flags & DATA_DESCRIPTOR:
            found = _descriptor(handle, end, info.compress_size >= 0xFFFFFFFF or info.file_size >= 0xFFFFFFFF)
            if found is None:
                differences.append("data descriptor")
            else:
                (crc, compressed, size), length = found
                end += length
        elif compressed == 0xFFFFFFFF or size == 0xFFFFFFFF:
            sizes = _zip64_sizes(extra)
            if sizes is None:
                differences.append("zip64 sizes")
            else:
                size, compressed = sizes
        if crc != info.CRC:
            differences.append("CRC-32")
        if compressed != info.compress_size:
            differences.append("compressed size")
        if size != info.file_size:
            differences.append("size")
        if differences:
            problems.append((name, f"the local header and the central directory disagree on: {', '.join(differences)}"))
        spans.append((info.header_offset, end, name))
    spans.sort()
    for (_, end, name), (start, _, following) in zip(spans, spans[1:]):
        if end > start:
            problems.append((following, f"its data overlaps that of {name} (entries must not share bytes)"))
    if spans and spans[-1][1] > directory_start:
        problems.append((spans[-1][2], "its data overlaps the central directory"))
    return problems


def name_problem(name: str) -> str | None:
    """Why an entry name is not one a package holds, or None: it must be its own normal form (a
    relative POSIX path without `.`, `..` or empty components, no trailing `/`, no backslash) and
    free of control characters. `./artifacts/x` is refused although it names artifacts/x once
    normalised: an unpacker writes it over artifacts/x, and a check that matches names exactly
    would not see it."""
    if not name:
        return "an empty name"
    if printable(name, newlines=False) != name:
        return "a control character in the name"
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "not a relative POSIX path (absolute, a drive or a backslash)"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts) or posixpath.normpath(name) != name:
        return f"not in normal form (it would be unpacked as {posixpath.normpath(name)!r}: '.', '..', '//' or a " \
               "trailing '/')"
    return None


def name_problems(names: Iterable[str]) -> list[tuple[str, str]]:
    """(name, problem) for every entry name that is not in normal form, and for every name that is
    the same file as an earlier one once normalised (Unicode NFC, case: what a case-insensitive or
    normalising file system unpacks to one file)."""
    problems: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            problems.append((name, problem))
        key = unicodedata.normalize("NFC", posixpath.normpath(name.replace("\\", "/"))).casefold()
        if key in seen:
            problems.append((name, "the same file as the entry " + repr(seen[key]) + " once normalised (case, Unicode)"
                             if seen[key] != name else "the entry appears more than once"))
        else:
            seen[key] = name
    return problems
