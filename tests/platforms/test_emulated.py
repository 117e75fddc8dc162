"""Generated C built for the built-in aarch64_qemu platform and run under qemu-aarch64.

The code of a small graph, generated at the platform's 4 lanes, built by Debian's cross
compiler with the platform's flags (-mcpu=cortex-a78ae, -static), run through the platform's
runner: the same numbers as the host build and the reference semantics, compared NaN-aware.
NaN bit patterns differ across the two (x86-64 makes 0xffc00000, AArch64 0x7fc00000 for
inf * 0): a byte-identity claim across platforms would be wrong, and the comparison does not
make one.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H

from pipeline.compare.numeric import compare, same_bits
from pipeline.execute.harness import read_outputs, run_harness
from pipeline.nnef.tensorfile import write_tensor
from pipeline.toolchain import platforms as P
from pipeline.toolchain.cc import compile_and_link
from pipeline.toolchain.runners import session

ARM = P.resolve("aarch64_qemu")
pytestmark = pytest.mark.skipif(bool(P.missing_tools(ARM)) or shutil.which("gcc") is None,
                                reason="needs gcc, aarch64-linux-gnu-gcc and qemu-aarch64 (Debian packages gcc, "
                                       "gcc-aarch64-linux-gnu, qemu-user)")

BODY = """
    x = external<scalar>(shape = [1, 2, 6, 6]);
    f = variable<scalar>(shape = [3, 2, 3, 3], label = 'f');
    c = conv(x, f, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    y = mul(c, 0.0);
    z = exp(c);
"""


def test_aarch64_build_under_qemu_matches_the_host_and_the_reference(tmp_path):
    weights = {"f": np.random.default_rng(7).standard_normal((3, 2, 3, 3)).astype(np.float32)}
    split = H.single_item(tmp_path / "split", BODY, weights, outputs=("y", "z"))
    code = tmp_path / "code"
    manifest = H.generate(split, split, code, ARM.lanes, tmp_path).manifest
    x = np.random.default_rng(8).standard_normal((4, 1, 2, 6, 6)).astype(np.float32)
    x[1, 0, 0, 2, 2] = np.inf                       # inf * 0 = NaN: each processor's default NaN
    write_tensor(tmp_path / "in" / "x.dat", x)
    host = compile_and_link(code, manifest["sources"], tmp_path / "host", ARM.lanes).binary
    arm = compile_and_link(code, manifest["sources"], tmp_path / "arm", ARM.lanes, platform=ARM)
    assert "-mcpu=cortex-a78ae" in arm.command and arm.command[-3] == "-static"
    run_harness(host, tmp_path / "in", tmp_path / "out-host", 4)
    with session(ARM, tmp_path / "t") as qemu:
        result = run_harness(arm.binary, tmp_path / "in", tmp_path / "out-arm", 4, session=qemu)
    assert result.command[0] == "qemu-aarch64"
    here, there = read_outputs(tmp_path / "out-host", ["y", "z"]), read_outputs(tmp_path / "out-arm", ["y", "z"])
    nan = np.isnan(here["y"])
    assert nan.any() and (np.isnan(there["y"]) == nan).all()
    assert same_bits(there["y"], here["y"]).all() and same_bits(there["z"], here["z"]).all()
    reference = H.reference(split / "CPU0.nnef", {"x": x}, weights, ["y", "z"])
    assert compare(there, reference, exact=True).passed
    patterns = {int(v) for v in there["y"][nan].view(np.uint32)} | {int(v) for v in here["y"][nan].view(np.uint32)}
    if P.host_architecture() == "x86_64":           # the trap this comparison avoids (docs/execute.md)
        assert there["y"][nan].tobytes() != here["y"][nan].tobytes(), sorted(hex(p) for p in patterns)
