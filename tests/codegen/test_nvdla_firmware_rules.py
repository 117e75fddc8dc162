"""The firmware's rules in the writer, the validator and the emulator (issue 26).

NVIDIA-compiler-style graphs, written here from the facts (nvdla/sw umd/core/src/compiler/engine-ast/
EngineNode.cpp and kmd/firmware/scheduler.c, docs/codegen-nvdla.md "The firmware's rules"): the two-pair
graph (CONV+SDP twice) and caffe's LeNet without the ReLU (CONV, SDP, PDP twice, two fully connected
layers), with NVIDIA's 20-byte bias cube; the writer emits exactly these blobs, the validator accepts
them. Planted defects, each caught by codegen.accelerators' validator with a code and by the emulator:
CONV output scale 0, a fused SDP released on OP_COMPLETED, a missing own-unit link, a count without
the fused-parent term, a bank over-allocation, an EMU operation NVIDIA's emulator lacks, and the graph
wired the old way (every operation naming the next one).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pipeline.codegen.nvdla import reader as R
from pipeline.codegen.nvdla.mapping import map_program
from pipeline.codegen.nvdla.validate import validate_loadable
from pipeline.codegen.nvdla.writer import serialize, write_loadable
from pipeline.execute.nvdla.emulator import emulate
from pipeline.execute.nvdla.scheduler import EmulationError
from pipeline.export import convert
from pipeline.split.nvdla_legalize import legalize

RNG = np.random.default_rng(26)
COMPLETED, PROGRAMMED, ENABLED = 1, 2, 3
CONV, SDP, PDP = 1, 2, 3


def _ints(*shape, scale=1.0):
    return RNG.integers(-2, 3, size=shape).astype(np.float32) * np.float32(scale)


def _build(nodes, inits, in_shape, out_shape):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    exported = convert(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, content, _ = write_loadable(map_program(legal))
    return data, content


def two_pair():
    """conv 3x3 (bias) -> conv 1x1 (bias): CONV 0, SDP 1, CONV 2, SDP 3."""
    return _build([helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
                   helper.make_node("Conv", ["a", "w2", "b2"], ["y"])],
                  {"w1": _ints(10, 3, 3, 3), "b1": _ints(10) + 1, "w2": _ints(4, 10, 1, 1), "b2": _ints(4) + 1},
                  [1, 3, 6, 6], [1, 4, 6, 6])


def lenet():
    """caffe's LeNet without the ReLU: conv, pool, conv, pool, ip1, ip2 (no softmax: a DLA task alone)."""
    return _build([helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
                   helper.make_node("MaxPool", ["c1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"]),
                   helper.make_node("MaxPool", ["c2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("Flatten", ["p2"], ["f"]),
                   helper.make_node("Gemm", ["f", "w3", "b3"], ["i1"], transB=1),
                   helper.make_node("Gemm", ["i1", "w4", "b4"], ["y"], transB=1)],
                  {"w1": _ints(20, 1, 5, 5, scale=0.25), "b1": _ints(20) + 1, "w2": _ints(50, 20, 5, 5, scale=1 / 64),
                   "b2": _ints(50) + 1, "w3": _ints(500, 800, scale=1 / 256), "b3": _ints(500) + 1,
                   "w4": _ints(10, 500, scale=1 / 64), "b4": _ints(10) + 1},
                  [1, 1, 28, 28], [1, 10])


# consumers per operation {unit slot: (index, event)}, fused parent, dependency count: NVIDIA's compiler's rules
# (resolveComputeDependencies: the next operation of the unit, OP_PROGRAMMED unless it reads the output;
# resolveDataDependencies: the reader in its unit's slot, OP_COMPLETED; the fused pair; getDependencyCount).
NVIDIA_TWO_PAIR = [
    ({CONV: (2, PROGRAMMED), SDP: (1, PROGRAMMED)}, None, 1),
    ({CONV: (2, COMPLETED), SDP: (3, PROGRAMMED)}, (0, ENABLED), 1),
    ({SDP: (3, PROGRAMMED)}, None, 3),
    ({}, (2, ENABLED), 2),
]
NVIDIA_LENET = [
    ({CONV: (3, PROGRAMMED), SDP: (1, PROGRAMMED)}, None, 1),
    ({SDP: (4, PROGRAMMED), PDP: (2, COMPLETED)}, (0, ENABLED), 1),
    ({CONV: (3, COMPLETED), PDP: (5, PROGRAMMED)}, None, 1),
    ({CONV: (6, PROGRAMMED), SDP: (4, PROGRAMMED)}, None, 3),
    ({SDP: (7, PROGRAMMED), PDP: (5, COMPLETED)}, (3, ENABLED), 2),
    ({CONV: (6, COMPLETED)}, None, 2),
    ({CONV: (8, PROGRAMMED), SDP: (7, PROGRAMMED)}, None, 3),
    ({CONV: (8, COMPLETED), SDP: (9, PROGRAMMED)}, (6, ENABLED), 2),
    ({SDP: (9, PROGRAMMED)}, None, 3),
    ({}, (8, ENABLED), 2),
]


def _deps(content):
    blob = next(b["data"] for b in content["blobs"] if b["name"] == "task-0-dep_graph")
    return [R.decode(R.CommonOp, blob, 36 * i) for i in range(len(blob) // 36)]


def _as_table(deps):
    return [({slot: (c.index, c.event) for slot, c in enumerate(d.consumers) if c.index >= 0},
             (d.fused_parent.index, d.fused_parent.event) if d.fused_parent.index >= 0 else None, d.dependency_count)
            for d in deps]


def _pack(table):
    out = bytearray()
    for i, (consumers, parent, count) in enumerate(table):
        op = R.CommonOp(index=i, op_type=0, dependency_count=count)
        for slot in range(6):
            op.consumers[slot].index, op.consumers[slot].event = consumers.get(slot, (-1, 0))
        op.fused_parent.index, op.fused_parent.event = parent or (-1, 0)
        out += bytes(op)
    return out


def _replace(content, name, mutate):
    """The loadable bytes with blob `name` changed by mutate(bytearray)."""
    changed = dict(content, blobs=[dict(b) for b in content["blobs"]])
    blob = next(b for b in changed["blobs"] if b["name"] == name)
    raw = bytearray(blob["data"])
    mutate(raw)
    blob["data"], blob["size"] = bytes(raw), len(raw)
    return serialize(changed)


def _with_graph(content, table):
    deps = _deps(content)

    def put(raw):
        packed = bytearray(_pack(table))
        for i, d in enumerate(deps):  # keep each operation's type
            R.CommonOp.from_buffer(packed, 36 * i).op_type = d.op_type
        raw[:] = packed
    return _replace(content, "task-0-dep_graph", put)


def _findings(data, code=None):
    return [f for f in validate_loadable(data) if code is None or f.code == code]


@pytest.mark.parametrize("build, table", [(two_pair, NVIDIA_TWO_PAIR), (lenet, NVIDIA_LENET)],
                         ids=["two-pair", "lenet"])
def test_the_writer_emits_the_graph_nvidia_s_compiler_writes_and_the_validator_accepts_it(build, table):
    data, content = build()
    assert _as_table(_deps(content)) == table
    assert _findings(data) == []
    assert _findings(_with_graph(content, table)) == []


def test_nvidia_s_20_byte_bias_cube_is_accepted():
    data, content = lenet()

    def shrink(raw):
        for i in (1, 4, 7, 9):
            surf = R.SdpSurface.from_buffer(raw, i * R.SURFACE_CONTAINER)
            surf.x1_data.size = 2 * surf.x1_data.channel  # one half per kernel, as NVIDIA's compiler writes a bias
            surf.x1_data.line_stride = surf.x1_data.surf_stride = 0
    changed = _replace(content, "task-0-surf_list", shrink)
    assert _findings(changed) == []
    x = _ints(1, 1, 28, 28)
    assert np.array_equal(emulate(changed, {"x": x})["y"], emulate(data, {"x": x})["y"])


def _op(content, index, cls):
    def mutate(change):
        def apply(raw):
            change(cls.from_buffer(raw, index * (36 if cls is R.CommonOp else R.OP_CONTAINER)))
        return apply
    return mutate


def test_conv_output_scale_0_is_refused_like_the_firmware_refuses_it():
    data, content = two_pair()
    planted = _replace(content, "task-0-op_list", _op(content, 0, R.ConvOp)(lambda op: setattr(op.out_cvt, "scale", 0)))
    found = _findings(planted)
    assert {f.code for f in found} == {"NVDLA-V016"}
    assert "conv.c processor_conv_program" in found[0].message and "scale 0" in found[0].message


def test_a_fused_sdp_released_on_op_completed_is_found_and_deadlocks_the_emulator():
    data, content = two_pair()
    table = [list(row) for row in NVIDIA_TWO_PAIR]
    table[0] = ({CONV: (2, PROGRAMMED), SDP: (1, COMPLETED)}, None, 1)
    planted = _with_graph(content, table)
    found = _findings(planted)
    assert {f.code for f in found} == {"NVDLA-V012"}
    assert any("OP_PROGRAMMED" in f.message and "deadlock" in f.message for f in found)
    with pytest.raises(EmulationError) as caught:
        emulate(planted, {"x": _ints(1, 3, 6, 6)})
    assert caught.value.code == "NVDLA-E001"
    assert "CONV op 0: programmed, dependency count 1: waits for OP_ENABLED of SDP op 1" in caught.value.message
    assert "SDP op 1: programmed, dependency count 1: waits for OP_COMPLETED of CONV op 0" in caught.value.message


def test_a_missing_own_unit_link_is_found_and_leaves_the_operation_unprogrammed():
    data, content = two_pair()
    table = [list(row) for row in NVIDIA_TWO_PAIR]
    table[0] = ({SDP: (1, PROGRAMMED)}, None, 1)   # CONV 0 no longer names CONV 2
    table[2] = ({SDP: (3, PROGRAMMED)}, None, 2)   # and CONV 2's count says so
    planted = _with_graph(content, table)
    found = _findings(planted, "NVDLA-V012")
    assert any("CONV queue" in f.where and "[2] never dequeued" in f.message for f in found)
    with pytest.raises(EmulationError) as caught:
        emulate(planted, {"x": _ints(1, 3, 6, 6)})
    assert caught.value.code == "NVDLA-E001" and "CONV op 2: never dequeued" in caught.value.message


def test_a_count_without_the_fused_parent_term_is_found():
    data, content = two_pair()
    table = [list(row) for row in NVIDIA_TWO_PAIR]
    table[2] = ({SDP: (3, PROGRAMMED)}, None, 2)
    planted = _with_graph(content, table)
    found = _findings(planted)
    assert [(f.code, f.where) for f in found] == [("NVDLA-V012", "task 0 op 2")]
    assert "2 consumer entries and 1 fused-parent entry" in found[0].message
    with pytest.raises(EmulationError) as caught:
        emulate(planted, {"x": _ints(1, 3, 6, 6)})
    assert caught.value.code == "NVDLA-E003"


def test_a_bank_over_allocation_is_found():
    data, content = two_pair()

    def banks(op):
        op.data_bank, op.weight_bank = 9, 8
    found = _findings(_replace(content, "task-0-op_list", _op(content, 0, R.ConvOp)(banks)))
    assert {f.code for f in found} == {"NVDLA-V014"} and "exceed the 16 banks" in found[0].message


def test_fields_the_firmware_writes_as_value_minus_one_must_be_at_least_one():
    data, content = two_pair()

    def zero(op):
        op.entry_per_slice, op.fetch_grain, op.release = 0, 0, 0
    found = _findings(_replace(content, "task-0-op_list", _op(content, 2, R.ConvOp)(zero)))
    assert {f.code for f in found} == {"NVDLA-V013", "NVDLA-V014"}
    assert sum(f.code == "NVDLA-V013" for f in found) == 3


def test_an_emu_operation_nvidia_s_emulator_lacks_is_found():
    data, content = _build([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {}, [1, 10], [1, 10])
    assert _findings(data) == []

    def op_type(raw):
        R.EmuCommon.from_buffer(raw, 0).op_type = 2
    planted = _replace(content, "task-0-op_list", op_type)
    found = _findings(planted)
    assert {f.code for f in found} == {"NVDLA-V015"} and "power (0) and softmax (1) only" in found[0].message
    with pytest.raises(EmulationError):
        emulate(planted, {"x": _ints(1, 10)})


def test_the_graph_wired_the_old_way_is_found_and_the_emulator_reports_the_deadlock():
    data, content = lenet()
    deps = _deps(content)
    old = [({deps[i + 1].op_type: (i + 1, COMPLETED)} if i + 1 < len(deps) else {},
            (i - 1, 0) if deps[i].op_type == SDP and deps[i - 1].op_type == CONV else None, 1 if i else 0)
           for i in range(len(deps))]
    planted = _with_graph(content, old)
    found = _findings(planted, "NVDLA-V012")
    assert any("never dequeued" in f.message for f in found)
    assert any("OP_PROGRAMMED" in f.message for f in found)
    with pytest.raises(EmulationError) as caught:
        emulate(planted, {"x": _ints(1, 1, 28, 28)})
    assert caught.value.code == "NVDLA-E001" and "stalls after 0 of 10 operations" in caught.value.message


def test_a_dependency_graph_the_runtime_does_not_reload_is_found():
    """NVIDIA's runtime reloads memories whose content name holds "dep_graph" before each submission; the firmware
    writes the decremented counts back, so any other name stalls the second submission (seen on the harness)."""
    data, content = two_pair()
    renamed = dict(content, blobs=[dict(b) for b in content["blobs"]],
                   memory_list=[dict(m) for m in content["memory_list"]])
    for blob in renamed["blobs"]:
        if blob["name"] == "task-0-dep_graph":
            blob["name"] = "task-0-deps"
    for memory in renamed["memory_list"]:
        memory["contents"] = ["task-0-deps" if n == "task-0-dep_graph" else n for n in memory["contents"]]
    found = _findings(serialize(renamed))
    assert {f.code for f in found} == {"NVDLA-V012"} and "submitInternal" in found[0].message


def test_an_operation_running_before_what_it_reads_is_written_is_found_by_both():
    """PDP 2 reads SDP 1's output; without SDP 1's OP_COMPLETED entry nothing orders them (PDP 2 waits only for
    CONV 0 being programmed here): the validator finds the missing edge, the emulator runs PDP 2 too early."""
    data, content = lenet()
    table = [list(row) for row in NVIDIA_LENET]
    table[1] = ({SDP: (4, PROGRAMMED)}, (0, ENABLED), 1)
    table[0] = ({CONV: (3, PROGRAMMED), SDP: (1, PROGRAMMED), PDP: (2, PROGRAMMED)}, None, 1)
    planted = _with_graph(content, table)
    found = _findings(planted, "NVDLA-V012")
    assert any(f.where == "task 0 op 2" and "nothing orders it after op 1 completes" in f.message for f in found)
    with pytest.raises(EmulationError) as caught:
        emulate(planted, {"x": _ints(1, 1, 28, 28)})
    assert caught.value.code == "NVDLA-E002" and "PDP op 2 runs before SDP op 1 wrote" in caught.value.message
