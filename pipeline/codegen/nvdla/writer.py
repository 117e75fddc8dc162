"""The NVDLA loadable writer: a Program -> flatbuffer bytes (our schema loadable.fbs), plus the debug table.

The loadable always carries all eight lists (task, memory, address, event, blobs, tensor
descriptors, relocations, submit), even empty: NVIDIA's reader dereferences each. The address
list is laid out as NVIDIA's compiler lays it out (umd/core/src/compiler/Compiler.cpp, the comment
above `TaskAddressList`): entry 0 a zero page, entries 1..N the data memories (every feature
surface and constant, shared by all tasks), then each task's context; a task's address list is
[its network descriptor, 1..N, its other context blobs], so a data cube's `address` is the same
index in every task and in the global list. DLA tasks carry the firmware blobs (network,
dependency graph, operations, surfaces, LUTs) of interface 0.12.x (firmware.py), their
dependency graph from graph.py; EMU tasks the three blobs of emu_interface.h (network descriptor,
operation container, buffer descriptors). Blob names follow NVIDIA's ("task-0-dep_graph": the
runtime reloads memories whose content name contains "dep_graph" before every submission, since
the firmware writes the decremented dependency counts back). `write_loadable` also returns the
intended content as plain data, which the round-trip test compares with what the independent
reader finds in the bytes.
"""

from __future__ import annotations

from typing import Any

import flatbuffers

from pipeline.codegen.nvdla import firmware as fw
from pipeline.codegen.nvdla.graph import dependency_graph
from pipeline.codegen.nvdla.mapping import Memory, Program, UnitOp

LOADABLE_VERSION = (0, 7, 0)
IFACE_NONE, IFACE_DLA1, IFACE_EMU1 = 0, 1, 2
# umd/core/include/nvdla/c/NvDlaLoadable.h NVDLA_LOADABLE_SUB_INTERFACE_*
SUB_NONE, SUB_ADDR0, SUB_DEPS, SUB_OPS, SUB_SURFS, SUB_LUTS = range(6)
DLA_BLOBS = (("addr0", SUB_ADDR0), ("dep_graph", SUB_DEPS), ("op_list", SUB_OPS), ("surf_list", SUB_SURFS),
             ("lut_list", SUB_LUTS))
EMU_BLOBS = (("addr0", SUB_ADDR0), ("op_list", SUB_OPS), ("op_buf_list", SUB_SURFS))
ZERO_PAGE = "zero-page"
UNIT_NAMES = {fw.OP_CONV: "CONV", fw.OP_SDP: "SDP", fw.OP_PDP: "PDP", fw.OP_CDP: "CDP", fw.OP_RUBIK: "RUBIK",
              -1: "EMU"}


def _resolve(cube: dict[str, Any], positions: dict[str, int]) -> dict[str, Any]:
    if isinstance(cube.get("address"), str):
        return dict(cube, address=positions[cube["address"]])
    return cube


def _dla_blobs(ops: list[UnitOp], positions: dict[str, int], context: int) -> dict[str, bytes]:
    """The five firmware blobs of one DLA task; `context` is the task-list index of its dependency graph."""
    heads = [-1] * fw.OP_NUM
    for i, op in enumerate(ops):
        if heads[op.unit] < 0:
            heads[op.unit] = i
    deps_graph = dependency_graph([op.unit for op in ops], [op.reads for op in ops], [op.writes for op in ops],
                                  [op.fused_parent for op in ops])
    deps, descs, surfaces, luts = b"", b"", b"", b""
    tables: dict[bytes, int] = {}  # one table per distinct content: the SDP's two groups share it (sdp.c is_ready)
    for i, op in enumerate(ops):
        desc = dict(op.op_desc)
        if op.lut is not None:
            table = fw.LUT.pack(op.lut)
            if table not in tables:
                tables[table] = len(tables)
                luts += table
            desc["lut_index"] = tables[table]
        parent_index, parent_event = deps_graph.fused_parent[i]
        deps += fw.COMMON_OP.pack({
            "index": i, "op_type": op.unit, "dependency_count": deps_graph.counts[i],
            "consumers": [{"index": index, "event": event} for index, event in deps_graph.consumers[i]],
            "fused_parent": {"index": parent_index, "event": parent_event}})
        descs += fw.op_container(op.unit, desc)
        surfaces += fw.surface_container(op.unit, {k: _resolve(v, positions) for k, v in op.surface.items()})
    network = fw.NETWORK.pack({"operation_desc_index": context + 1, "surface_desc_index": context + 2,
                               "dependency_graph_index": context, "lut_data_index": context + 3 if luts else -1,
                               "roi_array_index": -1, "surface_index": -1, "stat_list_index": -1, "op_head": heads,
                               "num_rois": 1, "num_operations": len(ops), "num_luts": len(luts) // fw.LUT.size,
                               "num_addresses": context + (4 if luts else 3), "input_layer": 0})
    return {"addr0": network, "dep_graph": deps, "op_list": descs, "surf_list": surfaces, "lut_list": luts}


def _emu_blobs(op: UnitOp, positions: dict[str, int], context: int) -> dict[str, bytes]:
    """The blobs of one EMU task (one operation, as NVIDIA's compiler emits them): network descriptor, operation
    container, buffer descriptors."""
    network = fw.EMU_NETWORK.pack({"operation_desc_index": context, "operation_buffer_desc_index": context + 1,
                                   "num_operations": 1})
    container = fw.EMU_SOFTMAX_OP.pack(op.op_desc).ljust(fw.EMU_OP_CONTAINER_SIZE, b"\0")
    buffers = fw.EMU_BUFFERS.pack({name: dict(buf, addressIndex=positions[buf["addressIndex"]])
                                   for name, buf in op.surface.items()})
    return {"addr0": network, "op_list": container, "op_buf_list": buffers}


def build_content(program: Program) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The loadable as plain data (lists of dicts in schema field names) and the debug table rows."""
    data = [Memory(ZERO_PAGE, 4096, 1)] + list(program.memories)
    positions = {m.name: i for i, m in enumerate(data)}  # data address i = memory i, in every task
    memories: list[Memory] = list(data)
    task_lists: list[list[str]] = []
    debug: list[dict[str, Any]] = []
    for t, task in enumerate(program.tasks):
        context = len(data)  # a task's context blobs follow the shared data addresses in its list
        if task.interface == IFACE_DLA1:
            parts = _dla_blobs(task.ops, positions, context)
            kinds = [(name, sub) for name, sub in DLA_BLOBS if parts[name]]
        else:
            parts = _emu_blobs(task.ops[0], positions, context)
            kinds = list(EMU_BLOBS)
        names = []
        for name, sub in kinds:
            blob = f"task-{t}-{name}"
            memories.append(Memory(blob, max(len(parts[name]), 4), 3, parts[name], interface=task.interface,
                                   sub_interface=sub))
            names.append(blob)
        task_lists.append([names[0]] + [m.name for m in data[1:]] + names[1:])
        for i, op in enumerate(task.ops):
            debug.append({"task": t, "operation": i, "unit": UNIT_NAMES[op.unit], "nnef_line": op.legal.line,
                          "nnef": op.legal.text, "rules": list(op.legal.rules)})
    for op in program.aliases:  # memory only: traced, but no task runs them
        debug.append({"task": -1, "operation": -1, "unit": "FOLDED" if op.attrs.get("folded") else "ALIAS",
                      "nnef_line": op.line, "nnef": op.text,
                      "rules": list(op.rules)})
    mem_ids = {m.name: i for i, m in enumerate(memories)}
    memory_list, address_list, tensor_descs, blobs = [], [], [], []
    for i, m in enumerate(memories):
        tensor_id = 0
        if m.flags & 12:
            s = program.tensors[m.name]
            tensor_id = len(tensor_descs)
            tensor_descs.append({"name": m.name, "id": tensor_id, "mem_id": i, "size": s.size, "offset": 0,
                                 "data_format": 1, "data_type": 2, "data_category": 2, "pixel_format": 36,
                                 "pixel_mapping": 0, "n": 1, "c": s.c, "h": s.h, "w": s.w, "stride_0": 2,
                                 "stride_1": s.line_stride, "stride_2": s.surf_stride, "stride_3": 0,
                                 "stride_4": 0, "stride_5": 0, "stride_6": 0, "stride_7": 0})
        memory_list.append({"id": i, "domain": 0, "flags": m.flags, "size": m.size, "alignment": 4096,
                            "contents": [m.name] if m.content is not None else [],
                            "offsets": [0] if m.content is not None else [], "bind_id": m.bind_id,
                            "tensor_desc_id": tensor_id})
        address_list.append({"id": i, "mem_id": i, "offset": 0, "size": m.size})
        if m.content is not None:
            version = {IFACE_DLA1: fw.FIRMWARE_VERSION, IFACE_EMU1: fw.EMU_VERSION}.get(m.interface, (0, 0, 0))
            blobs.append({"name": m.name, "size": len(m.content), "interface": m.interface,
                          "sub_interface": m.sub_interface, "version": list(version), "data": m.content})
    events, tasks = [], []
    for t, names in enumerate(task_lists):
        pre = [t - 1] if t else []
        post = [t] if t + 1 < len(task_lists) else []
        if post:
            events.append({"id": t, "type": 0, "target": 0, "val": 1, "op": 1})
        interface = program.tasks[t].interface
        tasks.append({"id": t, "interface": interface, "instance": -1, "address_list": [mem_ids[n] for n in names],
                      "pre_actions": pre, "post_actions": post})
    content = {"version": list(LOADABLE_VERSION), "task_list": tasks, "memory_list": memory_list,
               "address_list": address_list, "event_list": events, "blobs": blobs,
               "tensor_desc_list": tensor_descs, "reloc_list": [],
               "submit_list": [{"id": t["id"], "task_id": [t["id"]]} for t in tasks]}
    return content, debug


# Field order per table (schema slot order) and the builder's scalar adders.
_SCALAR = {"u8": "Uint8", "u16": "Uint16", "i16": "Int16", "u32": "Uint32", "u64": "Uint64", "i32": "Int32"}
TABLES: dict[str, list[tuple[str, str]]] = {
    "Blob": [("name", "str"), ("size", "u64"), ("interface", "u32"), ("sub_interface", "u32"),
             ("version", "version"), ("data", "bytes")],
    "MemoryListEntry": [("id", "u16"), ("domain", "u8"), ("flags", "u16"), ("size", "u64"), ("alignment", "u32"),
                        ("contents", "strs"), ("offsets", "u64s"), ("bind_id", "u16"), ("tensor_desc_id", "u16")],
    "EventListEntry": [("id", "u16"), ("type", "u8"), ("target", "u16"), ("val", "u32"), ("op", "u8")],
    "TaskListEntry": [("id", "u16"), ("interface", "u32"), ("instance", "i16"), ("address_list", "u16s"),
                      ("pre_actions", "u16s"), ("post_actions", "u16s")],
    "AddressListEntry": [("id", "u16"), ("mem_id", "u16"), ("offset", "u64"), ("size", "u64")],
    "SubmitListEntry": [("id", "u16"), ("task_id", "u16s")],
    "TensorDescListEntry": [("name", "str"), ("id", "u16"), ("mem_id", "u16"), ("size", "u64"), ("offset", "u64"),
                            ("data_format", "u8"), ("data_type", "u8"), ("data_category", "u8"),
                            ("pixel_format", "u8"), ("pixel_mapping", "u8"), ("n", "i32"), ("c", "i32"),
                            ("h", "i32"), ("w", "i32")] + [(f"stride_{i}", "u32") for i in range(8)],
    "RelocListEntry": [("address_id", "u16"), ("write_id", "u16"), ("offset", "u64"), ("interface", "u32"),
                       ("sub_interface", "u32"), ("reloc_type", "u8")],
}
LISTS = [("task_list", "TaskListEntry"), ("memory_list", "MemoryListEntry"), ("address_list", "AddressListEntry"),
         ("event_list", "EventListEntry"), ("blobs", "Blob"), ("tensor_desc_list", "TensorDescListEntry"),
         ("reloc_list", "RelocListEntry"), ("submit_list", "SubmitListEntry")]


def _version(b: flatbuffers.Builder, v: list[int]) -> int:
    b.Prep(1, 3)
    b.PrependUint8(v[2])
    b.PrependUint8(v[1])
    b.PrependUint8(v[0])
    return b.Offset()


def _vector(b: flatbuffers.Builder, kind: str, items: list[Any]) -> int:
    width, adder = {"u16s": (2, "Uint16"), "u64s": (8, "Uint64"), "offsets": (4, "UOffsetTRelative")}[kind]
    b.StartVector(width, len(items), width)
    for item in reversed(items):
        getattr(b, "Prepend" + adder)(item)
    return b.EndVector()


def _table(b: flatbuffers.Builder, table: str, row: dict[str, Any]) -> int:
    fields = TABLES[table]
    refs: dict[str, int] = {}
    for name, kind in fields:
        value = row[name]
        if kind == "str":
            refs[name] = b.CreateString(value)
        elif kind == "bytes":
            refs[name] = b.CreateByteVector(value)
        elif kind == "strs":
            refs[name] = _vector(b, "offsets", [b.CreateString(s) for s in value])
        elif kind in ("u16s", "u64s"):
            refs[name] = _vector(b, kind, value)
    b.StartObject(len(fields))
    for slot, (name, kind) in enumerate(fields):
        if name in refs:
            b.PrependUOffsetTRelativeSlot(slot, refs[name], 0)
        elif kind == "version":
            b.PrependStructSlot(slot, _version(b, row[name]), 0)
        else:
            getattr(b, f"Prepend{_SCALAR[kind]}Slot")(slot, row[name], 0)
    return b.EndObject()


def serialize(content: dict[str, Any]) -> bytes:
    """The loadable bytes of `content` (build_content's plain data)."""
    b = flatbuffers.Builder(4096)
    b.ForceDefaults(True)
    lists = {}
    for name, table in LISTS:
        lists[name] = _vector(b, "offsets", [_table(b, table, row) for row in content[name]])
    b.StartObject(1 + len(LISTS))
    b.PrependStructSlot(0, _version(b, content["version"]), 0)
    for slot, (name, _) in enumerate(LISTS, start=1):
        b.PrependUOffsetTRelativeSlot(slot, lists[name], 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def write_loadable(program: Program) -> tuple[bytes, dict[str, Any], list[dict[str, Any]]]:
    content, debug = build_content(program)
    return serialize(content), content, debug
