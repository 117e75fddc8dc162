"""Float literals of the generated C: `flits` (a weights array at once) writes what `flit` writes
for each element, and gcc reads every literal back to the same float32 bits."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from pipeline.codegen.shared.spelling import flit, flits

SPECIALS = np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38, 1.0, -2.5], np.float32)


def test_flits_equals_flit_elementwise() -> None:
    values = np.concatenate([np.random.default_rng(3).standard_normal(5000).astype(np.float32), SPECIALS])
    assert flits(values) == [flit(v) for v in values]
    with_nonfinite = values.copy()
    with_nonfinite[[3, 7, 11]] = [np.inf, -np.inf, np.nan]
    assert flits(with_nonfinite) == [flit(v) for v in with_nonfinite]
    assert flits(with_nonfinite)[3:12:4] == ["INFINITY", "(-INFINITY)", "NAN"]


def test_gcc_reads_the_literals_back_bit_for_bit(tmp_path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    values = np.concatenate([np.random.default_rng(4).standard_normal(200).astype(np.float32), SPECIALS])
    source = tmp_path / "l.c"
    source.write_text("#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n"
                      f"static const float v[{len(values)}] = {{{', '.join(flits(values))}}};\n"
                      "int main(void) { for (unsigned i = 0; i < sizeof v / sizeof v[0]; ++i) { uint32_t b; "
                      "memcpy(&b, &v[i], 4); printf(\"%08x\\n\", b); } return 0; }\n")
    subprocess.run(["gcc", "-std=c99", "-O2", str(source), "-o", str(tmp_path / "l")], check=True)
    out = subprocess.run([str(tmp_path / "l")], capture_output=True, text=True, check=True).stdout.split()
    assert out == [f"{b:08x}" for b in values.view(np.uint32)]
