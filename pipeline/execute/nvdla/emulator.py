"""Emulator of NVDLA loadables (nv_full, FP16): executes the descriptors of a loadable, not the NNEF.

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

MODES = ("ideal", "hw-approx")
ATOM, LANES = 32, 16
MEM_HW = 2
FLAG_INPUT, FLAG_OUTPUT = 4, 8


class EmulationError(Exception):
    """The loadable asks for something the emulator (or the hardware) cannot do."""


class Machine:
    def __init__(self, loadable: dict[str, Any], mode: str = "ideal") -> None:
        self.l = loadable
        self.hw = mode == "hw-approx"
        blobs = {b["name"]: b["data"] for b in loadable["blobs"]}
        self.mem: list[bytearray] = []
        for m in loadable["memory_list"]:
            buf = bytearray(m["size"])
            for name, offset in zip(m["contents"] or [], m["offsets"] or []):
                data = blobs[name]
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
            for tid in submit["task_id"]:
                task = tasks[tid]
                (self._dla if task["interface"] == 1 else self._emu)(task["address_list"])

    def _blob(self, addr_list: list[int], index: int) -> bytes:
        entry = self.addresses[addr_list[index]]
        return bytes(self.mem[entry["mem_id"]][entry["offset"]:entry["offset"] + entry["size"]])

    def _dla(self, addr_list: list[int]) -> None:
        net = R.decode(R.Network, self._blob(addr_list, 0))
        deps = self._blob(addr_list, net.dependency_graph_index)
        ops = self._blob(addr_list, net.operation_desc_index)
        surfaces = self._blob(addr_list, net.surface_desc_index)
        luts = self._blob(addr_list, net.lut_data_index) if net.lut_data_index >= 0 else b""
        for i in range(net.num_operations):
            common = R.decode(R.CommonOp, deps, i * 36)
            op_cls, surf_cls = R.OP_TYPES[common.op_type]
            op = R.decode(op_cls, ops, i * R.OP_CONTAINER)
            surf = R.decode(surf_cls, surfaces, i * R.SURFACE_CONTAINER)
            {1: self._conv, 2: self._sdp, 3: self._pdp, 4: self._cdp}[common.op_type](addr_list, op, surf, luts)

    def _conv(self, a: list[int], op: Any, s: Any, _luts: bytes) -> None:
        if op.in_precision != 2 or op.out_precision != 2:
            raise EmulationError("CONV precision other than FP16")
        x = self.read(a, s.src_data)
        c, r, k = op.kernel_channel_csc, op.kernel_height_csc, s.dst_data.channel
        kw = op.kernel_width_csc
        buf, base = self._buffer(a, s.weight_data)
        w = np.frombuffer(buf, dtype="<f2", count=k * c * r * kw, offset=base).astype(np.float32).reshape(k, c, r, kw)
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

    def _sdp_unit(self, a: list[int], unit: Any, cube: Any, x: np.ndarray) -> np.ndarray:
        if not unit.enable:
            return x
        if unit.mode == 0:
            alu = np.float32(np.uint16(unit.alu_operand & 0xFFFF).view(np.float16))
            mul = np.float32(np.uint16(unit.mul_operand & 0xFFFF).view(np.float16))
        else:
            operand = self.read(a, cube)
            alu = mul = operand
        if unit.type in (2, 3):
            x = {0: np.maximum, 1: np.minimum, 2: np.add}[unit.alu_type](x, alu).astype(np.float32)
        if unit.type in (1, 3) and unit.act == 3:  # PReLU: the multiplier applies to negative values
            x = np.where(x < 0, self._sdp_mul(x, mul), x).astype(np.float32)
        elif unit.type in (1, 3):
            x = self._sdp_mul(x, mul)
        if unit.act == 1:
            x = np.maximum(x, np.float32(0))
        return x

    def _sdp_mul(self, x: np.ndarray, mul: Any) -> np.ndarray:
        product = np.multiply(x, mul, dtype=np.float32)
        return H.sdp_mul_flush(product) if self.hw else product

    def _sdp(self, a: list[int], op: Any, s: Any, _luts: bytes) -> None:
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
        self.write(a, s.dst_data, x.astype(np.float16).astype(np.float32))

    def _pdp(self, a: list[int], op: Any, s: Any, _luts: bytes) -> None:
        x = self.read(a, s.src_data)
        kh, kw = op.pool_height + 1, op.pool_width + 1
        fill = -np.inf if op.pool_mode == 1 else 0.0
        x = np.pad(x, ((0, 0), (op.pad_top, op.pad_bottom), (op.pad_left, op.pad_right)), constant_values=fill)
        oh, ow = s.dst_data.height, s.dst_data.width
        windows = [x[:, i:i + op.stride_y * (oh - 1) + 1:op.stride_y, j:j + op.stride_x * (ow - 1) + 1:op.stride_x]
                   for i in range(kh) for j in range(kw)]
        stack = np.stack(windows)
        if op.pool_mode == 1:
            out = stack.max(axis=0)
        elif op.pool_mode == 0 and self.hw:
            out = H.pdp_average_fp17(stack.reshape(kh, kw, *stack.shape[1:]))
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
            self.write(a, s.dst_data, H.fp17(x.astype(np.float64) * lut_eval_fp17(lut, ssum)))
            return
        sq = x * x
        c = x.shape[0]
        half_lo, half_hi = (n - 1) // 2, n // 2
        ssum = np.zeros_like(x)
        for ch in range(c):
            ssum[ch] = sq[max(0, ch - half_lo):min(c, ch + half_hi + 1)].sum(axis=0, dtype=np.float32)
        self.write(a, s.dst_data, x * lut_eval(lut, ssum))

    def _emu(self, addr_list: list[int]) -> None:
        blob = self._blob(addr_list, 0)
        count = int.from_bytes(blob[:2], "little")
        for i in range(count):
            op = R.decode(R.EmuOp, blob, 4 + i * 104)
            x = self.read(addr_list, op.src_data)
            if op.op == 1:
                axes = tuple(ax for ax in range(3) if op.axes_mask >> ax & 1)
                e = np.exp(x - x.max(axis=axes, keepdims=True))
                out = e / e.sum(axis=axes, keepdims=True)
                self.write(addr_list, op.dst_data, out)
            elif op.op == 2:
                dims = list(op.dims)[:op.rank]
                perm = list(op.perm)[:op.rank]
                flat = x.reshape(dims).transpose(perm).reshape(-1, op.dst_data.height, op.dst_data.width)
                self.write(addr_list, op.dst_data, flat, op.dst_channel_offset)
            else:
                raise EmulationError(f"EMU operation {op.op} unknown")


def _f32(bits: int) -> float:
    return float(np.uint32(bits & 0xFFFFFFFF).view(np.float32))


def _lut_tables(lut: Any) -> tuple[np.ndarray, np.ndarray, int, float, float, float, float]:
    """(exponential samples, linear samples, exponent offset, linear start, end, exponential start, end)."""
    le = np.array(list(lut.linear_exp_table), dtype=np.int16).view(np.float16).astype(np.float32)
    lo = np.array(list(lut.linear_only_table), dtype=np.int16).view(np.float16).astype(np.float32)
    offset = ((lut.linear_exp_offset & 0xFF) ^ 0x80) - 0x80
    return (le, lo, offset, _f32(lut.linear_only_start), _f32(lut.linear_only_end), _f32(lut.linear_exp_start),
            _f32(lut.linear_exp_end))


def lut_eval(lut: Any, s: np.ndarray) -> np.ndarray:
    """The CDP LUT at `s`: linear-only table below the exponential table's start, then octaves."""
    le, lo, offset, lo_start, lo_end, le_start, le_end = _lut_tables(lut)
    out = np.empty_like(s)
    low = s < le_start
    pos = (np.clip(s[low], lo_start, lo_end) - lo_start) / (lo_end - lo_start) * 256
    i = np.minimum(pos.astype(np.int64), 255)
    out[low] = lo[i] + (lo[i + 1] - lo[i]) * (pos - i)
    mid = ~low & (s < le_end)
    e = np.floor(np.log2(s[mid])).astype(np.int64)
    k = np.clip(e - offset, 0, 63)
    base = np.ldexp(np.float32(1), e)
    frac = (s[mid] - base) / base
    out[mid] = le[k] + (le[k + 1] - le[k]) * frac
    out[s >= le_end] = le[64]
    return out.astype(np.float32)


def lut_eval_fp17(lut: Any, s: np.ndarray) -> np.ndarray:
    """`lut_eval`'s table choice and indices, with the C model's interpolation arithmetic (hw_arith): the
    fraction truncated to 16 bits, FP17 roundings; the result is the FP17 value the CDP multiplies by."""
    le, lo, offset, lo_start, lo_end, le_start, le_end = _lut_tables(lut)
    s64 = np.asarray(s, dtype=np.float64)
    out = np.empty_like(s64)
    low = s64 < le_start
    pos = (np.clip(s64[low], lo_start, lo_end) - lo_start) / (lo_end - lo_start) * 256
    i = np.minimum(np.floor(pos).astype(np.int64), 255)
    out[low] = H.lut_interpolate_fp17(lo[i], lo[i + 1], pos - i)
    mid = ~low & (s64 < le_end)
    mant, e = np.frexp(np.asarray(s, dtype=np.float32)[mid])
    k = np.clip(e - 1 - offset, 0, 63)
    out[mid] = H.lut_interpolate_fp17(le[k], le[k + 1], 2.0 * mant.astype(np.float64) - 1.0)
    out[s64 >= le_end] = le[64]
    return out


def emulate(data: bytes, inputs: dict[str, np.ndarray], mode: str = "ideal") -> dict[str, np.ndarray]:
    """Run the loadable `data` on `inputs` (by tensor name, NCHW); outputs by tensor name as (C, H, W) FP16."""
    _check_mode(mode)          # before decoding: an unknown mode is refused whatever the bytes
    return emulate_read(R.read_loadable(data), inputs, mode)


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
