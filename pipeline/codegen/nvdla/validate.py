"""Structural validator of NVDLA loadables: what NVIDIA's reader and firmware check, on the bytes.

Reads the loadable through pipeline.codegen.nvdla.reader only (never the writer) and
returns findings with stable codes (docs/codegen-nvdla.md lists them): required lists,
address-list indices, memory bounds, firmware interface version, precision per
configuration, stride alignment to the 32-byte memory atom, unit limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.codegen.nvdla import reader as R

FINDINGS: dict[str, str] = {
    "NVDLA-V001": "a required list or the version is missing (NVIDIA's reader dereferences all eight lists)",
    "NVDLA-V002": "loadable version other than 0.7.0",
    "NVDLA-V003": "address list entry outside its memory, or naming a missing memory",
    "NVDLA-V004": "task, submit or event reference to a missing entry",
    "NVDLA-V005": "memory content naming a missing blob, or a blob that does not fit its memory",
    "NVDLA-V006": "firmware blob of another interface version than 0.12.x, or blob size field wrong",
    "NVDLA-V007": "DLA task blobs inconsistent (network indices, operation count, operation type)",
    "NVDLA-V008": "data cube outside its address, or strides not aligned to the 32-byte atom or too small",
    "NVDLA-V009": "precision other than FP16 (configuration nv_full, FP16)",
    "NVDLA-V010": "unit limit exceeded (kernel, stride, padding, local size)",
    "NVDLA-V011": "tensor descriptor inconsistent with its memory",
}
LISTS = ("task_list", "memory_list", "address_list", "event_list", "blobs", "tensor_desc_list", "reloc_list",
         "submit_list")
ATOM = 32


@dataclass(frozen=True)
class Finding:
    code: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.where}: {self.message}"


def validate_loadable(data: bytes) -> list[Finding]:
    """Every finding on the loadable bytes; empty when it is structurally sound."""
    try:
        l = R.read_loadable(data)
    except Exception as exc:  # noqa: BLE001 - any decoding failure is a finding, not a crash
        return [Finding("NVDLA-V001", "loadable", f"unreadable flatbuffer: {exc}")]
    out: list[Finding] = []
    add = lambda code, where, msg: out.append(Finding(code, where, msg))  # noqa: E731
    if l["version"] is None:
        add("NVDLA-V001", "version", "missing")
    elif l["version"] != [0, 7, 0]:
        add("NVDLA-V002", "version", f"{l['version']}")
    missing = [name for name in LISTS if l[name] is None]
    for name in missing:
        add("NVDLA-V001", name, "list missing")
    if missing:
        return out
    mems, addrs = l["memory_list"], l["address_list"]
    blobs = {b["name"]: b for b in l["blobs"]}
    for i, a in enumerate(addrs):
        if a["mem_id"] >= len(mems):
            add("NVDLA-V003", f"address_list[{i}]", f"memory {a['mem_id']} missing")
        elif a["offset"] + a["size"] > mems[a["mem_id"]]["size"]:
            add("NVDLA-V003", f"address_list[{i}]", f"[{a['offset']}, +{a['size']}) outside memory "
                f"{a['mem_id']} of {mems[a['mem_id']]['size']} bytes")
    for i, m in enumerate(mems):
        for name, offset in zip(m["contents"] or [], m["offsets"] or []):
            blob = blobs.get(name)
            if blob is None:
                add("NVDLA-V005", f"memory_list[{i}]", f"content blob '{name}' missing")
            elif offset + len(blob["data"] or b"") > m["size"]:
                add("NVDLA-V005", f"memory_list[{i}]", f"blob '{name}' does not fit")
    for b in l["blobs"]:
        if b["size"] != len(b["data"] or b""):
            add("NVDLA-V006", f"blob '{b['name']}'", f"size field {b['size']} for {len(b['data'] or b'')} bytes")
        if b["interface"] == 1 and (b["version"] or [0, 0])[:2] != [0, 12]:
            add("NVDLA-V006", f"blob '{b['name']}'", f"firmware interface {b['version']}, expected 0.12.x")
    task_ids = {t["id"] for t in l["task_list"]}
    event_ids = {e["id"] for e in l["event_list"]}
    for s in l["submit_list"]:
        for tid in s["task_id"] or []:
            if tid not in task_ids:
                add("NVDLA-V004", f"submit_list[{s['id']}]", f"task {tid} missing")
    for d in l["tensor_desc_list"]:
        if d["mem_id"] >= len(mems) or d["offset"] + d["size"] > mems[d["mem_id"]]["size"]:
            add("NVDLA-V011", f"tensor '{d['name']}'", "outside its memory")
    for t in l["task_list"]:
        where = f"task {t['id']}"
        alist = t["address_list"] or []
        if any(a >= len(addrs) for a in alist):
            add("NVDLA-V004", where, "address list index beyond the address list")
            continue
        for e in (t["pre_actions"] or []) + (t["post_actions"] or []):
            if e not in event_ids:
                add("NVDLA-V004", where, f"event {e} missing")
        blob_of = lambda i: _blob(l, alist, i)  # noqa: E731
        if t["interface"] == 1:
            _dla_task(l, alist, blob_of, where, add)
        elif t["interface"] == 2:
            emu = blob_of(0)
            count = int.from_bytes(emu[:2], "little")
            if 4 + count * R.C.sizeof(R.EmuOp) > len(emu):
                add("NVDLA-V007", where, f"{count} EMU operations do not fit the blob")
                continue
            for i in range(count):
                op = R.decode(R.EmuOp, emu, 4 + i * R.C.sizeof(R.EmuOp))
                for name in ("src_data", "dst_data"):
                    _cube(l, alist, getattr(op, name), f"{where} emu op {i} {name}", add)
    return out


def _blob(l: dict[str, Any], alist: list[int], index: int) -> bytes:
    if not 0 <= index < len(alist):
        return b""
    a = l["address_list"][alist[index]]
    m = l["memory_list"][a["mem_id"]]
    blobs = {b["name"]: b["data"] for b in l["blobs"]}
    raw = bytearray(m["size"])
    for name, offset in zip(m["contents"] or [], m["offsets"] or []):
        data = blobs.get(name, b"")
        raw[offset:offset + len(data)] = data
    return bytes(raw[a["offset"]:a["offset"] + a["size"]])


def _cube(l: dict[str, Any], alist: list[int], cube: Any, where: str, add: Any, fused: bool = False) -> None:
    if cube.type == 2 or (cube.size == 0 and cube.channel == 0):
        return  # the CONV -> SDP pipe, or an unused cube
    if not 0 <= cube.address < len(alist):
        add("NVDLA-V008", where, f"address index {cube.address} outside the task's {len(alist)} addresses")
        return
    a = l["address_list"][alist[cube.address]]
    if cube.offset + cube.size > a["size"]:
        add("NVDLA-V008", where, f"[{cube.offset}, +{cube.size}) beyond its address of {a['size']} bytes")
    if cube.line_stride or cube.surf_stride:
        if cube.line_stride % ATOM or cube.surf_stride % ATOM:
            add("NVDLA-V008", where, f"strides {cube.line_stride}/{cube.surf_stride} not multiples of {ATOM}")
        if cube.line_stride < cube.width * ATOM or cube.surf_stride < cube.height * cube.line_stride:
            add("NVDLA-V008", where, "strides smaller than the cube")
        need = -(-cube.channel // 16) * cube.surf_stride
        if cube.size < need:
            add("NVDLA-V008", where, f"size {cube.size} below the {need} bytes of the surface")


def _dla_task(l: dict[str, Any], alist: list[int], blob_of: Any, where: str, add: Any) -> None:
    net_bytes = blob_of(0)
    if len(net_bytes) < R.C.sizeof(R.Network):
        add("NVDLA-V007", where, "network descriptor missing or short")
        return
    net = R.decode(R.Network, net_bytes)
    n = net.num_operations
    for name in ("operation_desc_index", "surface_desc_index", "dependency_graph_index"):
        if not 0 <= getattr(net, name) < len(alist):
            add("NVDLA-V007", where, f"{name} {getattr(net, name)} outside the task's address list")
            return
    deps, ops = blob_of(net.dependency_graph_index), blob_of(net.operation_desc_index)
    surfaces = blob_of(net.surface_desc_index)
    luts = blob_of(net.lut_data_index) if net.lut_data_index >= 0 else b""
    if len(deps) < 36 * n or len(ops) < R.OP_CONTAINER * n or len(surfaces) < R.SURFACE_CONTAINER * n:
        add("NVDLA-V007", where, f"{n} operations do not fit the descriptor blobs")
        return
    if len(luts) < 700 * net.num_luts:
        add("NVDLA-V007", where, f"{net.num_luts} LUTs do not fit the LUT blob")
    commons = [R.decode(R.CommonOp, deps, 36 * i) for i in range(n)]
    for unit in range(6):
        first = next((i for i, c in enumerate(commons) if c.op_type == unit), -1)
        if net.op_head[unit] != first:
            add("NVDLA-V007", where, f"op_head[{unit}] = {net.op_head[unit]}, the first operation of that unit is "
                f"{first}")
    waits = [0] * n
    for i, common in enumerate(commons):
        for slot, c in enumerate(common.consumers):
            if c.index >= 0:
                if c.index >= n or c.index <= i or commons[c.index].op_type != slot:
                    add("NVDLA-V007", f"{where} op {i}", f"consumer {c.index} in the slot of unit {slot}: not a "
                        "later operation of that unit")
                else:
                    waits[c.index] += 1
    for i, common in enumerate(commons):
        w = f"{where} op {i}"
        if common.dependency_count != waits[i]:
            add("NVDLA-V007", w, f"dependency_count {common.dependency_count}, {waits[i]} operation(s) name it")
        if common.op_type not in R.OP_TYPES:
            add("NVDLA-V007", w, f"operation type {common.op_type} not emitted by this writer (BDMA) or unknown")
            continue
        parent = common.fused_parent.index
        if parent >= 0 and (parent >= n or commons[parent].op_type != 1 or common.op_type != 2):
            add("NVDLA-V007", w, f"fused parent {parent}: only an SDP fuses to a CONV")
        op_cls, surf_cls = R.OP_TYPES[common.op_type]
        op = R.decode(op_cls, ops, R.OP_CONTAINER * i)
        surf = R.decode(surf_cls, surfaces, R.SURFACE_CONTAINER * i)
        for name, _ in surf_cls._fields_:
            if name.endswith("_data"):
                _cube(l, alist, getattr(surf, name), f"{w} {name}", add)
        _limits(common.op_type, op, net, w, add)


def _limits(op_type: int, op: Any, net: Any, where: str, add: Any) -> None:
    if op_type == 1:
        if op.in_precision != 2 or op.out_precision != 2:
            add("NVDLA-V009", where, f"CONV precision {op.in_precision}/{op.out_precision}")
        for name, value, low, high in (("kernel width", op.kernel_width_csc, 1, 32),
                                       ("kernel height", op.kernel_height_csc, 1, 32),
                                       ("stride x", op.conv_stride_x, 1, 8), ("stride y", op.conv_stride_y, 1, 8),
                                       ("pad left", op.pad_x_left, 0, 31), ("pad right", op.pad_x_right, 0, 31),
                                       ("pad top", op.pad_y_top, 0, 31), ("pad bottom", op.pad_y_bottom, 0, 31)):
            if not low <= value <= high:
                add("NVDLA-V010", where, f"CONV {name} {value} outside {low}-{high}")
    elif op_type == 2:
        if op.src_precision != 2 or op.dst_precision != 2:
            add("NVDLA-V009", where, f"SDP precision {op.src_precision}/{op.dst_precision}")
    elif op_type == 3:
        if op.precision != 2:
            add("NVDLA-V009", where, f"PDP precision {op.precision}")
        for name, value, low, high in (("pool width", op.pool_width + 1, 1, 8), ("pool height", op.pool_height + 1, 1, 8),
                                       ("stride x", op.stride_x, 1, 8), ("stride y", op.stride_y, 1, 8),
                                       ("pad left", op.pad_left, 0, 7), ("pad right", op.pad_right, 0, 7),
                                       ("pad top", op.pad_top, 0, 7), ("pad bottom", op.pad_bottom, 0, 7)):
            if not low <= value <= high:
                add("NVDLA-V010", where, f"PDP {name} {value} outside {low}-{high}")
    elif op_type == 4:
        if op.in_precision != 2 or op.out_precision != 2:
            add("NVDLA-V009", where, f"CDP precision {op.in_precision}/{op.out_precision}")
        if op.local_size not in (3, 5, 7, 9):
            add("NVDLA-V010", where, f"CDP local size {op.local_size} not 3, 5, 7 or 9")
        if not 0 <= op.lut_index < net.num_luts:
            add("NVDLA-V007", where, f"LUT index {op.lut_index} of {net.num_luts}")
