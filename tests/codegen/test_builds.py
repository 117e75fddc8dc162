"""Builds of generated code beyond the default one: sanitizers, the portable C99 build, both
vector widths, the mutex sync variant, and the branch-freedom of the selection primitives.

On the branch3 paper deployment (three items, barrier sync) and lenet5's split (two items,
event sync), exported and split in a scratch project.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest


from tests.codegen import cghelpers as H
from tests.projects import copy_exports

from pipeline.codegen import static
from pipeline.toolchain.cc import FORBIDDEN_FLAGS, QUALIFIED_FLAGS, build_flags

DEPLOYMENTS = [("branch3", "paper3"), ("lenet5", "split2"), ("lenet5", "single")]


@pytest.fixture(scope="module")
def project(tmp_path_factory, exported_project):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    from pipeline.split.step import run_split_step

    models = sorted({m for m, _ in DEPLOYMENTS})
    root = copy_exports(exported_project, tmp_path_factory.mktemp("builds") / "p", models)
    for model in models:
        run_split_step(model, root, vectors=1)
    return root


def _vectors(root: Path, model: str, count: int = 8) -> dict[str, np.ndarray]:
    from pipeline.project.deploy import load_deploy
    from pipeline.numerics.vectors import draw_vectors

    spec = load_deploy(root / "models" / model / "deploy.yaml")
    vectors = draw_vectors(spec.inputs, count, spec.validation.seed)
    return {name: np.stack([v[name] for v in vectors]) for name in spec.inputs}


def _generate(root: Path, model: str, deployment: str, out: Path, lanes: int) -> tuple[Path, list[str]]:
    split = root / "artifacts" / model / "split" / deployment
    export = root / "artifacts" / model / "export"
    generated = H.generate(split, export, out, lanes, root)
    return out, [o["name"] for o in generated.manifest["outputs"]]


@pytest.fixture(scope="module", params=DEPLOYMENTS, ids=lambda d: f"{d[0]}-{d[1]}")
def reference_run(request, project, tmp_path_factory):
    model, deployment = request.param
    work = tmp_path_factory.mktemp(f"{model}-{deployment}")
    code, outputs = _generate(project, model, deployment, work / "code", H.lanes_available()[-1])
    inputs = _vectors(project, model)
    binary = H.build(code, H.lanes_available()[-1])
    return model, deployment, inputs, outputs, H.run(binary, inputs, work / "default", outputs)


def test_sanitizers_run_clean(reference_run, project, tmp_path):
    """-fsanitize=address,undefined (no recovery): any report fails the run; outputs unchanged."""
    model, deployment, inputs, outputs, expected = reference_run
    code, _ = _generate(project, model, deployment, tmp_path / "code", 4)
    binary = H.build(code, 4, sanitize=True)
    got = H.run(binary, inputs, tmp_path, outputs,
                env={"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"})
    H.assert_bit_identical(got, expected, "sanitizer build")


def test_other_builds_are_bit_identical(reference_run, project, tmp_path):
    """Lanes 4 and 8, the portable C99 build and the mutex/condvar sync give the same bits."""
    model, deployment, inputs, outputs, expected = reference_run
    for lanes in H.lanes_available():
        code, _ = _generate(project, model, deployment, tmp_path / f"code{lanes}", lanes)
        H.assert_bit_identical(H.run(H.build(code, lanes), inputs, tmp_path / f"r{lanes}", outputs), expected,
                               f"lanes {lanes}")
    code, _ = _generate(project, model, deployment, tmp_path / "portable", 4)
    binary = H.build(code, 4, defines=["NNEF_PORTABLE", "NNEF_SYNC_MUTEX"])
    H.assert_bit_identical(H.run(binary, inputs, tmp_path / "portable-run", outputs), expected, "portable")


def test_no_libm_dependency(reference_run, project, tmp_path):
    model, deployment, *_ = reference_run
    code, _ = _generate(project, model, deployment, tmp_path / "code", 4)
    binary = H.build(code, 4)
    dynamic = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True).stdout
    libm = static.libm_symbols()
    used = {line.split()[-1].split("@")[0] for line in dynamic.splitlines() if line.strip()}
    assert not used & libm, sorted(used & libm)
    needed = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True).stdout
    assert "libm.so" not in needed


def test_flags():
    flags, defines = build_flags(4, trace=True)
    assert all(f in flags for f in QUALIFIED_FLAGS) and "-fno-math-errno" in flags
    assert not set(flags) & set(FORBIDDEN_FLAGS) and defines == ["NNEF_TRACE"]
    flags8, _ = build_flags(8)
    assert ("-mavx2" in flags8) == (H.host_isa() in ("avx2", "avx512")) and ("-mfma" not in flags8)
    if "-mavx2" in flags8:
        assert "-mno-fma" in flags8 and "-mavx512f" not in flags8
    flags16, _ = build_flags(16)
    assert ("-mavx512f" in flags16) == (H.host_isa() == "avx512") and ("-mfma" not in flags16)
    if "-mavx512f" in flags16:
        assert flags16[-1] == "-mno-fma"


def test_selection_primitives_have_no_conditional_jumps(tmp_path):
    from pipeline.codegen.c import RUNTIME_DIR

    for header in ("nnef_runtime.h", "nnef_sync.h"):
        shutil.copy(RUNTIME_DIR / header, tmp_path)
    for lanes in H.lanes_available():
        (tmp_path / "nnef_config.h").write_text(f"#define NNEF_VL {lanes}\n")
        (tmp_path / "probe.c").write_text(static.probe_source())
        flags, _ = build_flags(lanes)
        subprocess.run(["gcc", *flags, "-I.", "-S", "probe.c", "-o", "probe.s"], cwd=tmp_path, check=True)
        jumps = static.conditional_jumps((tmp_path / "probe.s").read_text(),
                                         [f"probe_{n}" for n in static.SELECT_PRIMITIVES])
        assert len(jumps) >= 10, sorted(jumps)
        assert not any(jumps.values()), {k: v for k, v in jumps.items() if v}


def test_build_json_lists_what_the_build_needs(reference_run, project, tmp_path):
    model, deployment, *_ = reference_run
    code, _ = _generate(project, model, deployment, tmp_path / "code", 4)
    manifest = json.loads((code / "build.json").read_text())
    for source in manifest["sources"] + manifest["headers"]:
        assert (code / source).is_file(), source
    assert manifest["lanes"] == 4 and manifest["items"]
