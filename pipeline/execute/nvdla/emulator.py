"""Emulator of NVDLA loadables (nv_full, FP16): executes the descriptors of a loadable, not the NNEF.

Each DLA task runs in the firmware's order (pipeline/execute/nvdla/scheduler.py, a discrete-event
model of kmd/firmware/scheduler.c): an operation is computed when the model completes it, and a
task that would stall on NVIDIA's firmware stops with a coded finding naming the stuck operations.
EMU tasks are NVIDIA's emulator's (emu_interface.h: softmax over 1 x C, power).

Mode `ideal`: every unit reads FP16 surfaces, computes in float32 (convolution products
of FP16 values are exact in float32, sums accumulate in float32) and rounds to FP16 when
it writes memory; the CONV -> SDP pipe is not rounded (the SDP receives the accumulator).
The CDP evaluates its LUT (linear interpolation between FP16 samples), as the hardware does.

Mode `hw-approx`: the arithmetic of the NVDLA C model (github.com/nvdla/hw, branch nvdlav1,
cmod/) where it differs from `ideal`, each in one function below naming the C model file it
follows: CMAC block-floating-point products, CACC wide accumulation and its conversion to
float32, SDP float32 with flush-to-zero multiplies, PDP FP17 sums and reciprocal multiplies,
CDP float32 squares/sums and FP17 interpolation. What it does not model (CSC image-mode
packing, Winograd, the CACC's exact FP48 rounding, the LUT index rule) is in
docs/codegen-nvdla.md. The ONNC compiler's FP16 conversion toward zero of constants, which
explains the BatchNormalization and LRN golden ulps, is a compiler's, not the hardware's:
neither mode models it.
A run on this emulator is `emulated`, never `pass` (docs/codegen-nvdla.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.codegen.nvdla import reader as R
from pipeline.execute.nvdla import hw_arith as H
from pipeline.execute.nvdla import lut as L
from pipeline.execute.nvdla.csc import weight_extent, weight_offsets
from pipeline.execute.nvdla.scheduler import EmulationError, Op, Scheduler

MODES = ("ideal", "hw-approx")
MEMORY_LIMIT = 1 << 30  # bytes of memory a loadable may ask the emulator for
ATOM, LANES = 32, 16
MEM_HW = 2
FLAG_INPUT, FLAG_OUTPUT = 4, 8


class Machine:
    def __init__(self, loadable: dict[str, Any], mode: str = "ideal") -> None:
        self.l = loadable
        self.hw = mode == "hw-approx"
        blobs = {b["name"]: b["data"] for b in loadable["blobs"]}
        total = sum(m["size"] for m in loadable["memory_list"])
        if total > MEMORY_LIMIT:
            raise EmulationError(f"the loadable's memories add up to {total} bytes, beyond the emulator's "
                                 f"{MEMORY_LIMIT >> 20} MiB")
        self.mem: list[bytearray] = []
        for m in loadable["memory_list"]:
            buf = bytearray(m["size"])
            for name, offset in zip(m["contents"] or [], m["offsets"] or []):
                data = blobs.get(name)
                if data is None or offset + len(data) > m["size"]:
                    raise EmulationError(f"memory {m['id']}: content '{name}' missing or beyond its size")
                buf[offset:offset + len(data)] = data
            self.mem.append(buf)
        self.addresses = loadable["address_list"]
        self.pipe: np.ndarray | None = None

    # surfaces -------------------------------------------------------------------------------------------
    def _buffer(self, addr_list: list[int], cube: Any) -> tuple[bytearray, int]:
        if not 0 <= cube.address < len(addr_list):
            raise EmulationError(f"cube address index {cube.address} outside the task's address list")
        entry = self.addresses[addr_list[cube.address]]
        return self.mem[entry["mem_id"]], entry["offset"] + cube.offset

    @staticmethod
    def _index(c: int, h: int, w: int, cube: Any) -> np.ndarray:
        cc, hh, ww = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
        return ((cc // LANES) * cube.surf_stride + hh * cube.line_stride + ww * ATOM + (cc % LANES) * 2) // 2

    def read(self, addr_list: list[int], cube: Any, channels: int | None = None) -> np.ndarray:
        buf, base = self._buffer(addr_list, cube)
        c = channels or cube.channel
        words = np.frombuffer(buf, dtype="<f2", count=cube.size // 2, offset=base)
        return words[self._index(c, cube.height, cube.width, cube)].astype(np.float32)

    def write(self, addr_list: list[int], cube: Any, value: np.ndarray, channel_offset: int = 0) -> None:
        buf, base = self._buffer(addr_list, cube)
        words = np.frombuffer(buf, dtype="<f2", count=cube.size // 2, offset=base)
        c, h, w = value.shape
        index = self._index(channel_offset + c, h, w, cube)[channel_offset:]
        words[index] = value.astype(np.float16)

    # tasks ----------------------------------------------------------------------------------------------
    def run(self) -> None:
        tasks = {t["id"]: t for t in self.l["task_list"]}
        for submit in self.l["submit_list"]:
            for tid in submit["task_id"] or []:
                task = tasks.get(tid)
                if task is None or task["interface"] not in (1, 2):
                    raise EmulationError(f"submitted task {tid} missing or of an unknown interface")
                try:
                    (self._dla if task["interface"] == 1 else self._emu)(task["address_list"] or [])
                except (ValueError, IndexError, KeyError) as error:  # a malformed loadable: a finding, no traceback
                    raise EmulationError(f"task {tid}: malformed descriptors ({error})") from None

    def _blob(self, addr_list: list[int], index: int) -> bytes:
        entry = self.addresses[addr_list[index]]
        return bytes(self.mem[entry["mem_id"]][entry["offset"]:entry["offset"] + entry["size"]])

    def _dla(self, addr_list: list[int]) -> None:
        net = R.decode(R.Network, self._blob(addr_list, 0))
        deps = self._blob(addr_list, net.dependency_graph_index)
        ops = self._blob(addr_list, net.operation_desc_index)
        surfaces = self._blob(addr_list, net.surface_desc_index)
        luts = self._blob(addr_list, net.lut_data_index) if net.lut_data_index >= 0 and net.num_luts else b""
        n = net.num_operations
        if len(deps) < 36 * n or len(ops) < R.OP_CONTAINER * n or len(surfaces) < R.SURFACE_CONTAINER * n:
            raise EmulationError(f"{n} operations do not fit the task's descriptor blobs")
        decoded, model = [], []
        for i in range(n):
            common = R.decode(R.CommonOp, deps, i * 36)
            if common.op_type not in (1, 2, 3, 4):
                raise EmulationError(f"operation {i}: unit {common.op_type} is not emulated (BDMA, RUBIK)")
            op_cls, surf_cls = R.OP_TYPES[common.op_type]
            op = R.decode(op_cls, ops, i * R.OP_CONTAINER)
            surf = R.decode(surf_cls, surfaces, i * R.SURFACE_CONTAINER)
            decoded.append((common.op_type, op, surf))
            reads, writes = _memories(common.op_type, op, surf, addr_list)
            model.append(Op(i, common.op_type, common.dependency_count,
                            [(c.index, c.event) for c in common.consumers],
                            (common.fused_parent.index, common.fused_parent.event),
                            lut=op.lut_index if common.op_type in (2, 4) else -1,
                            reads_pipe=common.op_type == 2 and surf.src_data.type == MEM_HW, reads=reads,
                            writes=writes))
        units = {1: self._conv, 2: self._sdp, 3: self._pdp, 4: self._cdp}

        def execute(i: int) -> None:
            unit, op, surf = decoded[i]
            units[unit](addr_list, op, surf, luts)

        Scheduler(model, list(net.op_head), execute, set()).run()

    def _conv(self, a: list[int], op: Any, s: Any, _luts: bytes) -> None:
        if op.in_precision != 2 or op.out_precision != 2:
            raise EmulationError("CONV precision other than FP16")
        x = self.read(a, s.src_data)
        w = self._weights(a, op, s)
        k, c, r, kw = w.shape
        x = np.pad(x, ((0, 0), (op.pad_y_top, op.pad_y_bottom), (op.pad_x_left, op.pad_x_right)))
        oh, ow = s.dst_data.height, s.dst_data.width
        if self.hw:
            out = H.cmac_cacc_conv(w, x, op, oh, ow)
            if s.dst_data.type != MEM_HW:
                self.write(a, s.dst_data, out)
            self.pipe = out
            return
        out = np.zeros((k, oh, ow), dtype=np.float32)
        for i in range(r):
            for j in range(kw):
                y0, x0 = i * op.dilation_y, j * op.dilation_x
                window = x[:, y0:y0 + op.conv_stride_y * (oh - 1) + 1:op.conv_stride_y,
                           x0:x0 + op.conv_stride_x * (ow - 1) + 1:op.conv_stride_x]
                out += np.einsum("kc,chw->khw", w[:, :, i, j], window, dtype=np.float32)
        if s.dst_data.type != MEM_HW:
            self.write(a, s.dst_data, out)
        self.pipe = out

    def _weights(self, a: list[int], op: Any, s: Any) -> np.ndarray:
        """The (K, C, R, S) FP16 weights, each read at the address the CSC reads it from (csc.py), K being the
        output cube's channels as the firmware programs WEIGHT_KERNEL (kmd/firmware/conv.c)."""
        k, c, r, kw = s.dst_data.channel, op.kernel_channel_csc, op.kernel_height_csc, op.kernel_width_csc
        if op.weight_format != 0:
            raise EmulationError("CONV weights compressed: not emulated (uncompressed only)")
        extent = weight_extent(k, c, r, kw)
        if op.bytes_per_kernel != c * r * kw * 2:  # the CDMA counts a kernel group done by it, the CSC by its own
            raise EmulationError(f"CONV bytes_per_kernel {op.bytes_per_kernel}, the CSC reads {c * r * kw * 2} "
                                 f"({c} x {r} x {kw} halves)")
        buf, base = self._buffer(a, s.weight_data)
        if s.weight_data.size < extent or base + extent > len(buf) or base % 2:
            raise EmulationError(f"CONV weights of {extent} bytes: the weight cube holds {s.weight_data.size} at "
                                 f"offset {base} of a {len(buf)}-byte memory")
        halves = np.frombuffer(buf, dtype="<f2", count=extent // 2, offset=base)
        return halves[weight_offsets(k, c, r, kw) // 2].astype(np.float32)

    def _sdp_unit(self, a: list[int], unit: Any, cube: Any, x: np.ndarray) -> np.ndarray:
        if not unit.enable:
            return x
        if unit.mode == 0 or unit.type == 0:
            alu = np.float32(np.uint16(unit.alu_operand & 0xFFFF).view(np.float16))
            mul = np.float32(np.uint16(unit.mul_operand & 0xFFFF).view(np.float16))
        elif unit.mode == 1:  # per kernel: one value per channel, read as consecutive halves (the BRDMA)
            buf, base = self._buffer(a, cube)
            channels = x.shape[0]
            if base + 2 * channels > len(buf):
                raise EmulationError("a per-kernel SDP operand runs past its memory")
            alu = mul = np.frombuffer(buf, dtype="<f2", count=channels, offset=base).astype(np.float32).reshape(
                channels, 1, 1)
        else:
            operand = self.read(a, cube)
            alu = mul = operand
        if unit.type in (2, 3):
            add = H.sdp_add if self.hw else np.add
            x = {0: np.maximum, 1: np.minimum, 2: add}[unit.alu_type](x, alu).astype(np.float32)
        if unit.type in (1, 3) and unit.act == 3:  # PReLU: the multiplier applies to negative values
            x = np.where(x < 0, self._sdp_mul(x, mul), x).astype(np.float32)
        elif unit.type in (1, 3):
            x = self._sdp_mul(x, mul)
        if unit.act == 1:
            x = H.sdp_relu(x) if self.hw else np.maximum(x, np.float32(0))
        return x

    def _sdp_mul(self, x: np.ndarray, mul: Any) -> np.ndarray:
        product = np.multiply(x, mul, dtype=np.float32)
        return H.sdp_mul_flush(product) if self.hw else product

    def _sdp(self, a: list[int], op: Any, s: Any, luts: bytes) -> None:
        if op.src_precision != 2 or op.dst_precision != 2:
            raise EmulationError("SDP precision other than FP16")
        if s.src_data.type == MEM_HW:
            if self.pipe is None:
                raise EmulationError("SDP reads the CONV pipe but no convolution ran")
            x = self.pipe
        else:
            x = self.read(a, s.src_data)
        x = self._sdp_unit(a, op.x1_op, s.x1_data, x)
        x = self._sdp_unit(a, op.x2_op, s.x2_data, x)
        x = self._sdp_unit(a, op.y_op, s.y_data, x)
        if op.y_op.enable and op.y_op.act == 2:  # the Y unit's lookup table (sigmoid, tanh)
            if not 0 <= op.lut_index or len(luts) < 700 * (op.lut_index + 1):
                raise EmulationError(f"SDP lookup table {op.lut_index} missing")
            table = R.decode(R.Lut, luts, op.lut_index * 700)
            x = L.lookup(table, x, "sdp-fp17" if self.hw else "ideal").astype(np.float32)
        self.write(a, s.dst_data, x.astype(np.float16).astype(np.float32))

    def _pdp(self, a: list[int], op: Any, s: Any, _luts: bytes) -> None:
        x = self.read(a, s.src_data)
        kh, kw = op.pool_height + 1, op.pool_width + 1
        fill = -np.inf if op.pool_mode == 1 else 0.0
        pads = ((0, 0), (op.pad_top, op.pad_bottom), (op.pad_left, op.pad_right))
        inside = np.pad(np.ones(x.shape, dtype=bool), pads)
        x = np.pad(x, pads, constant_values=fill)
        oh, ow = s.dst_data.height, s.dst_data.width

        def windows(a: np.ndarray) -> np.ndarray:
            return np.stack([a[:, i:i + op.stride_y * (oh - 1) + 1:op.stride_y,
                               j:j + op.stride_x * (ow - 1) + 1:op.stride_x] for i in range(kh) for j in range(kw)])

        stack = windows(x)
        if op.pool_mode == 1:
            out = stack.max(axis=0)
        elif op.pool_mode == 0 and self.hw:
            out = H.pdp_average_fp17(stack.reshape(kh, kw, *stack.shape[1:]),
                                     windows(inside).reshape(kh, kw, *stack.shape[1:]))
        elif op.pool_mode == 0:
            out = stack.sum(axis=0, dtype=np.float32) / np.float32(kh * kw)
        else:
            out = stack.min(axis=0)
        self.write(a, s.dst_data, out)

    def _cdp(self, a: list[int], op: Any, s: Any, luts: bytes) -> None:
        x = self.read(a, s.src_data)
        lut = R.decode(R.Lut, luts, op.lut_index * 700)
        n = op.local_size
        if self.hw and n % 2 == 1 and 3 <= n <= 9:
            ssum = H.cdp_square_sum(x, n)
            self.write(a, s.dst_data, H.fp17(x.astype(np.float64) * L.lookup(lut, ssum, "cdp-fp17")))
            return
        sq = x * x
        c = x.shape[0]
        half_lo, half_hi = (n - 1) // 2, n // 2
        ssum = np.zeros_like(x)
        for ch in range(c):
            ssum[ch] = sq[max(0, ch - half_lo):min(c, ch + half_hi + 1)].sum(axis=0, dtype=np.float32)
        self.write(a, s.dst_data, x * L.lookup(lut, ssum, "ideal").astype(np.float32))

    def _emu(self, addr_list: list[int]) -> None:
        """An EMU task as NVIDIA's emulator runs it (umd/core/src/runtime/Emulator.cpp processTask): the network
        descriptor at address 0, operation and buffer containers at the indices it names."""
        net = R.decode(R.EmuNetwork, self._blob(addr_list, 0))
        for name in ("operation_desc_index", "operation_buffer_desc_index"):
            if not 0 <= getattr(net, name) < len(addr_list):
                raise EmulationError(f"EMU network {name} {getattr(net, name)} outside the task's address list")
        ops = self._blob(addr_list, net.operation_desc_index)
        buffers = self._blob(addr_list, net.operation_buffer_desc_index)
        for i in range(net.num_operations):
            common = R.decode(R.EmuCommon, ops, i * R.EMU_OP_CONTAINER)
            bufs = R.decode(R.EmuBuffers, buffers, i * R.C.sizeof(R.EmuBuffers))
            src, dst = (_emu_cube(b) for b in (bufs.src_data, bufs.dst_data))
            if bufs.src_data.format != 3 or bufs.dst_data.format != 3:
                raise EmulationError(f"EMU operation {i}: buffer format other than FF16")
            x = self.read(addr_list, src)
            if common.op_type == 1:  # softmax over `channel` consecutive halves (executeSoftmax)
                if src.width * src.height != 1 or (dst.channel, dst.width, dst.height) != (src.channel, 1, 1):
                    raise EmulationError(f"EMU softmax {i} on a {src.channel}x{src.height}x{src.width} buffer: "
                                         "NVIDIA's emulator reads `channel` consecutive halves (1 x 1 x C only)")
                e = np.exp(x - x.max())
                self.write(addr_list, dst, (e / e.sum()).astype(np.float32))
            elif common.op_type == 0:  # power: (shift + scale * x) ^ power (executePower)
                power = R.decode(R.EmuPower, ops, i * R.EMU_OP_CONTAINER)
                y = np.power(np.float32(power.shift) + np.float32(power.scale) * x, np.float32(power.power))
                self.write(addr_list, dst, y.astype(np.float32))
            else:
                raise EmulationError(f"EMU operation {common.op_type} unknown to NVIDIA's emulator (softmax, power)")


def _emu_cube(buf: Any) -> Any:
    return R.Cube(type=0, address=buf.addressIndex, offset=buf.addressIndexOffset, size=buf.size, width=buf.width,
                  height=buf.height, channel=buf.channel, line_stride=buf.line_stride, surf_stride=buf.surf_stride)


def _memories(unit: int, op: Any, surf: Any, addr_list: list[int]) -> tuple[list[str], str]:
    """The memories (task address-list index) an operation reads and writes: the data the scheduler orders."""
    def key(cube: Any) -> str:
        return str(cube.address) if cube is not None and 0 <= cube.address < len(addr_list) else ""

    reads, written = R.operand_cubes(unit, op, surf)
    return [r for r in map(key, reads) if r], key(written)


def emulate(data: bytes, inputs: dict[str, np.ndarray], mode: str = "ideal") -> dict[str, np.ndarray]:
    """Run the loadable `data` on `inputs` (by tensor name, NCHW); outputs by tensor name as (C, H, W) FP16."""
    _check_mode(mode)          # before decoding: an unknown mode is refused whatever the bytes
    try:
        decoded = R.read_loadable(data)
    except Exception as error:  # noqa: BLE001 - undecodable bytes are a finding, not a traceback
        raise EmulationError(f"the loadable does not decode: {type(error).__name__}: {error}") from None
    return emulate_read(decoded, inputs, mode)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise EmulationError(f"emulator mode {mode!r} is not built (modes: {', '.join(MODES)})")


def emulate_read(loadable: dict[str, Any], inputs: dict[str, np.ndarray], mode: str = "ideal") -> dict[str, np.ndarray]:
    """`emulate` of a loadable already decoded by `reader.read_loadable` (decoding the flatbuffer was
    about half of a small loadable's submission): a server submitting the same loadable many times
    decodes it once. Every run starts from fresh memory filled from the loadable's blobs; the
    decoded loadable is only read."""
    _check_mode(mode)
    machine = Machine(loadable, mode)
    descs = {d["name"]: d for d in loadable["tensor_desc_list"]}
    for name, value in inputs.items():
        d = descs[name]
        cube = R.Cube(type=0, address=0, offset=d["offset"], size=d["size"], width=d["w"], height=d["h"],
                      channel=d["c"], line_stride=d["stride_1"], surf_stride=d["stride_2"])
        machine.addresses = list(machine.addresses) + [{"mem_id": d["mem_id"], "offset": 0, "size": d["size"]}]
        machine.write([len(machine.addresses) - 1], cube, np.asarray(value, dtype=np.float32).reshape(d["c"], d["h"],
                                                                                                        d["w"]))
        machine.addresses = loadable["address_list"]
    machine.run()
    outputs = {}
    for m in loadable["memory_list"]:
        if m["flags"] & FLAG_OUTPUT:
            d = loadable["tensor_desc_list"][m["tensor_desc_id"]]
            cube = R.Cube(type=0, address=0, offset=d["offset"], size=d["size"], width=d["w"], height=d["h"],
                          channel=d["c"], line_stride=d["stride_1"], surf_stride=d["stride_2"])
            machine.addresses = list(loadable["address_list"]) + [{"mem_id": d["mem_id"], "offset": 0,
                                                                    "size": d["size"]}]
            outputs[d["name"]] = machine.read([len(machine.addresses) - 1], cube).astype(np.float16)
    return outputs
