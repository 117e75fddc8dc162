"""Structural validator of NVDLA loadables: what NVIDIA's reader, runtime and firmware check, on the bytes.

Reads the loadable through pipeline.codegen.nvdla.reader only (never the writer) and
returns findings with stable codes (docs/codegen-nvdla.md lists them): required lists,
address-list indices, memory bounds, firmware interface version, precision per
configuration, stride alignment to the 32-byte memory atom, unit limits, and the firmware's
own rules (pipeline/codegen/nvdla/firmware_rules.py: the dependency graph, register fields,
convolution buffer banks, EMU tasks, the assertions of processor_*_program).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.codegen.nvdla import firmware_rules as F
from pipeline.codegen.nvdla import reader as R

FINDINGS: dict[str, str] = {
    "NVDLA-V001": "a required list or the version is missing (NVIDIA's reader dereferences all eight lists)",
    "NVDLA-V002": "loadable version other than 0.7.0",
    "NVDLA-V003": "address list entry outside its memory, or naming a missing memory",
    "NVDLA-V004": "task, submit or event reference to a missing entry",
    "NVDLA-V005": "memory content naming a missing blob, or a blob that does not fit its memory",
    "NVDLA-V006": "firmware blob of another interface version than 0.12.x, or blob size field wrong",
    "NVDLA-V007": "DLA task blobs inconsistent (network indices, operation count, operation type, LUT index, a "
                  "context blob not at offset 0 of its memory)",
    "NVDLA-V008": "data cube outside its address, or strides not aligned to the 32-byte atom or too small",
    "NVDLA-V009": "precision other than FP16 (configuration nv_full, FP16)",
    "NVDLA-V010": "unit limit exceeded (kernel, stride, padding, local size)",
    "NVDLA-V011": "tensor descriptor inconsistent with its memory",
    "NVDLA-V012": "dependency graph against the firmware scheduler's rules (kmd/firmware/scheduler.c)",
    "NVDLA-V013": "a descriptor field overflows the register field the firmware writes it to",
    "NVDLA-V014": "convolution buffer banks: allocation beyond nv_full's 16 banks, or too few for the input or "
                  "one kernel group, entry_per_slice other than NVIDIA's compiler's",
    "NVDLA-V015": "EMU task other than NVIDIA's emulator reads (emu_interface.h: softmax, power)",
    "NVDLA-V016": "an assertion of the firmware's processor_*_program fails (the task would be refused)",
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
            F.check_emu(blob_of, alist, lambda i: addrs[alist[i]]["size"], where, add)
        else:
            add("NVDLA-V004", where, f"task interface {t['interface']} (DLA1 1 or EMU1 2)")
    return out


BLOB_WINDOW = 64 << 20  # bytes of a context blob read at most: 65535 operations of 644-byte surfaces fit


def _blob(l: dict[str, Any], alist: list[int], index: int) -> bytes:
    """The bytes the firmware reads at task address `index`: the memory's content blobs over zeros, the window
    bounded (a declared size is hostile input, never allocated as such)."""
    if not 0 <= index < len(alist):
        return b""
    a = l["address_list"][alist[index]]
    m = l["memory_list"][a["mem_id"]]
    blobs = {b["name"]: b["data"] for b in l["blobs"]}
    start, size = a["offset"], min(a["size"], BLOB_WINDOW)
    raw = bytearray(size)
    for name, offset in zip(m["contents"] or [], m["offsets"] or []):
        data = blobs.get(name) or b""
        lo, hi = max(offset, start), min(offset + len(data), start + size)
        if lo < hi:
            raw[lo - start:hi - start] = data[lo - offset:hi - offset]
    return bytes(raw)


def _cube(l: dict[str, Any], alist: list[int], cube: Any, where: str, add: Any, per_kernel: bool = False) -> None:
    if cube.type == 2 or (cube.size == 0 and cube.channel == 0):
        return  # the CONV -> SDP pipe (checked with the graph), or an unused cube
    if not 0 <= cube.address < len(alist):
        add("NVDLA-V008", where, f"address index {cube.address} outside the task's {len(alist)} addresses")
        return
    a = l["address_list"][alist[cube.address]]
    if cube.offset + cube.size > a["size"]:
        add("NVDLA-V008", where, f"[{cube.offset}, +{cube.size}) beyond its address of {a['size']} bytes")
    if cube.offset % ATOM:
        add("NVDLA-V008", where, f"offset {cube.offset} not a multiple of the {ATOM}-byte atom")
    if per_kernel:  # an SDP operand per kernel: one value per channel, read as consecutive halves (a 20-byte
        if cube.size < 2 * cube.channel:  # cube holds 10 channels, as NVIDIA's compiler writes a bias)
            add("NVDLA-V008", where, f"size {cube.size} below the {2 * cube.channel} bytes of one value per channel")
        return
    if cube.line_stride or cube.surf_stride:
        if cube.line_stride % ATOM or cube.surf_stride % ATOM:
            add("NVDLA-V008", where, f"strides {cube.line_stride}/{cube.surf_stride} not multiples of {ATOM}")
        if cube.line_stride < cube.width * ATOM or cube.surf_stride < cube.height * cube.line_stride:
            add("NVDLA-V008", where, "strides smaller than the cube")
        need = (-(-cube.channel // 16) - 1) * cube.surf_stride + cube.height * cube.line_stride
        if cube.size < need:
            add("NVDLA-V008", where, f"size {cube.size} below the {need} bytes its surfaces and rows span")


def _task_memories(l: dict[str, Any], alist: list[int], unit: int, op: Any, surf: Any) -> tuple[list[int], int]:
    """Memories (global memory ids) an operation reads and writes, by its surface descriptor."""
    def mem(cube: Any) -> int:
        if cube is None or not 0 <= cube.address < len(alist):
            return -1
        return l["address_list"][alist[cube.address]]["mem_id"]

    reads, written = R.operand_cubes(unit, op, surf)
    return [m for m in map(mem, reads) if m >= 0], mem(written)


def _dla_task(l: dict[str, Any], alist: list[int], blob_of: Any, where: str, add: Any) -> None:
    net_bytes = blob_of(0)
    if len(net_bytes) < R.C.sizeof(R.Network):
        add("NVDLA-V007", where, "network descriptor missing or short")
        return
    net = R.decode(R.Network, net_bytes)
    n = net.num_operations
    indices = ["operation_desc_index", "surface_desc_index", "dependency_graph_index"] + \
        (["lut_data_index"] if net.num_luts else [])
    for name in indices:
        if not 0 <= getattr(net, name) < len(alist):
            add("NVDLA-V007", where, f"{name} {getattr(net, name)} outside the task's address list")
            return
    for name in ["network"] + indices:
        index = 0 if name == "network" else getattr(net, name)
        if l["address_list"][alist[index]]["offset"]:
            add("NVDLA-V007", where, f"{name} blob at offset {l['address_list'][alist[index]]['offset']} of its "
                "memory: the firmware reads it at offset 0 (dla_data_read ignores the address entry's offset, "
                "kmd/port/linux/nvdla_core_callbacks.c)")
    graph_memory = l["memory_list"][l["address_list"][alist[net.dependency_graph_index]]["mem_id"]]
    if not any("dep_graph" in name for name in graph_memory["contents"] or []):
        add("NVDLA-V012", where, f"the dependency graph's content {graph_memory['contents']} has no 'dep_graph' in its "
            "name: NVIDIA's runtime reloads only those before a submission (umd/core/src/runtime/Runtime.cpp "
            "submitInternal), and the firmware wrote the counts back decremented: a second submission stalls")
    if net.num_addresses != len(alist):
        add("NVDLA-V007", where, f"num_addresses {net.num_addresses}, the task's address list has {len(alist)}")
    deps, ops = blob_of(net.dependency_graph_index), blob_of(net.operation_desc_index)
    surfaces = blob_of(net.surface_desc_index)
    luts = blob_of(net.lut_data_index) if net.num_luts else b""
    if len(deps) < 36 * n or len(ops) < R.OP_CONTAINER * n or len(surfaces) < R.SURFACE_CONTAINER * n:
        add("NVDLA-V007", where, f"{n} operations do not fit the descriptor blobs")
        return
    if len(luts) < 700 * net.num_luts:
        add("NVDLA-V007", where, f"{net.num_luts} LUTs do not fit the LUT blob")
    commons = [R.decode(R.CommonOp, deps, 36 * i) for i in range(n)]
    heads = list(net.op_head)
    for unit in range(6):
        first = next((i for i, c in enumerate(commons) if c.op_type == unit), -1)
        if heads[unit] != first:
            add("NVDLA-V007", where, f"op_head[{unit}] = {heads[unit]}, the first operation of that unit is "
                f"{first}")
    decoded, reads, writes = [], [], []
    for i, common in enumerate(commons):
        w = f"{where} op {i}"
        if common.index != i:
            add("NVDLA-V007", w, f"index field {common.index}")
        if common.op_type not in R.OP_TYPES:
            add("NVDLA-V007", w, f"operation type {common.op_type} not emitted by this writer (BDMA) or unknown")
            return
        op_cls, surf_cls = R.OP_TYPES[common.op_type]
        op = R.decode(op_cls, ops, R.OP_CONTAINER * i)
        surf = R.decode(surf_cls, surfaces, R.SURFACE_CONTAINER * i)
        decoded.append(surf)
        r, wr = _task_memories(l, alist, common.op_type, op, surf)
        reads.append(r)
        writes.append(wr)
        for name, _ in surf_cls._fields_:
            if name.endswith("_data"):
                sub = getattr(op, f"{name[:-5]}_op", None) if common.op_type == 2 else None
                _cube(l, alist, getattr(surf, name), f"{w} {name}", add,
                      per_kernel=sub is not None and sub.enable and sub.mode == 1)
        _limits(common.op_type, op, net, w, add)
        F.check_registers(common.op_type, op, surf, w, add)
        F.check_program(common.op_type, op, surf, w, add)
        if common.op_type == 1:
            F.check_banks(op, surf, w, add)
    F.check_graph(commons, decoded, reads, writes, heads, where, add)


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
        if op.lut_index >= 0 and op.lut_index >= net.num_luts:
            add("NVDLA-V007", where, f"LUT index {op.lut_index} of {net.num_luts}")
        if op.y_op.enable and op.y_op.act == 2 and op.lut_index < 0:
            add("NVDLA-V007", where, "the Y unit looks up a table but lut_index is -1")
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
