"""`evidence verify` against packages made by an attacker (issue 28), and signed packages.

Each package below once verified (exit 0, or PIPE-E900): an empty subject list, a file
added with its manifest line, an entry whose mode is a symbolic link, a local header
disagreeing with the central directory, an encrypted entry, a manifest inflating to
gigabytes. Each must now be refused with its code. Signing: a package edited and
re-manifested by hand, or re-signed with another key, fails `verify --key`.
"""

from __future__ import annotations

import json
import struct
import time
import zipfile
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.files.atomic import canonical_json
from pipeline.evidence.build import build_model_package
from pipeline.evidence.package import MANIFEST, STATEMENT_TYPE, verify_package
from pipeline.evidence.signing import ENVELOPE, generate_key_pair, load_public_key, load_signer
from pipeline.ledger.hashing import sha256_bytes
from tests.evidence.evidence_fakeproject import FakeProject

WEIGHTS = "artifacts/alpha/export/weights/conv1.dat"


@pytest.fixture
def package(project: FakeProject) -> Path:
    outcome = build_model_package("alpha", project.root)
    assert outcome.verify.ok, outcome.verify.findings
    return outcome.path


def entries_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def remanifest(entries: dict[str, bytes]) -> dict[str, bytes]:
    """What an attacker does after editing entries: recompute the manifest's subject digests."""
    manifest = json.loads(entries[MANIFEST])
    names = sorted(n for n in entries if n not in (MANIFEST, ENVELOPE))
    manifest["subject"] = [{"name": n, "digest": {"sha256": sha256_bytes(entries[n])}} for n in names]
    return {**entries, MANIFEST: canonical_json(manifest).encode("utf-8")}


def write_zip(path: Path, entries: dict[str, bytes], mode: int = 0o100644) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(entries.items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def codes(path: Path, key: object | None = None) -> tuple[int, set[str]]:
    started = time.perf_counter()
    report = verify_package(path, key)
    assert time.perf_counter() - started < 30
    return report.exit_code, {f.code for f in report.findings}


# -- what once verified

def test_an_empty_subject_list_attests_nothing(tmp_path: Path) -> None:
    manifest = {"_type": STATEMENT_TYPE, "subject": [], "predicateType": "https://slsa.dev/provenance/v1", "predicate": {}}
    path = write_zip(tmp_path / "empty.zip", {MANIFEST: canonical_json(manifest).encode()})
    assert codes(path) == (2, {"EVID-E054"})   # was: "OK: 0 entries match", exit 0


def test_a_file_added_with_its_manifest_line_is_caught_by_the_records(package: Path, tmp_path: Path) -> None:
    entries = remanifest({**entries_of(package), "artifacts/alpha/export/backdoor.dat": b"\x00" * 64})
    path = write_zip(tmp_path / "added.zip", entries)
    exit_code, found = codes(path)
    assert exit_code == 1 and found == {"EVID-E063"}
    assert any("backdoor.dat" in f.message and "no step record" in f.message for f in verify_package(path).findings)


def test_an_artifact_edited_and_remanifested_differs_from_its_record(package: Path, tmp_path: Path) -> None:
    entries = entries_of(package)
    entries[WEIGHTS] = bytes([entries[WEIGHTS][0] ^ 1]) + entries[WEIGHTS][1:]
    path = write_zip(tmp_path / "edited.zip", remanifest(entries))
    exit_code, found = codes(path)
    assert exit_code == 1 and found == {"EVID-E063"}


def test_a_recorded_output_dropped_with_its_manifest_line_is_caught(package: Path, tmp_path: Path) -> None:
    entries = entries_of(package)
    del entries["artifacts/alpha/petri/report.json"]
    path = write_zip(tmp_path / "dropped.zip", remanifest(entries))
    assert codes(path) == (1, {"EVID-E063"})


def test_an_entry_whose_mode_is_a_symbolic_link_is_refused(package: Path, tmp_path: Path) -> None:
    entries = entries_of(package)
    path = tmp_path / "link.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(entries.items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = (0o120777 if name == WEIGHTS else 0o100644) << 16   # unzip would create a link
            archive.writestr(info, data)
    exit_code, found = codes(path)
    assert exit_code == 1 and "EVID-E058" in found


def test_a_local_header_crc_disagreeing_with_the_central_directory_is_refused(package: Path, tmp_path: Path) -> None:
    data = bytearray(package.read_bytes())
    with zipfile.ZipFile(package) as archive:
        info = archive.getinfo(WEIGHTS)
    struct.pack_into("<L", data, info.header_offset + 14, info.CRC ^ 0xDEADBEEF)   # unzip -t reports it
    path = tmp_path / "crc.zip"
    path.write_bytes(bytes(data))
    exit_code, found = codes(path)
    assert exit_code == 1 and found == {"EVID-E059"}
    assert "CRC-32" in next(f.message for f in verify_package(path).findings)


def test_an_encrypted_entry_is_refused_without_internal_error(package: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(package.read_bytes())
    with zipfile.ZipFile(package) as archive:
        info = archive.getinfo(WEIGHTS)
        directory = archive.start_dir
    struct.pack_into("<H", data, info.header_offset + 6, info.flag_bits | 1)        # local header
    at = data.index(b"PK\x01\x02" + data[directory + 4:directory + 6], directory)
    while data[at + 46:at + 46 + len(WEIGHTS)] != WEIGHTS.encode():
        at = data.index(b"PK\x01\x02", at + 4)
    struct.pack_into("<H", data, at + 8, info.flag_bits | 1)                         # central directory
    path = tmp_path / "encrypted.zip"
    path.write_bytes(bytes(data))
    exit_code, found = codes(path)
    assert exit_code == 1 and "EVID-E058" in found   # was: PIPE-E900 (RuntimeError: password required)
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    assert cli.main(["evidence", "verify", str(path)]) == 1
    assert "PIPE-E900" not in capsys.readouterr().err


def test_overlapping_entries_are_refused(tmp_path: Path) -> None:
    """Two names, one compressed stream (the layout of an overlapping zip bomb)."""
    body = b"x" * 1000
    path = write_zip(tmp_path / "a.zip", {"a": body, "b": body, MANIFEST: b"{}"})
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        first, second = archive.getinfo("a"), archive.getinfo("b")
        directory = archive.start_dir
    at = data.index(b"PK\x01\x02", directory)
    at = data.index(b"PK\x01\x02", at + 4)   # b's central record: point it at a's local header
    struct.pack_into("<L", data, at + 42, first.header_offset)
    assert second.header_offset != first.header_offset
    path.write_bytes(bytes(data))
    _, found = codes(path)
    assert "EVID-E059" in found


def test_a_small_zip_whose_manifest_inflates_past_the_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "bomb.zip"
    huge = 80 * 1024 * 1024   # 80 MiB of zeros, 80 KiB compressed: the 3 MB zip inflated to 3 GiB
    info = zipfile.ZipInfo(MANIFEST, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w") as archive:
        with archive.open(info, "w") as handle:
            chunk = bytes(1 << 20)
            for _ in range(huge >> 20):
                handle.write(chunk)
    assert path.stat().st_size < 1 << 20
    assert codes(path) == (2, {"EVID-E062"})


def test_a_manifest_lying_about_its_size_is_read_no_further(tmp_path: Path) -> None:
    """Declared 100 bytes, inflates to 8 MiB: the read stops at the declared size (and the CRC fails)."""
    path = tmp_path / "liar.zip"
    data = bytes(8 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, data)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(MANIFEST)
        directory = archive.start_dir
    struct.pack_into("<L", raw, info.header_offset + 22, 100)
    struct.pack_into("<L", raw, directory + 24, 100)
    path.write_bytes(bytes(raw))
    exit_code, found = codes(path)
    assert exit_code == 2 and found == {"EVID-E054"}


def test_entry_count_entry_size_and_total_are_bounded(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in (("PIPELINE_MAX_PACKAGE_ENTRIES", "5"), ("PIPELINE_MAX_PACKAGE_BYTES", "1000"),
                            ("PIPELINE_MAX_MANIFEST_BYTES", "100")):
        with monkeypatch.context() as patch:
            patch.setenv(variable, value)
            assert codes(package) == (2, {"EVID-E062"}), variable
    with monkeypatch.context() as patch:
        patch.setenv("PIPELINE_MAX_ENTRY_BYTES", "100")
        exit_code, found = codes(package)
        assert exit_code == 1 and "EVID-E062" in found


def test_a_fifo_or_a_link_named_as_the_package_is_not_read(tmp_path: Path, package: Path) -> None:
    import os

    fifo = tmp_path / "fifo.zip"
    os.mkfifo(fifo)
    assert codes(fifo) == (2, {"EVID-E053"})
    link = tmp_path / "link.zip"
    link.symlink_to(package)
    assert codes(link) == (2, {"EVID-E053"})


def test_every_text_line_carries_its_code(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    entries = entries_of(package)
    entries[WEIGHTS] = b"evil"
    del entries["artifacts/alpha/petri/report.json"]
    entries["extra.txt"] = b"x"
    path = write_zip(tmp_path / "bad.zip", entries)
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    assert cli.main(["evidence", "verify", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    problems = [line for line in lines if not line.startswith(("FAILED ", "integrity checked"))]
    assert problems and all("EVID-E0" in line for line in problems), lines
    assert any(line.startswith("EVID-E050 TAMPERED " + WEIGHTS) for line in lines)
    assert "EVID-E051 MISSING  artifacts/alpha/petri/report.json" in lines
    assert "EVID-E052 EXTRA    extra.txt" in lines


# -- signing

@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "keys" / "signing.pem", tmp_path / "keys" / "signing.pub"
    private.parent.mkdir()
    generate_key_pair(private, public)
    assert private.stat().st_mode & 0o077 == 0
    return private, public


def test_a_signed_package_names_who_built_it(project: FakeProject, keys: tuple[Path, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    private, public = keys
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    assert cli.main(["evidence", "build", "--root", str(project.root), "--model", "alpha", "--sign-key", str(private)]) in (0, 1)
    capsys.readouterr()
    package = project.root / "reports/alpha/evidence.zip"
    assert ENVELOPE in entries_of(package)
    assert cli.main(["evidence", "verify", str(package), "--key", str(public)]) == 0
    out = capsys.readouterr().out
    assert "authentic: signed by keyid " + load_signer(private).keyid in out
    assert cli.main(["evidence", "verify", str(package)]) == 0
    assert "integrity checked, not authenticity" in capsys.readouterr().out
    first = package.read_bytes()   # Ed25519 is deterministic: the signed package stays reproducible
    assert cli.main(["evidence", "build", "--root", str(project.root), "--model", "alpha", "--sign-key", str(private)]) in (0, 1)
    assert package.read_bytes() == first


def test_a_package_edited_and_remanifested_by_hand_fails_verify_key(project: FakeProject, keys: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    from pipeline.evidence.matrix import build_matrix
    from pipeline.evidence.package import build_package, write_package

    private, public = keys
    matrix = build_matrix(project.root, ["alpha"], package_results="placeholder")
    path, report, _ = write_package("alpha", build_package("alpha", matrix, project.root, load_signer(private)), project.root)
    assert report.ok and report.authenticated is True
    key = load_public_key(public)
    entries = entries_of(path)
    record_name = "artifacts/alpha/export/record.json"
    entries[WEIGHTS] = b"\x00" * 16   # edit an artifact, its record and the manifest: consistent, but not signed
    record = json.loads(entries[record_name])
    for output in record["outputs"]:
        if output["path"] == WEIGHTS:
            output.update(sha256=sha256_bytes(entries[WEIGHTS]), size=16)
    entries[record_name] = canonical_json(record).encode()
    forged = write_zip(tmp_path / "forged.zip", remanifest(entries))
    assert codes(forged, key) == (1, {"EVID-E064"})
    assert codes(forged) == (1, {"EVID-E064"})   # the old envelope signs another manifest, key or no key
    unsigned = dict(remanifest(entries))
    del unsigned[ENVELOPE]
    stripped = write_zip(tmp_path / "stripped.zip", unsigned)
    assert codes(stripped) == (0, set())            # integrity holds; only the signature says who built it
    assert codes(stripped, key) == (1, {"EVID-E064"})
    attacker = tmp_path / "attacker.pem"
    generate_key_pair(attacker, tmp_path / "attacker.pub")
    from pipeline.evidence.signing import envelope

    resigned = dict(unsigned)
    resigned[ENVELOPE] = envelope(resigned[MANIFEST], load_signer(attacker))
    resigned_path = write_zip(tmp_path / "resigned.zip", resigned)
    assert codes(resigned_path) == (0, set())
    assert codes(resigned_path, key) == (1, {"EVID-E064"})
    assert codes(resigned_path, load_public_key(tmp_path / "attacker.pub")) == (0, set())


def test_keys_that_are_not_ed25519_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], package: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    pem = tmp_path / "ec.pub"
    pem.write_bytes(other.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    garbage = tmp_path / "garbage.pub"
    garbage.write_bytes(b"not a key")
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    for key in (pem, garbage, tmp_path / "absent.pub"):
        assert cli.main(["evidence", "verify", str(package), "--key", str(key)]) == 2
        err = capsys.readouterr().err
        assert "EVID-E065" in err and "Traceback" not in err


def test_an_openssh_public_key_line_is_accepted(keys: tuple[Path, Path], tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    private, _ = keys
    line = load_signer(private).private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                                   serialization.PublicFormat.OpenSSH)
    (tmp_path / "k.pub").write_bytes(line + b" builder@ci\n")
    assert load_public_key(tmp_path / "k.pub") is not None


def test_the_envelope_is_dsse(keys: tuple[Path, Path]) -> None:
    """PAE and the envelope's fields as the DSSE protocol defines them (secure-systems-lab/dsse, protocol.md)."""
    import base64

    from pipeline.evidence.signing import PAYLOAD_TYPE, envelope, pae

    assert pae("http://example.com/HelloWorld", b"hello world") == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    private, public = keys
    document = json.loads(envelope(b'{"a": 1}', load_signer(private)))
    assert document["payloadType"] == PAYLOAD_TYPE == "application/vnd.in-toto+json"
    assert base64.b64decode(document["payload"]) == b'{"a": 1}'
    load_public_key(public).verify(base64.b64decode(document["signatures"][0]["sig"]), pae(PAYLOAD_TYPE, b'{"a": 1}'))
