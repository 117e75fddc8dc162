"""A throwaway OpenSSH server on 127.0.0.1 for the SSH runner's tests (Debian openssh-server).

Host and user keys are made fresh in a temporary folder (ssh-keygen, ed25519, no passphrase);
the server logs in only the user running the tests, with that key, and stops with the fixture.
Run as root, sshd needs its privilege-separation folder /run/sshd (made here when missing, as
the Debian package's service does); the test is skipped where the server cannot start.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").is_file() else None)


@dataclass
class Server:
    port: int
    user: str
    identity: Path
    known_hosts: Path
    other_known_hosts: Path      # a known_hosts file naming another key for the same address
    workdir: Path                # the "board's" work folder (on this machine)
    process: subprocess.Popen


def missing() -> str | None:
    """Why no server can be started here, or None."""
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian package openssh-client)"
    if SSHD is None:
        return "sshd is not installed (Debian package openssh-server)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start(folder: Path) -> Server:
    """Start the server; raises RuntimeError with its log when it does not answer."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for name in ("host_key", "user_key", "other_host_key"):
        _keygen(folder / name)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    port = free_port()
    (folder / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", f"PidFile {folder / 'sshd.pid'}", "UsePAM no",
        "StrictModes no", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", "MaxStartups 50", ""]))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(folder / "sshd.log", "w")
    process = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(folder / "sshd_config")], stdout=log, stderr=log)
    host_key = (folder / "host_key.pub").read_text().split()
    other_key = (folder / "other_host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (folder / "other_known_hosts").write_text(f"[127.0.0.1]:{port} {other_key[0]} {other_key[1]}\n")
    workdir = folder / "board"
    workdir.mkdir()
    server = Server(port, getpass.getuser(), folder / "user_key", folder / "known_hosts",
                    folder / "other_known_hosts", workdir, process)
    for _ in range(100):
        if process.poll() is not None:
            break
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.05)
    stop(server)
    raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()[-2000:]}")


def stop(server: Server) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
