"""The ACSL contracts EVA assumes of the transcendental programs (pipeline/codegen/c/contracts.py)
hold of the compiled programs: each clause evaluated in C on the program's result for every
float32 bit pattern of a stride-7 sweep (613,566,757 inputs per function: every exponent, every
residue of the mantissa's low bits) plus the special values, with the behaviours covering every
admitted input exactly once. A planted wrong bound is caught."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from tests.codegen import cghelpers as H
from tests.execute.test_harness import BODY

from pipeline.codegen.c.contracts import CONTRACTS, Behavior, Contract, c_predicate
from pipeline.toolchain.cc import build_flags

STRIDE = 7
SPECIALS = ("0x00000000u", "0x80000000u", "0x00000001u", "0x80000001u", "0x007fffffu", "0x00800000u", "0x3f800000u",
            "0xbf800000u", "0x42b00000u", "0x42b00001u", "0x42afffffu", "0x7f7fffffu", "0xff7fffffu",
            "0x7f800000u", "0xff800000u", "0x7fc00000u")


def _program(contracts: list[Contract]) -> str:
    lines = ['#include <stdio.h>', '#include <math.h>', '#include "nnef_math.h"', "",
             "static long bad[64], admitted[16];", "",
             "static void check(uint32_t u)", "{", "    const float xf = nnef_float(u);", "    const double x = xf;"]
    counter = 0
    for index, contract in enumerate(contracts):
        lines += [f"    if ({c_predicate(contract.requires)}) {{",
                  f"        const double r = nnef_{contract.function}(xf);", "        int cases = 0;",
                  f"        ++admitted[{index}];"]
        for behavior in contract.behaviors:
            assumes = "1" if behavior.assumes == "1" else c_predicate(behavior.assumes)
            lines.append(f"        if ({assumes}) {{")
            lines.append("            ++cases;")
            for clause in behavior.ensures:
                lines.append(f"            if (!({c_predicate(clause)})) {{ if (!bad[{counter}]++) "
                             f"printf(\"VIOLATION {contract.function} {behavior.name} %a %a\\n\", x, r); }}")
                counter += 1
            lines.append("        }")
        lines.append(f"        if (cases != 1) {{ if (!bad[{counter}]++) printf(\"COVER {contract.function} %a %d\\n\", x, cases); }}")
        counter += 1
        lines.append("    }")
    assert counter < 64
    lines += ["}", "", "int main(void)", "{", f"    for (uint64_t u = 0; u <= 0xffffffffu; u += {STRIDE}) check((uint32_t)u);"]
    lines += [f"    check({s});" for s in SPECIALS]
    lines += [f"    printf(\"ADMITTED {c.function} %ld\\n\", admitted[{i}]);" for i, c in enumerate(contracts)]
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("contracts")
    _, code = H.generated_code(root, BODY, {"f": np.random.default_rng(1).standard_normal((3, 2, 3, 3))})
    return code


def _run(folder, contracts: list[Contract], name: str) -> str:
    (folder / f"{name}.c").write_text(_program(contracts))
    flags, _ = build_flags(4)
    binary = folder / name
    subprocess.run(["gcc", *flags, "-I.", f"{name}.c", "-o", str(binary)], cwd=folder, check=True, capture_output=True)
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=600, check=True).stdout


def test_every_contract_holds_of_its_program(folder):
    contracts = [CONTRACTS[name] for name in sorted(CONTRACTS)]
    out = _run(folder, contracts, "contracts")
    assert "VIOLATION" not in out and "COVER" not in out, out
    admitted = {line.split()[1]: int(line.split()[2]) for line in out.splitlines() if line.startswith("ADMITTED")}
    assert set(admitted) == set(CONTRACTS) and all(n > 100_000_000 for n in admitted.values()), admitted


def test_a_wrong_bound_is_caught(folder):
    wrong = Contract("sigmoid", "isfinite(x)", (Behavior("all", "1", ("isfinite(r) && 0 <= r && r <= 0x1p-1",)),))
    out = _run(folder, [wrong], "wrong")
    assert "VIOLATION sigmoid all" in out, out


def test_the_contract_texts_are_in_nnef_math_h(folder):
    text = (folder / "nnef_math.h").read_text()
    assert text.count("#if defined(__FRAMAC__)") == len(CONTRACTS)
    manifest = json.loads((folder / "build.json").read_text())
    assert "nnef_eva.h" in manifest["headers"]
