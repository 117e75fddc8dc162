"""Issue 35: weights stored as NVIDIA's convolution core reads them, an emulator that finds each weight where
the core does, golden cases that tell layouts apart, and the old K x C x R x S order planted to see it fail.

The writer (pipeline/codegen/nvdla/weights.py) and the emulator's address computation
(pipeline/execute/nvdla/csc.py) are written apart; here a third spelling of the CSC's rule
(nested loops appending halves, as the cmod's loops walk them) and offsets worked out by hand
from the cmod's strides judge both.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pipeline.execute.nvdla.golden import read_dimg, read_pgm, run_case
from tests.codegen.nvdla_cases import GOLDEN

LAYOUT = Path(__file__).resolve().parents[1] / "data" / "nvdla-layout"
SHAPES = [(1, 1, 1, 1), (6, 1, 5, 5), (8, 13, 2, 8), (16, 64, 1, 1), (17, 65, 1, 1), (20, 80, 3, 3),
          (33, 130, 3, 3), (24, 20, 4, 4), (4, 128, 1, 1), (10, 84, 1, 1), (3, 2, 7, 1)]


def hardware_order(weight: np.ndarray) -> bytes:
    """The CSC's order spelled as its loops run: kernel group, channel block, tap (row, column), kernel, channel."""
    k, c, r, s = weight.shape
    halves = []
    for g in range(0, k, 16):
        for b in range(0, c, 64):
            for row in range(r):
                for col in range(s):
                    for kernel in range(g, min(g + 16, k)):
                        for channel in range(b, min(b + 64, c)):
                            halves.append(weight[kernel, channel, row, col])
    data = np.array(halves, dtype="<f2").tobytes()
    return data + bytes(-len(data) % 128)


def kcrs_order(weight: np.ndarray) -> bytes:
    """The order the project wrote before issue 35 (row-major K x C x R x S): what the planted defect writes."""
    data = np.asarray(weight, dtype=np.float32).astype("<f2").tobytes()
    return data + bytes(-len(data) % 128)


def _weights(shape: tuple[int, ...], seed: int = 35) -> np.ndarray:
    return np.random.default_rng(seed).integers(-2048, 2048, size=shape).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_writer_stores_weights_in_the_csc_read_order(shape):
    from pipeline.codegen.nvdla.weights import direct_conv_bytes

    w = _weights(shape)
    assert direct_conv_bytes(w) == hardware_order(w)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_emulator_finds_every_weight_where_the_csc_reads_it(shape):
    from pipeline.execute.nvdla.csc import weight_extent, weight_offsets

    w = _weights(shape)
    data = hardware_order(w)
    offsets = weight_offsets(*shape)
    assert offsets.shape == shape and len(np.unique(offsets)) == w.size  # every weight once, none twice
    assert weight_extent(*shape) == w.size * 2 <= len(data) and len(data) % 128 == 0
    halves = np.frombuffer(data, dtype="<f2")
    assert np.array_equal(halves[offsets // 2].astype(np.float32), w)


def test_offsets_worked_out_by_hand_from_the_cmod_strides():
    from pipeline.execute.nvdla.csc import weight_offsets

    # K 20, C 80, 3 x 3: byte_per_kernel 1440, kernel_group_stride 23040; group 1 holds 4 kernels, so its
    # block_operation_stride is 64 * 2 * 9 * 4 = 4608 and, in the partial block of 16 channels,
    # current_super_atom_size 32 and stripe_operation_stride 128
    offsets = weight_offsets(20, 80, 3, 3)
    assert offsets[17, 70, 2, 1] == 23040 + 4608 + 7 * 128 + 1 * 32 + 6 * 2
    # group 0, block 0: super atom 128 bytes, 16 kernels: stripe stride 2048
    assert offsets[3, 5, 0, 2] == 2 * 2048 + 3 * 128 + 5 * 2
    assert offsets[0, 64, 0, 0] == 64 * 2 * 9 * 16  # block 1 of group 0 follows the 9 taps of block 0
    # one input channel, 3 x 3, 6 kernels: tap after tap, the 6 kernels of a tap together (KCRS: k * 9 + tap)
    assert [int(offsets) // 2 for offsets in weight_offsets(6, 1, 3, 3)[:, 0, 0, 1]] == [6, 7, 8, 9, 10, 11]


def test_the_orders_coincide_only_for_1x1_kernels_of_at_most_64_channels():
    for shape in SHAPES:
        w = _weights(shape)
        same = hardware_order(w) == kcrs_order(w)
        assert same == (shape[2] * shape[3] == 1 and shape[1] <= 64), shape


def test_a_kernel_size_or_weight_surface_other_than_the_csc_reads_is_an_emulation_error():
    from pipeline.codegen.nvdla import reader as R
    from pipeline.execute.nvdla.emulator import emulate
    from pipeline.execute.nvdla.scheduler import EmulationError
    from tests.codegen.nvdla_cases import loadable_of

    data, content, _, legal = loadable_of(LAYOUT / "3501_Conv.onnx")
    blobs = {b["name"]: b["data"] for b in content["blobs"]}
    conv = R.decode(R.ConvOp, blobs["task-0-op_list"], 2 * R.OP_CONTAINER)
    weight = R.decode(R.ConvSurface, blobs["task-0-surf_list"], 2 * R.SURFACE_CONTAINER).weight_data
    assert conv.bytes_per_kernel == 80 * 9 * 2 and weight.size == 20 * 80 * 9 * 2
    (name, shape), = legal.inputs.items()

    def patched(blob: str, at: int, value: int) -> bytes:
        start = bytes(data).find(blobs[blob]) + at
        out = bytearray(data)
        out[start:start + 4] = value.to_bytes(4, "little")
        return bytes(out)

    field = 2 * R.OP_CONTAINER + R.ConvOp.bytes_per_kernel.offset
    with pytest.raises(EmulationError, match="bytes_per_kernel 1438"):
        emulate(patched("task-0-op_list", field, 1438), {name: np.zeros(shape, np.float32)})
    field = 2 * R.SURFACE_CONTAINER + R.ConvSurface.weight_data.offset + R.Cube.size.offset
    with pytest.raises(EmulationError, match="CONV weights of 28800 bytes: the weight cube holds 28672"):
        emulate(patched("task-0-surf_list", field, 28672), {name: np.zeros(shape, np.float32)})


# golden cases ---------------------------------------------------------------------------------------------------

EXPECTED = {"ideal": {"3501_Conv": "exact", "3502_Conv": "exact", "3503_Conv": "exact", "3504_Conv": "exact",
                      "3505_Conv": "exact", "3506_Gemm": "exact", "3507_Sigmoid": "exact", "3508_Tanh": "within",
                      "3509_AveragePool": "exact", "3510_AveragePool": "exact"}}
# hw-approx: the CMAC/CACC arithmetic sums these integers exactly; the PDP's FP17 average is within its bound
EXPECTED["hw-approx"] = {**EXPECTED["ideal"], "3509_AveragePool": "within", "3510_AveragePool": "within"}


def layout_cases() -> list[Path]:
    return sorted(LAYOUT.glob("*.onnx"))


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_layout_golden_cases_through_the_whole_path(mode, capsys):
    results = {p.stem: run_case(p, mode) for p in layout_cases()}
    with capsys.disabled():
        print(f"\nNVDLA layout cases (emulated, mode {mode}):")
        for result in results.values():
            print(f"  {result.line}")
    assert {name: r.verdict for name, r in results.items()} == EXPECTED[mode]


def test_the_expected_outputs_are_onnxruntime_s_and_the_generator_rewrites_the_same_bytes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("nvdla_layout_generate", LAYOUT / "generate.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    files = module.files()
    committed = {p.name: p.read_bytes() for p in LAYOUT.iterdir() if p.name not in ("generate.py", "README.md")
                 and p.is_file()}
    assert set(files) == set(committed)
    assert all(files[name] == committed[name] for name in files)


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: tuple[int, int, int, int],
          dilation: int, groups: int) -> np.ndarray:
    """Exact (float64 of integers) grouped convolution: the second, hand-written reference of the conv cases."""
    top, left, bottom, right = pad
    x = np.pad(x, ((0, 0), (top, bottom), (left, right)))
    k, cg, r, s = w.shape
    oh = (x.shape[1] - dilation * (r - 1) - 1) // stride + 1
    ow = (x.shape[2] - dilation * (s - 1) - 1) // stride + 1
    out = np.zeros((k, oh, ow))
    for kernel in range(k):
        g = kernel // (k // groups)
        for i in range(r):
            for j in range(s):
                window = x[g * cg:(g + 1) * cg, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                           j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
                out[kernel] += np.tensordot(w[kernel, :, i, j], window, axes=1)
        out[kernel] += b[kernel]
    return out


@pytest.mark.parametrize("case", ["3501_Conv", "3502_Conv", "3503_Conv", "3504_Conv", "3505_Conv", "3506_Gemm"])
def test_the_convolution_cases_are_exact_integer_sums_rounded_once(case):
    import onnx
    from onnx import numpy_helper

    model = onnx.load(LAYOUT / f"{case}.onnx")
    init = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    assert all(np.array_equal(v, np.round(v)) for v in init.values())  # integers: float32 sums are exact
    x = read_pgm(LAYOUT / f"{case}.pgm").astype(np.float64)[None]
    y = _conv(x, init["stem_w"], init["stem_b"], 1, (1, 1, 1, 1), 1, 1)
    node = model.graph.node[-1]
    if node.op_type == "Gemm":
        y = init["fc_w"] @ y.reshape(-1) + init["fc_b"]
    else:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        y = _conv(y, init["y_w"], init["y_b"], attrs.get("strides", [1])[0], tuple(attrs.get("pads", [0] * 4)),
                  attrs.get("dilations", [1])[0], attrs.get("group", 1))
    assert np.abs(y).max() < 2 ** 24
    assert np.array_equal(y.reshape(-1).astype(np.float16), read_dimg(LAYOUT / f"{case}.dimg"))


def test_a_tolerance_file_out_of_its_rules_is_refused(tmp_path):
    from pipeline.execute.nvdla.golden import read_tolerance

    case = tmp_path / "1_Sigmoid.onnx"
    sidecar = tmp_path / "1_Sigmoid.tolerance.json"
    assert read_tolerance(case) is None
    for doc in ({"schema_version": 1, "max_abs_error": 0.5, "why": "x"},
                {"schema_version": 1, "max_abs_error": True, "why": "x"},
                {"schema_version": 1, "max_abs_error": 1e-3}, [1]):
        sidecar.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="1_Sigmoid.tolerance.json"):
            read_tolerance(case)
    sidecar.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        read_tolerance(case)


# the planted defect ----------------------------------------------------------------------------------------------

# the ONNC cases whose convolutions read more than one channel with a kernel above 1 x 1 or more than 64 channels:
# with the old order their loadables would not reproduce the hardware model's dumps
ONNC_TOLD_APART = {"4781_Conv", "4783_Conv", "5384_Gemm", "5385_Gemm", "5922_Transpose"}


@pytest.fixture
def planted_kcrs(monkeypatch):
    import pipeline.codegen.nvdla.mapping as mapping

    monkeypatch.setattr(mapping, "direct_conv_bytes", kcrs_order)


def test_the_old_kcrs_order_planted_fails_every_case_that_tells_layouts_apart(planted_kcrs):
    results = [run_case(p, "ideal") for p in sorted(GOLDEN.glob("*/*.onnx")) + layout_cases()]
    failed = {r.case for r in results if r.verdict == "fail"}
    assert failed == ONNC_TOLD_APART | {p.stem for p in layout_cases()}
    verdicts = Counter(r.verdict for r in results if r.case not in failed)
    assert verdicts == {"exact": 20, "within": 4}  # the others keep their verdicts (1 x 1, at most 64 channels)
