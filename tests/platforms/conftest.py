"""Fixtures of the platform tests: the throwaway SSH server (tests/platforms/sshd.py), a small generated graph."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H
from tests.platforms import sshd

CONV = """
    x = external<scalar>(shape = [1, 2, 6, 6]);
    f = variable<scalar>(shape = [3, 2, 3, 3], label = 'f');
    c = conv(x, f, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    y = relu(c);
"""


@pytest.fixture(scope="session")
def conv_code(tmp_path_factory):
    """(root, code): a conv + relu graph's code, generated at 4 lanes (do not write into it)."""
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("conv")
    _, code = H.generated_code(root, CONV, {"f": np.random.default_rng(3).standard_normal((3, 2, 3, 3))})
    return root, code


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
