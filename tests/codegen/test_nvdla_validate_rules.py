"""Issue 42: every NVDLA-V rule of the structural validator (pipeline/codegen/nvdla/validate.py) planted in a
loadable, at its boundary: the last accepted value passes the rule, the first refused one is found with its code.

The loadables are the writer's own, accepted as written (tests/codegen/test_nvdla_firmware_rules.py): the two-pair
graph (CONV, SDP, CONV, SDP), caffe's LeNet (CONV, SDP, PDP twice, then the fully connected pairs, with NVIDIA's
per-kernel bias cube) and the ONNC LRN golden case (CONV, SDP, CDP with its LUT). Each test changes one field
and asks for findings of the rule's code only (a field out of range can break other rules as well).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from pipeline.codegen.nvdla import reader as R
from pipeline.codegen.nvdla.validate import FINDINGS, validate_loadable
from pipeline.codegen.nvdla.writer import serialize
from tests.codegen.nvdla_cases import golden_cases, loadable_of
from tests.codegen.test_nvdla_firmware_rules import lenet, two_pair

CONV_OP, SDP_OP, PDP_OP, CDP_OP = 0, 1, 2, 2      # two-pair's CONV and SDP, LeNet's first PDP, LRN's CDP


def _lrn() -> dict[str, Any]:
    return loadable_of(next(p for p in golden_cases() if p.stem.endswith("_LRN")))[1]


def _copy(content: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(content)


def _messages(content: dict[str, Any], code: str) -> list[str]:
    return [f"{f.where}: {f.message}" for f in validate_loadable(serialize(content)) if f.code == code]


def _blob(content: dict[str, Any], name: str, change: Callable[[bytearray], None]) -> dict[str, Any]:
    """A copy of `content` with blob `name` changed in place by change(bytearray)."""
    changed = _copy(content)
    blob = next(b for b in changed["blobs"] if b["name"] == name)
    raw = bytearray(blob["data"])
    change(raw)
    blob["data"], blob["size"] = bytes(raw), len(raw)
    return changed


def _field(content: dict[str, Any], blob: str, cls: type, index: int, path: str, value: int) -> dict[str, Any]:
    """`content` with field `path` (dotted) of descriptor `index` of type `cls` in `blob` set to `value`."""
    stride = {R.CommonOp: 36, R.Network: 0}.get(cls, R.OP_CONTAINER if "op_list" in blob else R.SURFACE_CONTAINER)

    def change(raw: bytearray) -> None:
        target = cls.from_buffer(raw, index * stride)
        *parents, name = path.split(".")
        for part in parents:
            target = getattr(target, part)
        setattr(target, name, value)
    return _blob(content, blob, change)


@pytest.fixture(scope="module")
def pair() -> dict[str, Any]:
    return two_pair()[1]


@pytest.fixture(scope="module")
def net() -> dict[str, Any]:
    return lenet()[1]


@pytest.fixture(scope="module")
def lrn() -> dict[str, Any]:
    return _lrn()


def test_the_three_loadables_are_accepted_as_written(pair, net, lrn) -> None:  # type: ignore[no-untyped-def]
    for content in (pair, net, lrn):
        assert validate_loadable(serialize(content)) == []
    assert set(FINDINGS) == {f"NVDLA-V{n:03d}" for n in range(1, 17)}


# ---------------------------------------------------------------------------------- V003, V004, V005, V006, V011

def test_v003_an_address_naming_a_missing_memory_or_past_its_end(pair) -> None:  # type: ignore[no-untyped-def]
    changed = _copy(pair)
    changed["address_list"][3]["mem_id"] = len(changed["memory_list"])
    assert any("memory 12 missing" in m for m in _messages(changed, "NVDLA-V003"))
    changed = _copy(pair)
    changed["address_list"][3]["offset"] = 1          # 1 + 640 > 640
    assert _messages(changed, "NVDLA-V003") == ["address_list[3]: [1, +640) outside memory 3 of 640 bytes"]
    changed["memory_list"][3]["size"] = 641           # the boundary: it fits exactly
    assert _messages(changed, "NVDLA-V003") == []


def test_v004_a_missing_event_task_interface_or_address_index(pair) -> None:  # type: ignore[no-untyped-def]
    changed = _copy(pair)
    changed["task_list"][0]["pre_actions"] = [5]
    assert _messages(changed, "NVDLA-V004") == ["task 0: event 5 missing"]
    changed["event_list"] = [{"id": 5, "type": 0, "target": 0, "val": 0, "op": 0}]
    assert _messages(changed, "NVDLA-V004") == []
    changed["task_list"][0]["post_actions"] = [6]
    assert _messages(changed, "NVDLA-V004") == ["task 0: event 6 missing"]
    changed = _copy(pair)
    changed["task_list"][0]["interface"] = 3
    assert _messages(changed, "NVDLA-V004") == ["task 0: task interface 3 (DLA1 1 or EMU1 2)"]
    changed = _copy(pair)
    changed["task_list"][0]["address_list"][-1] = len(changed["address_list"])
    assert _messages(changed, "NVDLA-V004") == ["task 0: address list index beyond the address list"]
    changed["task_list"][0]["address_list"][-1] = len(changed["address_list"]) - 1
    assert _messages(changed, "NVDLA-V004") == []
    changed = _copy(pair)
    changed["submit_list"][0]["task_id"] = [1]
    assert _messages(changed, "NVDLA-V004") == ["submit_list[0]: task 1 missing"]


def test_v005_a_content_blob_missing_or_not_fitting_its_memory(pair) -> None:  # type: ignore[no-untyped-def]
    changed = _copy(pair)
    changed["memory_list"][3]["contents"] = ["ghost"]
    assert _messages(changed, "NVDLA-V005") == ["memory_list[3]: content blob 'ghost' missing"]
    changed = _copy(pair)
    changed["memory_list"][3]["offsets"] = [1]         # 1 + 640 bytes in a memory of 640
    assert _messages(changed, "NVDLA-V005") == ["memory_list[3]: blob 'op0-weight' does not fit"]
    changed["memory_list"][3]["size"] = 641
    assert _messages(changed, "NVDLA-V005") == []


def test_v006_a_blob_size_field_other_than_its_length(pair) -> None:  # type: ignore[no-untyped-def]
    changed = _copy(pair)
    blob = next(b for b in changed["blobs"] if b["name"] == "op0-bias")
    blob["size"] += 1
    assert _messages(changed, "NVDLA-V006") == ["blob 'op0-bias': size field 33 for 32 bytes"]


def test_v011_a_tensor_descriptor_outside_its_memory(pair) -> None:  # type: ignore[no-untyped-def]
    changed = _copy(pair)
    changed["tensor_desc_list"][0]["offset"] = 1       # 1 + 1152 > 1152
    assert _messages(changed, "NVDLA-V011") == ["tensor 'x': outside its memory"]
    changed["memory_list"][1]["size"] = 1153
    changed["address_list"][1]["size"] = 1152
    assert _messages(changed, "NVDLA-V011") == []
    changed = _copy(pair)
    changed["tensor_desc_list"][1]["mem_id"] = len(changed["memory_list"])
    assert _messages(changed, "NVDLA-V011") == ["tensor 'y': outside its memory"]


# ------------------------------------------------------------------------------------------------------- V007

def _address_of(content: dict[str, Any], task_index: int) -> dict[str, Any]:
    return content["address_list"][content["task_list"][0]["address_list"][task_index]]


def test_v007_descriptor_blobs_too_short_for_the_operations(pair) -> None:  # type: ignore[no-untyped-def]
    net = R.decode(R.Network, next(b["data"] for b in pair["blobs"] if b["name"] == "task-0-addr0"))
    n = net.num_operations
    for index, need in ((net.dependency_graph_index, 36 * n), (net.operation_desc_index, R.OP_CONTAINER * n),
                        (net.surface_desc_index, R.SURFACE_CONTAINER * n)):
        changed = _copy(pair)
        _address_of(changed, index)["size"] = need - 1    # each blob alone one byte short
        assert _messages(changed, "NVDLA-V007") == [f"task 0: {n} operations do not fit the descriptor blobs"]
        _address_of(changed, index)["size"] = need
        assert _messages(changed, "NVDLA-V007") == []
    changed = _copy(pair)
    _address_of(changed, 0)["size"] = R.C.sizeof(R.Network) - 1
    assert _messages(changed, "NVDLA-V007") == ["task 0: network descriptor missing or short"]


def test_v007_the_network_s_indices_counts_and_heads(pair) -> None:  # type: ignore[no-untyped-def]
    alist = len(pair["task_list"][0]["address_list"])
    planted = _field(pair, "task-0-addr0", R.Network, 0, "operation_desc_index", alist)
    assert _messages(planted, "NVDLA-V007") == [f"task 0: operation_desc_index {alist} outside the task's address list"]
    planted = _field(pair, "task-0-addr0", R.Network, 0, "num_addresses", alist + 1)
    assert _messages(planted, "NVDLA-V007") == [f"task 0: num_addresses {alist + 1}, the task's address list has {alist}"]

    def head(raw: bytearray) -> None:
        R.Network.from_buffer(raw, 0).op_head[3] = 0        # PDP (unit 3): none in the two-pair graph
    assert _messages(_blob(pair, "task-0-addr0", head), "NVDLA-V007") == [
        "task 0: op_head[3] = 0, the first operation of that unit is -1"]
    planted = _field(pair, "task-0-dep_graph", R.CommonOp, 2, "index", 3)
    assert "task 0 op 2: index field 3" in _messages(planted, "NVDLA-V007")
    planted = _field(pair, "task-0-dep_graph", R.CommonOp, 1, "op_type", 9)
    assert "task 0 op 1: operation type 9 not emitted by this writer (BDMA) or unknown" in _messages(planted, "NVDLA-V007")


def test_v007_a_lut_lookup_without_a_lut(pair) -> None:  # type: ignore[no-untyped-def]
    def lookup(raw: bytearray) -> None:
        op = R.SdpOp.from_buffer(raw, SDP_OP * R.OP_CONTAINER)
        op.y_op.enable, op.y_op.act, op.lut_index = 1, 2, -1
    assert "task 0 op 1: the Y unit looks up a table but lut_index is -1" in \
        _messages(_blob(pair, "task-0-op_list", lookup), "NVDLA-V007")
    planted = _field(pair, "task-0-op_list", R.SdpOp, SDP_OP, "lut_index", 0)    # no LUT in this network
    assert _messages(planted, "NVDLA-V007") == ["task 0 op 1: LUT index 0 of 0"]


def test_v007_the_cdp_lut_index_and_the_lut_blob(lrn) -> None:  # type: ignore[no-untyped-def]
    for index in (1, -1):
        planted = _field(lrn, "task-0-op_list", R.CdpOp, CDP_OP, "lut_index", index)
        assert f"task 0 op 2: LUT index {index} of 1" in _messages(planted, "NVDLA-V007")
    net = R.decode(R.Network, next(b["data"] for b in lrn["blobs"] if b["name"] == "task-0-addr0"))
    changed = _copy(lrn)
    _address_of(changed, net.lut_data_index)["size"] = 699
    assert _messages(changed, "NVDLA-V007") == ["task 0: 1 LUTs do not fit the LUT blob"]


# ------------------------------------------------------------------------------------------------------- V008

def _surface(content: dict[str, Any], cls: type, index: int, cube: str, **fields: int) -> dict[str, Any]:
    def change(raw: bytearray) -> None:
        target = getattr(cls.from_buffer(raw, index * R.SURFACE_CONTAINER), cube)
        for name, value in fields.items():
            setattr(target, name, value)
    return _blob(content, "task-0-surf_list", change)


def _cube(content: dict[str, Any], cls: type, index: int, cube: str) -> Any:
    data = next(b["data"] for b in content["blobs"] if b["name"] == "task-0-surf_list")
    return getattr(R.decode(cls, data, index * R.SURFACE_CONTAINER), cube)


def test_v008_an_offset_not_a_multiple_of_the_atom(pair) -> None:  # type: ignore[no-untyped-def]
    cube = _cube(pair, R.SdpSurface, SDP_OP, "dst_data")
    for offset in (16, 32, 48):     # inside the address, the size shortened to match (also found, V008 too)
        found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", offset=offset, size=cube.size - 64),
                          "NVDLA-V008")
        atom = f"task 0 op 1 dst_data: offset {offset} not a multiple of the 32-byte atom"
        assert (atom in found) == (offset % 32 != 0), found


def test_v008_a_cube_beyond_its_address_or_naming_none(pair) -> None:  # type: ignore[no-untyped-def]
    cube = _cube(pair, R.SdpSurface, SDP_OP, "dst_data")
    address = _address_of(pair, cube.address)["size"]
    assert cube.offset + cube.size == address                       # the boundary, accepted
    found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", size=cube.size + 1), "NVDLA-V008")
    assert found == [f"task 0 op 1 dst_data: [0, +{cube.size + 1}) beyond its address of {address} bytes"]
    alist = len(pair["task_list"][0]["address_list"])
    found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", address=alist), "NVDLA-V008")
    assert found == [f"task 0 op 1 dst_data: address index {alist} outside the task's {alist} addresses"]


def test_v008_strides_smaller_than_the_cube_and_a_size_below_its_span(pair) -> None:  # type: ignore[no-untyped-def]
    cube = _cube(pair, R.SdpSurface, SDP_OP, "dst_data")
    assert cube.line_stride == cube.width * 32 and cube.surf_stride == cube.height * cube.line_stride  # packed
    for fields in ({"line_stride": cube.line_stride - 32}, {"surf_stride": cube.surf_stride - 32}):
        found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", **fields), "NVDLA-V008")
        assert "task 0 op 1 dst_data: strides smaller than the cube" in found
    found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", size=cube.size - 1), "NVDLA-V008")
    assert found == [f"task 0 op 1 dst_data: size {cube.size - 1} below the {cube.size} bytes its surfaces and rows span"]
    found = _messages(_surface(pair, R.SdpSurface, SDP_OP, "dst_data", line_stride=cube.line_stride + 8), "NVDLA-V008")
    assert f"task 0 op 1 dst_data: strides {cube.line_stride + 8}/{cube.surf_stride} not multiples of 32" in found


def test_v008_a_per_kernel_sdp_operand_below_one_value_per_channel(net) -> None:  # type: ignore[no-untyped-def]
    cube = _cube(net, R.SdpSurface, 1, "x1_data")
    accepted = _surface(net, R.SdpSurface, 1, "x1_data", size=2 * cube.channel, line_stride=0, surf_stride=0)
    assert _messages(accepted, "NVDLA-V008") == []               # NVIDIA's 20-byte bias cube
    short = _surface(net, R.SdpSurface, 1, "x1_data", size=2 * cube.channel - 1, line_stride=0, surf_stride=0)
    assert _messages(short, "NVDLA-V008") == [
        f"task 0 op 1 x1_data: size {2 * cube.channel - 1} below the {2 * cube.channel} bytes of one value per channel"]


# ------------------------------------------------------------------------------------------------- V009, V010

@pytest.mark.parametrize("name, field, low, high", [
    ("kernel width", "kernel_width_csc", 1, 32), ("kernel height", "kernel_height_csc", 1, 32),
    ("stride x", "conv_stride_x", 1, 8), ("stride y", "conv_stride_y", 1, 8),
    ("pad left", "pad_x_left", 0, 31), ("pad right", "pad_x_right", 0, 31),
    ("pad top", "pad_y_top", 0, 31), ("pad bottom", "pad_y_bottom", 0, 31)])
def test_v010_conv_limits_at_their_boundaries(pair, name, field, low, high) -> None:  # type: ignore[no-untyped-def]
    for value in (low, high):
        assert _messages(_field(pair, "task-0-op_list", R.ConvOp, CONV_OP, field, value), "NVDLA-V010") == []
    for value in ([low - 1] if low else []) + [high + 1]:
        assert _messages(_field(pair, "task-0-op_list", R.ConvOp, CONV_OP, field, value), "NVDLA-V010") == [
            f"task 0 op 0: CONV {name} {value} outside {low}-{high}"]


@pytest.mark.parametrize("name, field, low, high, stored", [
    ("pool width", "pool_width", 1, 8, -1), ("pool height", "pool_height", 1, 8, -1),
    ("stride x", "stride_x", 1, 8, 0), ("stride y", "stride_y", 1, 8, 0),
    ("pad left", "pad_left", 0, 7, 0), ("pad right", "pad_right", 0, 7, 0),
    ("pad top", "pad_top", 0, 7, 0), ("pad bottom", "pad_bottom", 0, 7, 0)])
def test_v010_pdp_limits_at_their_boundaries(net, name, field, low, high, stored) -> None:  # type: ignore[no-untyped-def]
    """The pool size is stored as size - 1 (the firmware's register field)."""
    for value in (low, high):
        assert _messages(_field(net, "task-0-op_list", R.PdpOp, PDP_OP, field, value + stored), "NVDLA-V010") == []
    for value in ([low - 1] if low + stored > 0 else []) + [high + 1]:
        assert _messages(_field(net, "task-0-op_list", R.PdpOp, PDP_OP, field, value + stored), "NVDLA-V010") == [
            f"task 0 op 2: PDP {name} {value} outside {low}-{high}"]


def test_v010_the_cdp_local_size(lrn) -> None:  # type: ignore[no-untyped-def]
    for size in range(0, 12):
        found = _messages(_field(lrn, "task-0-op_list", R.CdpOp, CDP_OP, "local_size", size), "NVDLA-V010")
        assert found == ([] if size in (3, 5, 7, 9) else [f"task 0 op 2: CDP local size {size} not 3, 5, 7 or 9"])


@pytest.mark.parametrize("fixture, cls, index, fields, text", [
    ("pair", R.ConvOp, CONV_OP, ("out_precision",), "CONV precision 2/0"),
    ("pair", R.SdpOp, SDP_OP, ("src_precision",), "SDP precision 0/2"),
    ("pair", R.SdpOp, SDP_OP, ("dst_precision",), "SDP precision 2/0"),
    ("net", R.PdpOp, PDP_OP, ("precision",), "PDP precision 0"),
    ("lrn", R.CdpOp, CDP_OP, ("in_precision",), "CDP precision 0/2"),
    ("lrn", R.CdpOp, CDP_OP, ("out_precision",), "CDP precision 2/0")])
def test_v009_a_precision_other_than_fp16_per_unit(request, fixture, cls, index, fields, text) -> None:  # type: ignore[no-untyped-def]
    planted = request.getfixturevalue(fixture)
    for name in fields:
        planted = _field(planted, "task-0-op_list", cls, index, name, 0)
    assert [m.split(": ", 1)[1] for m in _messages(planted, "NVDLA-V009")] == [text]


def test_v007_a_context_blob_not_at_offset_0_of_its_memory(pair) -> None:  # type: ignore[no-untyped-def]
    """The firmware reads the network descriptor at offset 0 of its memory whatever the address entry says."""
    changed = _copy(pair)
    address = _address_of(changed, 0)
    memory = changed["memory_list"][address["mem_id"]]
    memory["size"] += 32
    memory["offsets"] = [32]
    address["offset"] = 32
    found = _messages(changed, "NVDLA-V007")
    assert len(found) == 1 and found[0].startswith("task 0: network blob at offset 32 of its memory: the firmware "
                                                   "reads it at offset 0")
