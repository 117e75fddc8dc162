"""The target runner: the harness's options and errors, traces and noise, timing, input
vectors, instruction counts, and the not-run paths of the execute step."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest


from tests.codegen import cghelpers as H

from pipeline.diagnostics import PipelineError
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.toolchain.cc import compile_and_link, host_isa
from pipeline.execute.harness import read_outputs, run_harness, write_input_vectors
from pipeline.execute.instructions import (UNDECODED_ISAS, count_instructions, count_instructions_per_vector,
                                           special_vector, valgrind_version)

BODY = """
    x = external<scalar>(shape = [1, 2, 6, 6]);
    f = variable<scalar>(shape = [3, 2, 3, 3], label = 'f');
    c = conv(x, f, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    y = max_pool(c, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("harness")
    _, code = H.generated_code(root, BODY, {"f": np.random.default_rng(1).standard_normal((3, 2, 3, 3))})
    manifest = json.loads((code / "build.json").read_text())
    plain = compile_and_link(code, manifest["sources"], root / "bin" / "plain", 4).binary
    traced = compile_and_link(code, manifest["sources"], root / "bin" / "traced", 4, trace=True,
                              defines=["NNEF_TRACE_INFERENCES=20"]).binary
    inputs = root / "inputs"
    write_tensor(inputs / "x.dat", np.random.default_rng(2).standard_normal((5, 1, 2, 6, 6)).astype(np.float32))
    return root, plain, traced, inputs


def test_outputs_shape_and_determinism(built, tmp_path):
    root, plain, traced, inputs = built
    run_harness(plain, inputs, tmp_path / "a", 5)
    run_harness(traced, inputs, tmp_path / "b", 5, trace=tmp_path / "t.json", noise_seed=3)
    a, b = read_outputs(tmp_path / "a", ["y"]), read_outputs(tmp_path / "b", ["y"])
    assert a["y"].shape == (5, 1, 3, 3, 3) and a["y"].tobytes() == b["y"].tobytes()


def test_trace_format(built, tmp_path):
    _, _, traced, inputs = built
    run_harness(traced, inputs, tmp_path / "o", 3, trace=tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["schema_version"] == 1 and doc["clock"] == "shared" and doc["dropped"] == {"CPU0": 0}
    events = doc["items"]["CPU0"]
    assert len(events) == 3 * 2 * 2  # 3 inferences x 2 steps x (start, end)
    assert [e["event"] for e in events[:4]] == ["start", "end", "start", "end"]
    assert all(events[i]["t"] <= events[i + 1]["t"] for i in range(len(events) - 1))
    assert {e["inference"] for e in events} == {0, 1, 2}


def test_timing_campaign(built, tmp_path):
    _, plain, _, inputs = built
    run_harness(plain, inputs, tmp_path / "o", 2, time_runs=25, timing=tmp_path / "timing.json", warmup=3)
    doc = json.loads((tmp_path / "timing.json").read_text())
    assert doc["runs"] == 25 and doc["warmup"] == 3 and len(doc["ns"]) == 25 and min(doc["ns"]) > 0


def test_errors_have_codes(built, tmp_path):
    root, plain, traced, inputs = built
    with pytest.raises(PipelineError) as info:
        run_harness(plain, tmp_path / "nowhere", tmp_path / "o", 1)
    assert info.value.code == "RUN-E021" and "RUN-E010" in info.value.message
    write_tensor(tmp_path / "bad" / "x.dat", np.zeros((2, 1, 2, 5, 6), np.float32))
    with pytest.raises(PipelineError) as info:
        run_harness(plain, tmp_path / "bad", tmp_path / "o", 1)
    assert "RUN-E011" in info.value.message
    with pytest.raises(PipelineError) as info:
        run_harness(plain, inputs, tmp_path / "o", 9)  # only 5 vectors in the file
    assert "RUN-E011" in info.value.message
    with pytest.raises(PipelineError) as info:
        run_harness(plain, inputs, tmp_path / "o", 1, trace=tmp_path / "t.json")
    assert "RUN-E013" in info.value.message
    proc = subprocess.run([str(traced), "--inputs", str(inputs), "--outputs", str(tmp_path / "o"), "--vectors", "5",
                           "--time", "30", "--timing", str(tmp_path / "tt.json"), "--trace", str(tmp_path / "t.json")],
                          capture_output=True, text=True)
    assert proc.returncode == 4 and "RUN-E015" in proc.stderr  # 20-inference trace buffer overflowed


def test_bad_code_fails_the_build(tmp_path):
    (tmp_path / "bad.c").write_text("int main(void) { int unused; return 0; }\n")
    with pytest.raises(PipelineError) as info:
        compile_and_link(tmp_path, ["bad.c"], tmp_path / "bad", 4, include_dirs=["."])
    assert info.value.code == "RUN-E003" and "unused" in info.value.message
    assert not (tmp_path / "bad").exists()


def test_input_vectors_follow_the_shared_rule(tmp_path):
    from pipeline.numerics.vectors import Distribution, InputSpec, draw_vectors

    specs = {"b": InputSpec("b", (2, 3), Distribution("uniform", -1.0, 1.0)),
             "a": InputSpec("a", (4,), Distribution("uniform", 0.0, 2.0))}
    write_input_vectors(specs, 7, 99, tmp_path)
    vectors = draw_vectors(specs, 7, 99)
    for name in specs:
        assert read_tensor(tmp_path / f"{name}.dat").tobytes() == np.stack([v[name] for v in vectors]).tobytes()


def test_special_vector_has_the_special_values():
    v = special_vector((40, 40))
    assert np.isnan(v).any() and np.isinf(v).any() and (np.abs(v[np.isfinite(v)]) < 1e-38).any()


@pytest.mark.skipif(valgrind_version() is None, reason="valgrind is not installed (Debian package valgrind)")
def test_instruction_count_is_data_independent(built, tmp_path):
    _, plain, _, _ = built
    counts = []
    for k, vector in enumerate([np.zeros((1, 1, 2, 6, 6), np.float32), special_vector((1, 1, 2, 6, 6)),
                                np.random.default_rng(4).standard_normal((1, 1, 2, 6, 6)).astype(np.float32)]):
        write_tensor(tmp_path / f"i{k}" / "x.dat", vector)
        counts.append(count_instructions(plain, tmp_path / f"i{k}", tmp_path / f"w{k}"))
    assert len(set(counts)) == 1 and counts[0] > 1000


@pytest.mark.skipif(valgrind_version() is None, reason="valgrind is not installed (Debian package valgrind)")
@pytest.mark.skipif(host_isa() != "avx512", reason="the 16-lane host build uses AVX-512 only on an AVX-512 host")
def test_an_avx512_program_is_counted_in_its_narrower_build(tmp_path):
    """valgrind decodes no AVX-512 instruction: the 16-lane host program fails under it (RUN-E031), and
    the execute step counts the same sources built with UNDECODED_ISAS' ISA, whose counts do not depend
    on the data."""
    _, code = H.generated_code(tmp_path, BODY, {"f": np.random.default_rng(1).standard_normal((3, 2, 3, 3))},
                               lanes=16)
    manifest = json.loads((code / "build.json").read_text())
    timed = compile_and_link(code, manifest["sources"], tmp_path / "bin" / "plain", 16)
    assert "-mavx512f" in timed.flags
    write_tensor(tmp_path / "i0" / "x.dat", np.zeros((1, 1, 2, 6, 6), np.float32))
    with pytest.raises(PipelineError) as info:
        count_instructions(timed.binary, tmp_path / "i0", tmp_path / "w0")
    assert info.value.code == "RUN-E031"
    counted = compile_and_link(code, manifest["sources"], tmp_path / "bin" / "count", 16, isa=UNDECODED_ISAS["avx512"])
    assert "-mavx512f" not in counted.flags and "-mno-fma" in counted.flags
    counts = []
    for k, vector in enumerate([np.zeros((1, 1, 2, 6, 6), np.float32), special_vector((1, 1, 2, 6, 6)),
                                np.random.default_rng(4).standard_normal((1, 1, 2, 6, 6)).astype(np.float32)]):
        write_tensor(tmp_path / f"i{k}" / "x.dat", vector)
        counts.append(count_instructions(counted.binary, tmp_path / f"i{k}", tmp_path / f"w{k}"))
    assert len(set(counts)) == 1 and counts[0] > 1000


@pytest.mark.skipif(valgrind_version() is None, reason="valgrind is not installed (Debian package valgrind)")
def test_one_run_counts_each_vector_as_its_own_run_does(built, tmp_path):
    """One valgrind run cut at nnef_vector_start gives, per vector, the count of a run of that vector
    alone."""
    _, plain, _, _ = built
    stack = np.stack([np.zeros((1, 2, 6, 6), np.float32), special_vector((1, 2, 6, 6)),
                      np.random.default_rng(5).standard_normal((1, 2, 6, 6)).astype(np.float32)])
    write_tensor(tmp_path / "all" / "x.dat", stack)
    together = count_instructions_per_vector(plain, tmp_path / "all", tmp_path / "w", 3)
    alone = []
    for k in range(3):
        write_tensor(tmp_path / f"i{k}" / "x.dat", stack[k:k + 1])
        alone.append(count_instructions(plain, tmp_path / f"i{k}", tmp_path / f"w{k}"))
    assert together == alone and together[0] > 1000


@pytest.mark.skipif(valgrind_version() is None, reason="valgrind is not installed (Debian package valgrind)")
def test_a_harness_without_the_vector_boundary_is_refused(tmp_path):
    """A program that never calls nnef_vector_start cannot be cut per vector: RUN-E031, not one
    total passed off as the count of each vector."""
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    source = tmp_path / "p.c"
    source.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", str(source), "-o", str(tmp_path / "p")], check=True)
    (tmp_path / "in").mkdir()
    with pytest.raises(PipelineError) as caught:
        count_instructions_per_vector(tmp_path / "p", tmp_path / "in", tmp_path / "w", 2)
    assert caught.value.code == "RUN-E031" and "nnef_vector_start" in caught.value.message


def test_a_target_without_item_emitter_is_not_generated(tmp_path, monkeypatch):
    from pipeline.codegen.program import items
    from pipeline.codegen.program.generate import generate_deployment
    from pipeline.codegen.shared.errors import CodegenError
    from pipeline.codegen.shared.deployment import load_deployment

    split = H.single_item(tmp_path / "split", BODY, {"f": np.ones((3, 2, 3, 3), np.float32)})
    plan = json.loads((split / "plan.json").read_text())
    plan["items"][0]["target"] = "nvdla"
    (split / "plan.json").write_text(json.dumps(plan))
    monkeypatch.delitem(items.ITEM_EMITTERS, "nvdla")   # every schema target has one today: take it away
    with pytest.raises(CodegenError) as info:
        generate_deployment(load_deployment(split, split, tmp_path), tmp_path / "code")
    assert info.value.code == "CODEGEN-E006" and "no item emitter" in info.value.message
    plan["items"][0]["target"] = "gpu"  # not a target at all: plan.json breaks its schema
    (split / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(CodegenError) as info:
        load_deployment(split, split, tmp_path)
    assert info.value.code == "CODEGEN-E003" and "SPLIT-E030" in info.value.message
    assert info.value.location.key_path == "items[0].target"


def test_run_step_reports_missing_code_as_not_run(tmp_path):
    from pipeline.execute.step import run_deployment

    doc = run_deployment("m", "d", tmp_path, tmp_path / "inputs", 1, 1)
    assert doc["status"] == "not run" and "no generated C code" in doc["reason"]
