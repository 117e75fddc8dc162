"""Signed evidence: a DSSE envelope over the package's in-toto statement, with an Ed25519 key.

The manifest (an in-toto Statement, pipeline/evidence/package.py) says what the package
holds; re-hashing proves the entries match it, but anyone can edit an entry and write a new
manifest. The signature says who built the package: `evidence build` (with a private key
from `--sign-key` or the environment variable NNCERT_SIGNING_KEY) adds the entry
`manifest.dsse.json`, a DSSE v1 envelope (github.com/secure-systems-lab/dsse, "Envelope" and
"Protocol"):

    {"payload": base64(manifest.json bytes), "payloadType": "application/vnd.in-toto+json",
     "signatures": [{"keyid": sha256 hex of the raw 32-byte public key, "sig": base64(Ed25519 signature)}]}

where the signature is over PAE(payloadType, payload) =
"DSSEv1" SP len(type) SP type SP len(payload) SP payload (lengths in decimal ASCII).
`evidence verify --key PUB` checks that the envelope's payload is byte for byte the
package's manifest and that the signature verifies with that public key; without a key it
checks integrity only, and says so. Ed25519 (RFC 8032) signatures are deterministic, so a
signed package stays byte-reproducible. The cryptography comes from `cryptography`
(pyca), never from code of ours.

Keys: PEM files, PKCS#8 private (unencrypted, or encrypted with the passphrase in
NNCERT_SIGNING_KEY_PASSPHRASE) and SubjectPublicKeyInfo public; an OpenSSH `ssh-ed25519`
public key line is accepted too. `python -m pipeline evidence keygen PRIVATE PUBLIC` writes
a pair.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pipeline.files.atomic import canonical_json, write_bytes
from pipeline.diagnostics import Location, PipelineError
from pipeline.files.readguard import InputRefused, read_input
from pipeline.files.treeguard import loads_json

ENVELOPE = "manifest.dsse.json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
KEY_VARIABLE = "NNCERT_SIGNING_KEY"
PASSPHRASE_VARIABLE = "NNCERT_SIGNING_KEY_PASSPHRASE"
MAX_KEY_BYTES = 64 * 1024
E_SIGNATURE = "EVID-E064"
E_KEY = "EVID-E065"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed (type and length bound to the payload)."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def key_id(public_raw: bytes) -> str:
    """The key's id in the envelope: SHA-256 (hex) of the raw 32-byte Ed25519 public key."""
    return hashlib.sha256(public_raw).hexdigest()


def _read_key(path: str | os.PathLike[str], what: str) -> bytes:
    try:   # a key path is named by the user (a CI secret may be a link): followed, but a regular, small file
        return read_input(path, max_bytes=MAX_KEY_BYTES, follow=True)
    except InputRefused as refused:
        raise PipelineError(E_KEY, f"cannot read the {what}: {refused.reason}", Location.in_file(path)) from None


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:   # pragma: no cover - a declared dependency
        raise PipelineError(E_KEY, "signing needs the `cryptography` package (pip install cryptography)") from None
    return serialization, ed25519


def _raw_public(public: Any) -> bytes:
    serialization, _ = _crypto()
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass(frozen=True)
class Signer:
    """An Ed25519 private key ready to sign envelopes; `keyid` names its public half."""

    private: Any
    public_raw: bytes

    @property
    def keyid(self) -> str:
        return key_id(self.public_raw)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)


def load_signer(path: str | os.PathLike[str]) -> Signer:
    """The Ed25519 private key in the PEM file `path` (EVID-E065 for anything else)."""
    serialization, ed25519 = _crypto()
    data = _read_key(path, "signing key")
    passphrase = os.environ.get(PASSPHRASE_VARIABLE)
    try:
        key = serialization.load_pem_private_key(data, password=passphrase.encode("utf-8") if passphrase else None)
    except (ValueError, TypeError) as exc:
        raise PipelineError(E_KEY, f"not a PEM private key this build can use: {str(exc).splitlines()[0] if str(exc) else 'unreadable'}",
                            Location.in_file(path)) from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise PipelineError(E_KEY, f"the signing key is a {type(key).__name__}, not an Ed25519 key", Location.in_file(path))
    return Signer(key, _raw_public(key.public_key()))


def load_public_key(path: str | os.PathLike[str]) -> Any:
    """The Ed25519 public key in `path`: PEM SubjectPublicKeyInfo or an OpenSSH `ssh-ed25519` line."""
    serialization, ed25519 = _crypto()
    data = _read_key(path, "public key")
    try:
        key = (serialization.load_ssh_public_key(data.strip()) if data.lstrip().startswith(b"ssh-")
               else serialization.load_pem_public_key(data))
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise PipelineError(E_KEY, f"not a PEM or OpenSSH public key: {str(exc).splitlines()[0] if str(exc) else 'unreadable'}",
                            Location.in_file(path)) from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise PipelineError(E_KEY, f"the public key is a {type(key).__name__}, not an Ed25519 key", Location.in_file(path))
    return key


_CHOSEN: list[str] = []   # keys chosen by a command (--sign-key) for the duration of a `signing_with`


@contextlib.contextmanager
def signing_with(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Within the block, packages are signed with the key at `path` (None: as the environment says).

    The key is loaded once first, so that an unusable key is refused (EVID-E065) before any
    package is built; nothing is left behind in the process's environment.
    """
    if path is None:
        yield
        return
    load_signer(path)
    _CHOSEN.append(os.fspath(path))
    try:
        yield
    finally:
        _CHOSEN.pop()


def signer_from_environment() -> Signer | None:
    """The signer chosen by `signing_with`, else the one named by NNCERT_SIGNING_KEY (None when neither:
    packages are then unsigned)."""
    path = _CHOSEN[-1] if _CHOSEN else os.environ.get(KEY_VARIABLE, "").strip()
    return load_signer(path) if path else None


def signing_key_fingerprint() -> str:
    """What identifies the configured signing key for doit's up-to-date check (no key: "")."""
    path = os.environ.get(KEY_VARIABLE, "").strip()
    if not path:
        return ""
    try:
        return hashlib.sha256(Path(path).read_bytes()[:MAX_KEY_BYTES]).hexdigest()
    except OSError:
        return f"unreadable:{path}"


def envelope(manifest: bytes, signer: Signer) -> bytes:
    """The DSSE envelope (canonical JSON) signing `manifest`."""
    signature = signer.sign(pae(PAYLOAD_TYPE, manifest))
    document = {
        "payload": base64.b64encode(manifest).decode("ascii"),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": signer.keyid, "sig": base64.b64encode(signature).decode("ascii")}],
    }
    return canonical_json(document).encode("utf-8")


@dataclass
class EnvelopeCheck:
    """What an envelope says and whether it holds: key ids, and `authenticated` (None: no key given)."""

    keyids: list[str] = field(default_factory=list)
    authenticated: bool | None = None
    problem: str = ""


def check_envelope(data: bytes, manifest: bytes, public: Any | None) -> EnvelopeCheck:
    """Judge a DSSE envelope against the package's manifest bytes and, when given, a public key."""
    result = EnvelopeCheck()
    try:
        document = loads_json(data, 16, 100_000)     # an envelope nests 3 deep and holds a few keys
        payload = base64.b64decode(document["payload"], validate=True)
        payload_type = document["payloadType"]
        signatures = [(str(s["keyid"]), base64.b64decode(s["sig"], validate=True)) for s in document["signatures"]]
        if not isinstance(payload_type, str) or not signatures:
            raise ValueError("no payload type or no signature")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, binascii.Error) as exc:
        result.problem = f"{ENVELOPE} is not a DSSE envelope: {exc}"
        result.authenticated = False if public is not None else None
        return result
    result.keyids = sorted({keyid for keyid, _ in signatures})
    if payload_type != PAYLOAD_TYPE:
        result.problem = f"{ENVELOPE}: payloadType {payload_type!r}, expected {PAYLOAD_TYPE}"
    elif payload != manifest:
        result.problem = f"{ENVELOPE} signs another statement than the package's manifest.json"
    if public is None:
        return result
    if result.problem:
        result.authenticated = False
        return result
    from cryptography.exceptions import InvalidSignature

    wanted = key_id(_raw_public(public))
    message = pae(payload_type, payload)
    for keyid, signature in signatures:
        if keyid != wanted:
            continue
        try:
            public.verify(signature, message)
        except InvalidSignature:
            continue
        result.authenticated = True
        return result
    result.authenticated = False
    result.problem = (f"no signature by the given key (keyid {wanted[:16]}...) verifies; signed by "
                      f"{', '.join(k[:16] + '...' for k in result.keyids)}")
    return result


def _same_file(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: the same folder (links resolved) and name, or one existing file."""
    a, b = Path(first), Path(second)
    try:
        if a.exists() and b.exists() and os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a.parent) == os.path.realpath(b.parent) and a.name == b.name


def generate_key_pair(private_path: str | os.PathLike[str], public_path: str | os.PathLike[str]) -> str:
    """Write a new Ed25519 pair (PEM; the private file mode 0600); its keyid. EVID-E065 before anything
    is written when both paths name one file (`keygen K K` once wrote the public key over the new
    private one, then said "keep it secret") or the private file exists."""
    if _same_file(private_path, public_path):
        raise PipelineError(E_KEY, f"the private and the public key would be the same file ({os.fspath(public_path)}): "
                            "name two files", Location.in_file(public_path))
    serialization, ed25519 = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:   # created 0600 in one step: never readable by others, never over an existing file
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        raise PipelineError(E_KEY, "refusing to overwrite an existing file", Location.in_file(private_path)) from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(private)
    write_bytes(public_path, public)
    return key_id(_raw_public(key.public_key()))
