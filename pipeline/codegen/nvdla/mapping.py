"""Mapping of legalized operations to NVDLA units and the loadable's memory plan.

conv -> CONV + fused SDP (bias), eltwise/relu/prelu/scale_bias/lut/copy -> SDP, pool -> PDP,
lrn -> CDP (+ LUT), softmax -> an EMU task (NVIDIA's emulator); a reshape that keeps the layout
is an alias (no operation). Consecutive DLA operations form one DLA task, each EMU operation
one EMU task. Feature tensors are FP16 NCxHWx (x = 16 channels: one 32-byte atom) with line and
surface strides. Every unit operation records the memories it reads and writes, from which the
writer derives the firmware's dependency graph (pipeline/codegen/nvdla/graph.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.codegen.nvdla import firmware as fw
from pipeline.numerics.nvdla_lut import activation_lut, lrn_lut
from pipeline.codegen.nvdla.weights import direct_conv_bytes
from pipeline.split import nvdla_cbuf
from pipeline.split.nvdla_legalize import Legalized, LegalOp

ATOM = 32  # bytes: 16 FP16 channels
CHANNELS_PER_ATOM = 16
CVT_IDENTITY = {"scale": 1, "truncate": 0, "enable": 0, "offset": 0}
# CONV output converter: scale 1, offset 0 asserted by kmd/firmware/conv.c processor_conv_program; NVIDIA's
# compiler writes enable 1 (engine-ast/ConvolutionOp.cpp emitOp).
CONV_OUT_CVT = {"scale": 1, "truncate": 0, "enable": 1, "offset": 0}
# CDP converters as NVIDIA's compiler writes them for LRN (engine-ast/CDPLRNOp.cpp): scale 1, enabled.
CDP_CVT = {"scale": 1, "truncate": 0, "enable": 1, "offset": 0}


def cube_dims(shape: list[int]) -> tuple[int, int, int]:
    """(C, H, W) of a batch-1 tensor: dimension 1 is C, the last is W, the ones between fold into H."""
    if len(shape) <= 1:
        return (int(shape[0]) if shape else 1, 1, 1)
    if shape[0] != 1:
        raise ValueError(f"batch {shape[0]}: NVDLA feature surfaces here are batch 1")
    c = int(shape[1])
    if len(shape) == 2:
        return c, 1, 1
    h = int(np.prod(shape[2:-1])) if len(shape) > 3 else 1
    return c, h, int(shape[-1])


@dataclass
class Surface:
    name: str
    c: int
    h: int
    w: int

    @property
    def line_stride(self) -> int:
        return self.w * ATOM

    @property
    def surf_stride(self) -> int:
        return self.h * self.w * ATOM

    @property
    def size(self) -> int:
        return -(-self.c // CHANNELS_PER_ATOM) * self.surf_stride


def pack_feature(array: np.ndarray, surface: Surface) -> bytes:
    """An FP16 tensor (C, H, W) in NCxHWx with the surface's strides."""
    c, h, w = surface.c, surface.h, surface.w
    groups = -(-c // CHANNELS_PER_ATOM)
    padded = np.zeros((groups * CHANNELS_PER_ATOM, h, w), dtype="<f2")
    padded[:c] = np.asarray(array, dtype=np.float32).reshape(c, h, w).astype(np.float16)
    return padded.reshape(groups, CHANNELS_PER_ATOM, h, w).transpose(0, 2, 3, 1).tobytes()


@dataclass
class Memory:
    name: str
    size: int
    flags: int
    content: bytes | None = None
    bind_id: int = 0
    interface: int = 0
    sub_interface: int = 0


@dataclass
class UnitOp:
    unit: int  # fw.OP_* or -1 for EMU
    op_desc: dict[str, Any]
    surface: dict[str, Any]
    legal: LegalOp
    fused_parent: int = -1
    lut: dict[str, Any] | None = None
    reads: list[str] = field(default_factory=list)  # memories read (data edges of the dependency graph)
    writes: str = ""  # the memory written ("" for a CONV writing the pipe)


@dataclass
class Task:
    interface: int  # 1 DLA1, 2 EMU1
    ops: list[UnitOp] = field(default_factory=list)


@dataclass
class Program:
    config: str
    tensors: dict[str, Surface]
    memories: list[Memory]
    tasks: list[Task]
    inputs: list[str]
    outputs: list[str]
    aliases: list[LegalOp] = field(default_factory=list)  # reshapes kept in memory (alias) or folded: no operation


MEM_ALLOC, MEM_SET, MEM_INPUT, MEM_OUTPUT = 1, 2, 4, 8


def _aliases(legal: Legalized) -> tuple[dict[str, str], set[str]]:
    """Tensor -> the memory holding it, for layout-keeping reshapes (no operation: one memory). A reshape between
    two bound tensors (an input and an output, or two outputs) cannot share memory: it is copied by the SDP
    (returned as the set of copies)."""
    home: dict[str, str] = {}
    bound = set(legal.inputs) | set(legal.outputs)

    def find(name: str) -> str:
        while name in home:
            name = home[name]
        return name

    copies: set[str] = set()
    for op in legal.ops:
        if op.kind != "reshape" or not op.attrs.get("alias"):
            continue
        root, dst = find(op.inputs[0]), op.output  # a group's root is its bound tensor when it has one
        if dst in bound and root in bound:
            copies.add(dst)
        elif dst in bound:
            home[root] = dst
        else:
            home[dst] = root
    return {name: find(name) for name in home}, copies


class Mapper:
    def __init__(self, legal: Legalized) -> None:
        self.legal = legal
        self.tensors: dict[str, Surface] = {}
        self.memories: list[Memory] = []
        self.mem_index: dict[str, int] = {}
        self.home, self.copies = _aliases(legal)

    def memory_of(self, name: str) -> str:
        return self.home.get(name, name)

    def surface(self, name: str, shape: list[int]) -> Surface:
        name = self.memory_of(name)
        if name not in self.tensors:
            self.tensors[name] = Surface(name, *cube_dims(shape))
            flags = MEM_ALLOC
            bind = 0
            if name in self.legal.inputs:
                flags |= MEM_INPUT
                bind = list(self.legal.inputs).index(name)
            if name in self.legal.outputs:
                flags |= MEM_OUTPUT
                bind = self.legal.outputs.index(name)
            self.add_memory(Memory(name, self.tensors[name].size, flags, bind_id=bind))
        return self.tensors[name]

    def add_memory(self, memory: Memory) -> int:
        self.mem_index[memory.name] = len(self.memories)
        self.memories.append(memory)
        return self.mem_index[memory.name]

    def constant(self, name: str, data: bytes) -> str:
        self.add_memory(Memory(name, len(data), MEM_ALLOC | MEM_SET, data))
        return name

    def cube(self, name: str, mem_type: int = fw.MEM_MC) -> dict[str, Any]:
        """A data cube; `address` holds the memory name until the writer resolves it per task."""
        name = self.memory_of(name)
        s = self.tensors[name]
        return {"type": mem_type, "address": name, "offset": 0, "size": s.size, "width": s.w, "height": s.h,
                "channel": s.c, "line_stride": s.line_stride, "surf_stride": s.surf_stride}

    def const_cube(self, name: str, values: np.ndarray, shape: tuple[int, int, int]) -> dict[str, Any]:
        s = Surface(name, *shape)
        self.tensors[name] = s
        self.constant(name, pack_feature(values, s))
        return self.cube(name)


def map_program(legal: Legalized) -> Program:
    """The legalized list as unit operations grouped in tasks, with every tensor's memory."""
    m = Mapper(legal)
    for name, shape in legal.inputs.items():
        m.surface(name, shape)
    tasks: list[Task] = []
    aliases: list[LegalOp] = []

    def task(interface: int) -> Task:
        if not tasks or tasks[-1].interface != interface or interface == 2:
            tasks.append(Task(interface))
        return tasks[-1]

    for index, op in enumerate(legal.ops):
        if op.kind == "reshape" and op.attrs.get("folded"):
            aliases.append(op)  # implemented by the kernels of the layers reading it (nvdla_rewrites.fold_flatten)
            continue
        for name in op.inputs:
            m.surface(name, legal.shapes[name])
        m.surface(op.output, op.shape)
        tag = f"op{index}"
        if op.kind == "conv":
            _conv(m, task(1), op, tag)
        elif op.kind in ("eltwise", "relu", "scale_bias", "prelu", "lut"):
            _sdp(m, task(1), op, tag)
        elif op.kind == "reshape" and op.output in m.copies:
            _sdp(m, task(1), op, tag)
        elif op.kind == "reshape":
            aliases.append(op)  # the memory is shared (_aliases): no operation
            continue
        elif op.kind == "pool":
            _pdp(m, task(1), op)
        elif op.kind == "lrn":
            _cdp(m, task(1), op)
        elif op.kind == "softmax":
            _emu_softmax(m, task(2), op)
        else:
            raise ValueError(f"no unit for {op.kind}")
    return Program(legal.config, m.tensors, m.memories, tasks, list(legal.inputs), list(legal.outputs), aliases)


def _conv(m: Mapper, task: Task, op: LegalOp, tag: str) -> None:
    weight = op.consts["weight"]
    k, c, r, s = weight.shape
    src, dst = m.tensors[m.memory_of(op.inputs[0])], m.tensors[m.memory_of(op.output)]
    size = nvdla_cbuf.weight_bytes(k, c, r, s)
    packed = direct_conv_bytes(weight)  # the CSC's read order (weights.py)
    if len(packed) != size:
        raise ValueError(f"line {op.line}: {len(packed)} weight bytes, the convolution buffer plans {size}")
    m.constant(f"{tag}-weight", packed)
    weight_cube = {"type": fw.MEM_MC, "address": f"{tag}-weight", "size": size, "width": s, "height": r,
                   "channel": c}
    (top, bottom), (left, right) = op.attrs["padding"]
    src_cube = m.cube(op.inputs[0])
    out_cube = m.cube(op.output)
    c0, c1 = op.attrs.get("in_channels", (0, src.c))
    o0, o1, i0, i1 = op.attrs.get("rows", (0, dst.h, 0, src.h))
    if (i0, i1) != (0, src.h):  # a band of rows (nvdla_rewrites._split_rows): the input rows read in place
        src_cube = dict(src_cube, offset=i0 * src.line_stride, height=i1 - i0,
                        size=_extent(src.c, i1 - i0, src.line_stride, src.surf_stride))
    if (o0, o1) != (0, dst.h):  # ... its output rows written in place
        out_cube = dict(out_cube, offset=o0 * dst.line_stride, height=o1 - o0,
                        size=_extent(dst.c, o1 - o0, dst.line_stride, dst.surf_stride))
    if (c0, c1) != (0, src.c):  # a slice of the input channels, read in place: whole 16-channel surfaces
        if c0 % CHANNELS_PER_ATOM:
            raise ValueError(f"line {op.line}: input-channel slice starting at {c0}, not a surface boundary")
        src_cube = dict(src_cube, offset=c0 // CHANNELS_PER_ATOM * src.surf_stride, channel=c1 - c0,
                        size=-(-(c1 - c0) // CHANNELS_PER_ATOM) * src.surf_stride)
    banks = nvdla_cbuf.allocate(c1 - c0, src_cube["height"], src.w, k, r, s)
    if banks is None:
        raise ValueError(f"line {op.line}: the convolution does not fit the convolution buffer (legalization "
                         "should have split it)")
    desc = {"data_format": fw.FORMAT_FEATURE, "batch": 1, "input_width_csc": src.w,
            "input_height_csc": src_cube["height"], "input_channel_csc": c1 - c0, "kernel_width_csc": s,
            "kernel_height_csc": r, "kernel_channel_csc": c, "input_width_cmac": dst.w, "input_height_cmac": o1 - o0,
            "bytes_per_kernel": c * r * s * 2,
            "conv_stride_x": op.attrs["stride"][1], "conv_stride_y": op.attrs["stride"][0], "pad_x_left": left,
            "pad_x_right": right, "pad_y_top": top, "pad_y_bottom": bottom,
            "dilation_x": op.attrs["dilation"][1], "dilation_y": op.attrs["dilation"][0],
            "in_precision": fw.PRECISION_FP16, "out_precision": fw.PRECISION_FP16,
            "entry_per_slice": nvdla_cbuf.entry_per_slice(c1 - c0, src.w), "data_bank": banks.data_banks,
            "weight_bank": banks.weight_banks, "fetch_grain": 1, "release": src_cube["height"],
            "in_cvt": {"scale": 1}, "out_cvt": CONV_OUT_CVT}
    pipe = dict(out_cube, type=fw.MEM_HW, address=-1, offset=0, line_stride=dst.w * ATOM,  # the on-the-fly pipe
                surf_stride=(o1 - o0) * dst.w * ATOM, size=-(-k // CHANNELS_PER_ATOM) * (o1 - o0) * dst.w * ATOM)
    task.ops.append(UnitOp(fw.OP_CONV, desc, {"weight_data": weight_cube, "src_data": src_cube, "dst_data": pipe}, op,
                           reads=[m.memory_of(op.inputs[0]), f"{tag}-weight"]))
    bias = op.consts["bias"]
    x1: dict[str, Any] = {"enable": 0}
    surface = {"src_data": pipe, "dst_data": out_cube}
    reads = []
    if np.any(bias != 0):
        x1 = {"enable": 1, "alu_type": fw.SDP_ALU_SUM, "type": fw.SDP_OP_ADD, "mode": fw.SDP_PER_KERNEL,
              "precision": fw.PRECISION_FP16}
        surface["x1_data"] = m.const_cube(f"{tag}-bias", bias, (k, 1, 1))
        reads.append(f"{tag}-bias")
    task.ops.append(UnitOp(fw.OP_SDP, _sdp_desc(x1), surface, op, fused_parent=len(task.ops) - 1, reads=reads,
                           writes=m.memory_of(op.output)))


def _extent(channels: int, rows: int, line_stride: int, surf_stride: int) -> int:
    """Bytes from a cube's first atom to the end of its last row, in a surface of these strides."""
    return (-(-channels // CHANNELS_PER_ATOM) - 1) * surf_stride + rows * line_stride


def _sdp_desc(x1: dict[str, Any], x2: dict[str, Any] | None = None, y: dict[str, Any] | None = None,
              lut_index: int = -1) -> dict[str, Any]:
    return {"src_precision": fw.PRECISION_FP16, "dst_precision": fw.PRECISION_FP16, "lut_index": lut_index,
            "batch_num": 1, "out_cvt": {"scale": 1}, "x1_op": x1, "x2_op": x2 or {}, "y_op": y or {}}


def _fp16_bits(value: float) -> int:
    return int(np.asarray(value, dtype="<f2").view("<u2"))


def _sdp(m: Mapper, task: Task, op: LegalOp, tag: str) -> None:
    out = m.tensors[m.memory_of(op.output)]
    surface = {"src_data": m.cube(op.inputs[0]), "dst_data": m.cube(op.output)}
    reads = [m.memory_of(op.inputs[0])]
    base = {"enable": 1, "precision": fw.PRECISION_FP16}
    lut = None
    if op.kind == "reshape":  # a copy between two bound tensors: every stage bypassed
        desc = _sdp_desc({"enable": 0})
    elif op.kind == "relu":
        desc = _sdp_desc(dict(base, type=fw.SDP_OP_NONE, act=fw.ACT_RELU))
    elif op.kind == "lut":  # sigmoid / tanh on the Y unit's lookup table (as engine-ast/ActivationOp.cpp emitLut)
        lut = activation_lut(op.attrs["fn"])
        desc = _sdp_desc({"enable": 0}, y=dict(base, type=fw.SDP_OP_NONE, alu_type=fw.SDP_ALU_SUM,
                                                mode=fw.SDP_PER_LAYER, act=fw.ACT_LUT, mul_operand=1), lut_index=0)
    elif op.kind == "prelu":  # the multiplier applies to negative values only (act = PRELU)
        slope = op.consts["slope"]
        unit = dict(base, type=fw.SDP_OP_MUL, act=fw.ACT_PRELU)
        if slope.size == 1:
            unit.update(mode=fw.SDP_PER_LAYER, mul_operand=_fp16_bits(float(slope.reshape(-1)[0])))
        elif slope.size == out.c:
            unit["mode"] = fw.SDP_PER_KERNEL
            surface["x1_data"] = m.const_cube(f"{tag}-slope", slope.reshape(-1), (out.c, 1, 1))
            reads.append(f"{tag}-slope")
        else:
            raise ValueError(f"line {op.line}: PReLU slope of shape {list(slope.shape)} (per layer or channel)")
        desc = _sdp_desc(unit)
    elif op.kind == "scale_bias":
        surface["x1_data"] = m.const_cube(f"{tag}-scale", op.consts["scale"], (out.c, 1, 1))
        surface["x2_data"] = m.const_cube(f"{tag}-bias", op.consts["bias"], (out.c, 1, 1))
        reads += [f"{tag}-scale", f"{tag}-bias"]
        desc = _sdp_desc(dict(base, type=fw.SDP_OP_MUL, mode=fw.SDP_PER_KERNEL),
                         dict(base, type=fw.SDP_OP_ADD, alu_type=fw.SDP_ALU_SUM, mode=fw.SDP_PER_KERNEL))
    else:
        kind = op.attrs["op"]
        unit = dict(base, type=fw.SDP_OP_MUL if kind == "mul" else fw.SDP_OP_ADD,
                    alu_type={"add": fw.SDP_ALU_SUM, "max": fw.SDP_ALU_MAX, "min": fw.SDP_ALU_MIN}.get(kind, 0))
        if "operand" not in op.consts:  # a second tensor, per point or per channel (read from its surface)
            other = m.tensors[m.memory_of(op.inputs[1])]
            if op.attrs.get("per_channel"):
                if (other.c, other.h, other.w) != (out.c, 1, 1):
                    raise ValueError(f"line {op.line}: per-channel operand of {other.c}x{other.h}x{other.w}")
                unit["mode"] = fw.SDP_PER_KERNEL
            elif other.c * other.h * other.w != out.c * out.h * out.w:
                raise ValueError(f"line {op.line}: broadcast between two tensors is not mapped to SDP")
            else:
                unit["mode"] = fw.SDP_PER_POINT
            surface["x1_data"] = m.cube(op.inputs[1])
            reads.append(m.memory_of(op.inputs[1]))
        else:
            operand = op.consts["operand"]
            if operand.size == 1:
                unit["mode"] = fw.SDP_PER_LAYER
                unit["mul_operand" if kind == "mul" else "alu_operand"] = _fp16_bits(float(operand.reshape(-1)[0]))
            elif operand.size == out.c and _per_channel(operand.shape):
                unit["mode"] = fw.SDP_PER_KERNEL
                surface["x1_data"] = m.const_cube(f"{tag}-operand", operand.reshape(-1), (out.c, 1, 1))
                reads.append(f"{tag}-operand")
            elif operand.size == out.c * out.h * out.w:
                unit["mode"] = fw.SDP_PER_POINT
                surface["x1_data"] = m.const_cube(f"{tag}-operand", operand.reshape(-1), (out.c, out.h, out.w))
                reads.append(f"{tag}-operand")
            else:
                raise ValueError(f"line {op.line}: operand shape {list(operand.shape)} is not per layer, "
                                 "per channel or per point")
        desc = _sdp_desc(unit)
    task.ops.append(UnitOp(fw.OP_SDP, desc, surface, op, lut=lut, reads=reads, writes=m.memory_of(op.output)))


def _per_channel(shape: tuple[int, ...]) -> bool:
    dims = [d for d in shape]
    return len(dims) >= 2 and all(d == 1 for i, d in enumerate(dims) if i != 1) or len(dims) == 1


def _pdp(m: Mapper, task: Task, op: LegalOp) -> None:
    (top, bottom), (left, right) = op.attrs["padding"]
    src, dst = m.tensors[m.memory_of(op.inputs[0])], m.tensors[m.memory_of(op.output)]
    desc = {"partial_in_width_first": src.w, "partial_width_first": dst.w, "split_num": 1,
            "pool_mode": fw.POOL_MAX if op.attrs["mode"] == "max" else fw.POOL_AVG,
            "pool_width": op.attrs["kernel"][1] - 1, "pool_height": op.attrs["kernel"][0] - 1,
            "stride_x": op.attrs["stride"][1], "stride_y": op.attrs["stride"][0], "pad_left": left,
            "pad_right": right, "pad_top": top, "pad_bottom": bottom, "precision": fw.PRECISION_FP16}
    task.ops.append(UnitOp(fw.OP_PDP, desc, {"src_data": m.cube(op.inputs[0]), "dst_data": m.cube(op.output)}, op,
                           reads=[m.memory_of(op.inputs[0])], writes=m.memory_of(op.output)))


def _cdp(m: Mapper, task: Task, op: LegalOp) -> None:
    desc = {"in_precision": fw.PRECISION_FP16, "out_precision": fw.PRECISION_FP16, "lut_index": 0,
            "local_size": op.attrs["size"], "in_cvt": CDP_CVT, "out_cvt": CDP_CVT}
    task.ops.append(UnitOp(fw.OP_CDP, desc, {"src_data": m.cube(op.inputs[0]), "dst_data": m.cube(op.output)}, op,
                           lut=lrn_lut(op.attrs["size"], op.attrs["alpha"], op.attrs["beta"], op.attrs["bias"]),
                           reads=[m.memory_of(op.inputs[0])], writes=m.memory_of(op.output)))


def _emu_buffer(m: Mapper, name: str) -> dict[str, Any]:
    cube = m.cube(name)
    return {"addressIndex": cube["address"], "addressIndexOffset": 0, "size": cube["size"],
            "format": fw.EMU_FORMAT_FF16, "width": cube["width"], "height": cube["height"], "channel": cube["channel"],
            "line_stride": cube["line_stride"], "surf_stride": cube["surf_stride"]}


def _emu_softmax(m: Mapper, task: Task, op: LegalOp) -> None:
    """Softmax over the channels of a 1 x 1 x C tensor: NVIDIA's emulator reads `channel` consecutive halves
    (umd/core/src/runtime/Emulator.cpp executeSoftmax), which a C x 1 x 1 surface holds in channel order."""
    desc = {"common": {"op_type": fw.EMU_OP_SOFTMAX, "input_scale_factor": 1.0, "output_scale_factor": 1.0},
            "axis": 1}
    buffers = {"src_data": _emu_buffer(m, op.inputs[0]), "dst_data": _emu_buffer(m, op.output)}
    task.ops.append(UnitOp(-1, desc, buffers, op, reads=[m.memory_of(op.inputs[0])], writes=m.memory_of(op.output)))
