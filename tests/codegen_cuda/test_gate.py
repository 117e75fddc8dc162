"""nvcc builds of generated CUDA items and the PTX/SASS gate (pipeline/codegen/cuda_gate.py).

Every shipped model, whole on one GPU item, compiles for sm_87 and sm_90 with every warning an
error and passes the gate. Planted constructs -- a library expf, an atomicAdd, plain float code
built with --fmad=true, a local array spilled to local memory -- each fail it with the kernel
and the NNEF line named; the same plain code built with the pinned flags passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pipeline.codegen.cuda_gate import cuobjdump_path, gate
from pipeline.diagnostics import PipelineError
from pipeline.nnef.tensorfile import write_tensor
from pipeline.project.layout import model_names
from tests.projects import ROOT
from pipeline.toolchain.nvcc import ARCHITECTURES, check_architectures, device_build
from tests.codegen_cuda import cudahelpers as C

pytestmark = [
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit)"),
    pytest.mark.skipif(cuobjdump_path() is None, reason="cuobjdump is not installed (pip install nvidia-cuda-cuobjdump)"),
]

HEADER = """/* planted.cu -- a hand-written kernel for the gate's tests, from
 * tests/planted.nnef (sha256 0) and nothing else. */
"""


@pytest.mark.parametrize("model", model_names(ROOT))
def test_shipped_models_build_without_warning_and_pass_the_gate(model, exported_project, tmp_path):
    export = exported_project / "artifacts" / model / "export"
    split = C.whole_model(export, tmp_path / "split")
    manifest = C.generate(split, export, tmp_path / "code")
    code = tmp_path / "code"
    source = code / manifest["items"][0]["source"]
    build = device_build(code, source, tmp_path / "build", link=False)
    assert all("--fmad=false" in c and "-Werror" in c for c in build.commands)
    report = gate(tmp_path / "build", list(ARCHITECTURES), source)
    assert report.passed, [str(f) for f in report.findings]
    kernels = {k["kernel"] for k in manifest["items"][0]["kernels"]}
    for arch in ARCHITECTURES:
        assert kernels == set(report.counts[arch]), arch          # every kernel seen, in PTX and SASS
        assert all(c["ptx"] > 0 and c["sass"] > 0 for c in report.counts[arch].values())


PLANTED = {
    "expf": ("y[i] = expf(x[i]);", (), "approximate"),
    "atomicAdd": ("atomicAdd(y, x[i]);", (), "atomic"),
    "fmad": ("y[i] = x[i] * x[i + 1] + x[i + 2];", ("--fmad=true",), "fused multiply-add"),
    "local_memory": ("float t[256]; for (int k = 0; k < 256; ++k) t[k] = x[k + i]; y[i] = t[(int)x[i] & 255];", (),
                     "local memory"),
}


def _planted(tmp_path: Path, statement: str, extra: tuple[str, ...]):
    source = tmp_path / "planted.cu"
    source.write_text(HEADER + '#include <cuda_runtime.h>\n'
                      'extern "C" __global__ void nnef_k_GPU0_L42_y(const float *x, float *y)\n'
                      '{\n    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                      f"    {statement}\n}}\n", encoding="utf-8")
    device_build(tmp_path, source, tmp_path / "build", archs=["sm_90"], extra=extra, link=False)
    return gate(tmp_path / "build", ["sm_90"], source)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_construct_fails_the_gate(name, tmp_path):
    statement, extra, message = PLANTED[name]
    report = _planted(tmp_path, statement, extra)
    assert not report.passed
    hits = [f for f in report.findings if message in f.message]
    assert hits, [str(f) for f in report.findings]
    assert all(f.kernel == "nnef_k_GPU0_L42_y" and f.nnef == "tests/planted.nnef:42" for f in hits)


def test_plain_float_code_with_pinned_flags_passes(tmp_path):
    """The --fmad=true plant minus the flag: --fmad=false alone keeps mul and add apart."""
    report = _planted(tmp_path, PLANTED["fmad"][0], ())
    assert report.passed, [str(f) for f in report.findings]


def test_xavier_is_refused_with_the_reason():
    with pytest.raises(PipelineError) as caught:
        check_architectures(["sm_87", "sm_72"])
    assert caught.value.code == "RUN-E002" and "Xavier" in caught.value.message and "nvcc 13" in caught.value.message


@pytest.mark.parametrize("family", ["transcendentals", "multilinear_upsample", "deconv"])
def test_transcendental_and_division_kernels_pass_the_gate(family, tmp_path):
    """exp/log/tanh/sigmoid/softplus/pow programs, sqrt and division (also the interpolation
    weights of multilinear_upsample): no approximate instruction, FFMA only where the PTX holds a
    correctly rounded div/sqrt (ptxas's exact expansion)."""
    from tests.codegen_cuda.test_emulation import KERNELS, MULTIPLE_OUTPUTS

    body, variables, externals = KERNELS[family]
    outputs = MULTIPLE_OUTPUTS[family]
    text = (f"version 1.0;\n\ngraphitem {C.ITEM} g( {', '.join(externals)} ) -> ( {', '.join(outputs)} )\n{{\n"
            + "\n".join(f"    {line.strip()}" for line in body.strip().splitlines()) + "\n}\n")
    split = C.one_item(tmp_path / "split", text)
    for label, shape in variables.items():  # the weights' values do not matter to the gate
        write_tensor(split / f"{label}.dat", np.ones(shape, np.float32))
    manifest = C.generate(split, split, tmp_path / "code")
    source = tmp_path / "code" / manifest["items"][0]["source"]
    device_build(tmp_path / "code", source, tmp_path / "build", link=False)
    report = gate(tmp_path / "build", list(ARCHITECTURES), source)
    assert report.passed, [str(f) for f in report.findings]


def test_deployment_architectures_reach_the_build_and_xavier_fails_with_the_reason(exported_project, tmp_path):
    import json

    from pipeline.codegen.checks import cuda_result
    from pipeline.ledger.checks import Verdict

    export = exported_project / "artifacts" / "branch3" / "export"
    split = C.whole_model(export, tmp_path / "split")
    code = tmp_path / "code"
    from pipeline.codegen.cuda.generate import generate_cuda
    from pipeline.codegen.shared.deployment import load_deployment

    manifest = generate_cuda(load_deployment(split, export, tmp_path), code, ("sm_90",))
    assert manifest["architectures"] == ["sm_90"]
    passed = cuda_result("branch3/gpu", code, tmp_path, tmp_path / "s1")
    assert passed.verdict is Verdict.PASS and passed.measured["architectures"] == ["sm_90"], passed.reason
    (code / "build.json").write_text(json.dumps({**manifest, "architectures": ["sm_72"]}))
    failed = cuda_result("branch3/gpu", code, tmp_path, tmp_path / "s2")
    assert failed.verdict is Verdict.FAIL and "Xavier" in failed.reason and "nvcc 13" in failed.reason
