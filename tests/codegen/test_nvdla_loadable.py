"""NVDLA loadables: struct sizes, round trip through the independent reader, flatc, validator findings."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import flatbuffers
import pytest

from pipeline.codegen.nvdla import firmware as fw
from pipeline.codegen.nvdla import reader as R
from pipeline.codegen.nvdla.reader import read_loadable
from pipeline.codegen.nvdla.validate import validate_loadable
from pipeline.codegen.nvdla.writer import serialize
from tests.codegen.nvdla_cases import golden_cases, loadable_of

SCHEMA = Path(fw.__file__).with_name("loadable.fbs")
CASES = golden_cases()
IDS = [p.stem for p in CASES]


def test_firmware_struct_sizes_match_interface_0_12_in_writer_and_reader():
    sizes = {"network": 40, "dependency": 36, "op container": 116, "surface container": 644, "lut": 700,
             "data cube": 32}
    assert {"network": fw.NETWORK.size, "dependency": fw.COMMON_OP.size, "op container": fw.OP_CONTAINER_SIZE,
            "surface container": fw.SURFACE_CONTAINER_SIZE, "lut": fw.LUT.size, "data cube": fw.CUBE.size} == sizes
    assert {"network": R.C.sizeof(R.Network), "dependency": R.C.sizeof(R.CommonOp),
            "op container": R.OP_CONTAINER, "surface container": R.C.sizeof(R.BdmaSurface),
            "lut": R.C.sizeof(R.Lut), "data cube": R.C.sizeof(R.Cube)} == sizes
    for op_type, (op_cls, surf_cls) in R.OP_TYPES.items():
        assert fw.OP_DESCS[op_type].size == R.C.sizeof(op_cls)
        assert fw.SURFACE_DESCS[op_type].size == R.C.sizeof(surf_cls)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_loadable_reads_back_field_for_field_and_validates(case):
    data, content, debug, legal = loadable_of(case)
    assert read_loadable(data) == content
    assert validate_loadable(data) == []
    assert all(content[name] is not None for name in ("task_list", "memory_list", "address_list", "event_list",
                                                      "blobs", "tensor_desc_list", "reloc_list", "submit_list"))
    for blob in content["blobs"]:
        if blob["interface"] == 1:
            assert blob["version"] == [0, 12, 0]
    lines = {op.line for op in legal.ops}
    assert {row["nnef_line"] for row in debug} == lines
    assert all(row["unit"] in ("CONV", "SDP", "PDP", "CDP", "EMU", "ALIAS", "FOLDED") and row["nnef"] for row in debug)


def test_firmware_blobs_decode_to_what_the_writer_meant():
    data, content, _, _ = loadable_of(next(p for p in CASES if p.stem.endswith("_Conv") and "4783" in p.stem))
    blobs = {b["name"]: b["data"] for b in content["blobs"]}
    net = R.decode(R.Network, blobs["task-0-addr0"])
    assert net.num_operations == 4 and list(net.op_head)[:3] == [-1, 0, 1]
    conv = R.decode(R.ConvOp, blobs["task-0-op_list"], 2 * R.OP_CONTAINER)
    assert (conv.kernel_width_csc, conv.kernel_height_csc, conv.kernel_channel_csc) == (2, 2, 3)
    assert (conv.in_precision, conv.out_precision, conv.conv_stride_x) == (2, 2, 1)
    # the fields the firmware writes as value - 1 (conv.c processor_conv_program), as NVIDIA's compiler fills them
    assert (conv.out_cvt.scale, conv.out_cvt.enable, conv.out_cvt.offset) == (1, 1, 0)
    assert (conv.entry_per_slice, conv.data_bank, conv.weight_bank, conv.fetch_grain, conv.release) == (1, 1, 1, 1, 9)
    sdp = R.decode(R.SdpOp, blobs["task-0-op_list"], 3 * R.OP_CONTAINER)
    assert sdp.x1_op.enable == 1 and sdp.x1_op.mode == 1  # bias per kernel
    surf = R.decode(R.SdpSurface, blobs["task-0-surf_list"], 3 * R.SURFACE_CONTAINER)
    assert (surf.dst_data.channel, surf.dst_data.height, surf.dst_data.width) == (8, 8, 1)
    assert surf.dst_data.line_stride == 32 and surf.dst_data.surf_stride == 8 * 32
    assert (surf.src_data.type, surf.src_data.address) == (2, -1)  # the pipe from the CONV
    weight = R.decode(R.ConvSurface, blobs["task-0-surf_list"], 2 * R.SURFACE_CONTAINER).weight_data
    assert weight.size == 256  # 8 x 3 x 2 x 2 halves = 192 bytes, rounded up to a multiple of 128 (D_WEIGHT_BYTES)
    deps = [R.decode(R.CommonOp, blobs["task-0-dep_graph"], 36 * i) for i in range(4)]
    assert [d.dependency_count for d in deps] == [1, 1, 3, 2]
    assert (deps[0].consumers[2].index, deps[0].consumers[2].event) == (1, 2)  # CONV -> its SDP: OP_PROGRAMMED
    assert (deps[1].fused_parent.index, deps[1].fused_parent.event) == (0, 3)  # SDP -> its CONV: OP_ENABLED
    assert (deps[1].consumers[1].index, deps[1].consumers[1].event) == (2, 1)  # data edge: OP_COMPLETED
    assert (deps[0].consumers[1].index, deps[0].consumers[1].event) == (2, 2)  # next CONV: OP_PROGRAMMED


@pytest.mark.skipif(shutil.which("flatc") is None, reason="flatc (Debian flatbuffers-compiler) not installed")
@pytest.mark.parametrize("case", [p for p in CASES if p.stem.split("_")[0] in ("4783", "5439", "5834", "5330")],
                         ids=lambda p: p.stem)
def test_flatc_reads_the_same_loadable_from_our_schema(case, tmp_path):
    data, content, _, _ = loadable_of(case)
    (tmp_path / "case.nvdla").write_bytes(data)
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", str(tmp_path),
                    str(SCHEMA), "--", str(tmp_path / "case.nvdla")], check=True, capture_output=True)
    doc = json.loads((tmp_path / "case.json").read_text())
    assert [doc["version"][k] for k in ("major", "minor", "sub_minor")] == content["version"]
    assert [m["size"] for m in doc["memory_list"]] == [m["size"] for m in content["memory_list"]]
    assert [m.get("contents", []) for m in doc["memory_list"]] == [m["contents"] for m in content["memory_list"]]
    assert [(a["mem_id"], a["size"]) for a in doc["address_list"]] == \
        [(a["mem_id"], a["size"]) for a in content["address_list"]]
    assert [t["address_list"] for t in doc["task_list"]] == [t["address_list"] for t in content["task_list"]]
    assert [t["interface"] for t in doc["task_list"]] == \
        [{1: "DLA1", 2: "EMU1"}[t["interface"]] for t in content["task_list"]]
    assert [(b["name"], bytes(b.get("data", []))) for b in doc["blobs"]] == \
        [(b["name"], b["data"]) for b in content["blobs"]]
    assert [(d["name"], d["c"], d["h"], d["w"], d["stride_1"], d["stride_2"]) for d in doc["tensor_desc_list"]] == \
        [(d["name"], d["c"], d["h"], d["w"], d["stride_1"], d["stride_2"]) for d in content["tensor_desc_list"]]
    for name in ("event_list", "reloc_list", "submit_list"):
        assert len(doc.get(name, [])) == len(content[name])


def _codes(content) -> set[str]:
    return {f.code for f in validate_loadable(serialize(content))}


def test_validator_finds_broken_references_bounds_and_versions():
    _, content, _, _ = loadable_of(CASES[0])
    broken = json.loads(json.dumps(content, default=list))
    for blob, original in zip(broken["blobs"], content["blobs"]):
        blob["data"] = original["data"]
    assert _codes(broken) == set()
    broken["address_list"][0]["size"] += 1
    assert "NVDLA-V003" in _codes(broken)
    broken["address_list"][0]["size"] -= 1
    broken["version"] = [0, 8, 0]
    assert _codes(broken) == {"NVDLA-V002"}
    broken["version"] = [0, 7, 0]
    network = next(b for b in broken["blobs"] if b["name"].endswith("addr0"))
    network["version"] = [0, 13, 0]
    assert _codes(broken) == {"NVDLA-V006"}
    network["version"] = [0, 12, 0]
    broken["submit_list"][0]["task_id"] = [7]
    assert _codes(broken) == {"NVDLA-V004"}


def test_validator_finds_misaligned_strides_and_wrong_precision():
    _, content, _, _ = loadable_of(CASES[0])
    broken = dict(content, blobs=[dict(b) for b in content["blobs"]])
    surfaces = next(b for b in broken["blobs"] if b["name"] == "task-0-surf_list")
    raw = bytearray(surfaces["data"])
    surf = R.ConvSurface.from_buffer(raw, 0)
    surf.src_data.line_stride = 40
    surfaces["data"] = bytes(raw)
    assert "NVDLA-V008" in _codes(broken)
    broken = dict(content, blobs=[dict(b) for b in content["blobs"]])
    ops = next(b for b in broken["blobs"] if b["name"] == "task-0-op_list")
    raw = bytearray(ops["data"])
    R.ConvOp.from_buffer(raw, 0).in_precision = 0
    ops["data"] = bytes(raw)
    assert _codes(broken) == {"NVDLA-V009"}


def test_validator_reports_missing_lists():
    b = flatbuffers.Builder(64)
    b.StartObject(9)
    b.Prep(1, 3)
    for v in (0, 7, 0):
        b.PrependUint8(v)
    b.PrependStructSlot(0, b.Offset(), 0)
    b.Finish(b.EndObject())
    findings = validate_loadable(bytes(b.Output()))
    assert {f.code for f in findings} == {"NVDLA-V001"} and len(findings) == 8


