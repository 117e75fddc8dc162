"""Seeded fuzz of the deployment loader: every mutant of a shipped spec is accepted or refused with codes.

Mutants of each models/<m>/deploy.yaml: byte flips (random bytes and YAML's own punctuation),
line deletions and duplications, numbers replaced by extremes, names by hostile ones, YAML
constructs inserted (anchors, aliases, tags, merge keys, deep brackets, a 5,000-digit number). For
each, `load_deploy` (read, screen, parse, schema, checks) must return a spec or raise a
DeployError whose every problem has a documented code; an accepted spec must hold only
names in the grammar and counts within the limits. Mutant i of a run is a function of
(SEED, i) alone, so a failure names the mutant that reproduces it. Bounded to
NNCERT_FUZZ_SECONDS (default 15) in CI; NNCERT_DEPLOY_FUZZ_MUTANTS sets a count instead
(the long run of the issue: 100,000).
"""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

from pipeline.project import deploy
from pipeline.project.deploy import CODES, DeployError, DeploySpec, load_deploy
from pipeline.files.names import name_problem

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261124
FUZZ_SECONDS = float(os.environ.get("NNCERT_FUZZ_SECONDS", "15"))
MUTANTS = int(os.environ.get("NNCERT_DEPLOY_FUZZ_MUTANTS", "0"))   # 0: as many as FUZZ_SECONDS allow
SOURCES = sorted((ROOT / "models").glob("*/deploy.yaml"))
PUNCTUATION = b":-[]{},&*!|>'\"#%@`\n\t \x00\xff?"
EXTREMES = [b"0", b"-1", b"1000000000", b"99999999999999999999999999999", b"1.0e400", b"-1.0e400", b".nan", b".inf",
            b"1e9", b"0x7fffffffffffffff", b"4294967296", b"65536", b"1.5", b"true", b"null", b"~", b"[]", b"{}"]
NAMES = [b"../../x", b"a b", b"graph", b"/tmp/x", b"CPU0/../..", b"x" * 200, b"\xc3\xa4", b"-", b"''", b"*a", b"&a x"]
PIECES = [b"&a ", b"*a", b"!!python/object:os.system ", b"!!binary ", b"!!set ", b"? ", b"<<: ", b"[" * 100,
          b"{" * 40, b"9" * 5000, b"%YAML 1.1\n", b"---\n", b"\n...\n", b"\t", b"\xef\xbb\xbf", b"\r", b"|\n  ", b">-\n"]
NUMBER = re.compile(rb"(?<![A-Za-z_])[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?")
NAME = re.compile(rb"\b(CPU[0-9]|GPU[0-9]|ITEM[0-9]|single|split2|layer2|gpu|lenet5|resnet8|branch3|inception)\b")


def mutant(index: int) -> bytes:
    """Mutant `index` of the run (deterministic)."""
    rng = random.Random(SEED * 1_000_003 + index)
    data = bytearray(SOURCES[index % len(SOURCES)].read_bytes())
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        lines = bytes(data).split(b"\n")
        if kind == 0 and data:                          # a byte flipped to anything
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1 and data:                        # a byte flipped to YAML punctuation
            data[rng.randrange(len(data))] = rng.choice(PUNCTUATION)
        elif kind == 2 and len(lines) > 1:              # a line deleted
            del lines[rng.randrange(len(lines))]
            data = bytearray(b"\n".join(lines))
        elif kind == 3:                                 # a line duplicated (duplicate keys, items)
            at = rng.randrange(len(lines))
            lines.insert(at, lines[at])
            data = bytearray(b"\n".join(lines))
        elif kind == 4:                                 # a number replaced by an extreme
            found = list(NUMBER.finditer(data))
            if found:
                m = rng.choice(found)
                data[m.start():m.end()] = rng.choice(EXTREMES)
        elif kind == 5:                                 # a YAML construct or a long token inserted
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice(PIECES)
        else:                                           # a name replaced by a hostile one
            found = list(NAME.finditer(data))
            if found:
                m = rng.choice(found)
                data[m.start():m.end()] = rng.choice(NAMES)
    return bytes(data)


def _accepted_is_sound(spec: DeploySpec) -> list[str]:
    bounds = deploy.limits()
    wrong = [f"name {n!r}" for n in [spec.model, *spec.deployments] if name_problem(n) is not None]
    wrong += [f"item {i.name!r}" for d in spec.deployments.values() for i in d.items if name_problem(i.name) is not None]
    if not 1 <= spec.validation.vectors <= bounds["vectors"] or not 1 <= spec.met.runs <= bounds["runs"]:
        wrong.append(f"vectors {spec.validation.vectors} / runs {spec.met.runs}")
    if any(not 1 <= d.pipeline_depth <= 64 for d in spec.deployments.values()):
        wrong.append("pipeline_depth")
    for name, spec_input in spec.inputs.items():
        count = 1
        for extent in spec_input.shape:
            count *= extent
        if count > bounds["input_elements"]:
            wrong.append(f"input {name}: {count} elements")
    return wrong


def test_seeded_fuzz_of_the_deployment_loader(tmp_path: Path) -> None:
    assert SOURCES, "no shipped deploy.yaml"
    crashes: list[str] = []
    refused = accepted = 0
    deadline = time.perf_counter() + FUZZ_SECONDS
    index = 0
    while (index < MUTANTS) if MUTANTS else (time.perf_counter() < deadline):
        path = tmp_path / f"m{index}.yaml"   # a new path each time: load_deploy caches per path
        path.write_bytes(mutant(index))
        try:
            spec = load_deploy(path)
        except DeployError as error:
            refused += 1
            bad = [p for p in error.problems if p.code not in CODES or not p.message]
            if bad:
                crashes.append(f"mutant {index}: uncoded problem {bad[0]}")
        except Exception as error:  # noqa: BLE001 - the point of the test
            crashes.append(f"mutant {index}: {type(error).__name__}: {error}"[:300])
        else:
            accepted += 1
            crashes += [f"mutant {index}: accepted with {w}" for w in _accepted_is_sound(spec)]
        path.unlink()
        index += 1
    assert not crashes, f"{len(crashes)} of {index} mutants:\n" + "\n".join(crashes[:10])
    assert refused > index // 3 and accepted > 0, (index, refused, accepted)   # the mutations do bite
