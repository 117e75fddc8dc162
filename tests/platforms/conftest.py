"""Fixtures of the platform tests: the throwaway SSH server (tests/platforms/sshd.py)."""

from __future__ import annotations

import pytest

from tests.platforms import sshd


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory):
    why = sshd.missing()
    if why:
        pytest.skip(why)
    try:
        server = sshd.start(tmp_path_factory.mktemp("sshd"))
    except (RuntimeError, OSError) as error:
        pytest.skip(f"the OpenSSH server could not start here: {error}")
    yield server
    sshd.stop(server)
