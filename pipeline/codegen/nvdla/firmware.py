"""Firmware descriptors of NVDLA interface 0.12.x (kmd/firmware/include/dla_interface.h), packed little-endian.

The writer's declaration of the packed C structs: every struct is a field list packed with
`struct`, its size asserted against the header's (network 40, dependency entry 36, op
container 116, surface container 644, LUT 700 bytes). The validator declares the same
layouts again, independently (pipeline.codegen.nvdla.reader, ctypes).
"""

from __future__ import annotations

import struct
from typing import Any

FIRMWARE_VERSION = (0, 12, 0)

OP_BDMA, OP_CONV, OP_SDP, OP_PDP, OP_CDP, OP_RUBIK = range(6)
OP_NUM = 6
MEM_MC, MEM_CV, MEM_HW = 0, 1, 2
PRECISION_FP16 = 2
FORMAT_FEATURE = 36
SDP_OP_NONE, SDP_OP_MUL, SDP_OP_ADD, SDP_OP_BOTH = range(4)
SDP_ALU_MAX, SDP_ALU_MIN, SDP_ALU_SUM = range(3)
SDP_PER_LAYER, SDP_PER_KERNEL, SDP_PER_POINT = range(3)
ACT_NONE, ACT_RELU, ACT_LUT, ACT_PRELU = 0, 1, 2, 3
POOL_AVG, POOL_MAX = 0, 1


class Packed:
    """A packed C struct: fields (name, format char or Packed, count)."""

    def __init__(self, name: str, fields: list[tuple[str, Any, int]], size: int | None = None) -> None:
        self.name, self.fields = name, fields
        self.size = sum((struct.calcsize("<" + f) if isinstance(f, str) else f.size) * n for _, f, n in fields)
        if size is not None and self.size != size:
            raise AssertionError(f"{name}: {self.size} bytes, the firmware interface says {size}")

    def pack(self, values: dict[str, Any] | None = None) -> bytes:
        values = values or {}
        unknown = set(values) - {name for name, _, _ in self.fields}
        if unknown:
            raise KeyError(f"{self.name}: no field {sorted(unknown)}")
        out = bytearray()
        for name, fmt, count in self.fields:
            value = values.get(name)
            items = value if count > 1 else [value]
            if count > 1 and value is None:
                items = [None] * count
            if len(items) != count:
                raise ValueError(f"{self.name}.{name}: {len(items)} values for {count}")
            for item in items:
                out += fmt.pack(item) if isinstance(fmt, Packed) else struct.pack("<" + fmt, item or 0)
        assert len(out) == self.size
        return bytes(out)


def f(name: str, fmt: Any, count: int = 1) -> tuple[str, Any, int]:
    return (name, fmt, count)


NETWORK = Packed("dla_network_desc", [
    f("operation_desc_index", "h"), f("surface_desc_index", "h"), f("dependency_graph_index", "h"),
    f("lut_data_index", "h"), f("roi_array_index", "h"), f("surface_index", "h"), f("stat_list_index", "h"),
    f("reserved1", "h"), f("op_head", "h", OP_NUM), f("num_rois", "H"), f("num_operations", "H"),
    f("num_luts", "H"), f("num_addresses", "H"), f("input_layer", "h"), f("dynamic_roi", "B"),
    f("reserved0", "B")], 40)
CONSUMER = Packed("dla_consumer", [f("index", "h"), f("event", "B"), f("res", "B")], 4)
COMMON_OP = Packed("dla_common_op_desc", [
    f("index", "h"), f("roi_index", "b"), f("op_type", "B"), f("dependency_count", "B"), f("reserved0", "B", 3),
    f("consumers", CONSUMER, OP_NUM), f("fused_parent", CONSUMER)], 36)
CVT = Packed("dla_cvt_param", [f("scale", "h"), f("truncate", "B"), f("enable", "B"), f("offset", "i")], 8)
CUBE = Packed("dla_data_cube", [
    f("type", "H"), f("address", "h"), f("offset", "I"), f("size", "I"), f("width", "H"), f("height", "H"),
    f("channel", "H"), f("reserved0", "H"), f("line_stride", "I"), f("surf_stride", "I"), f("plane_stride", "I")], 32)
BDMA_TRANSFER = Packed("dla_bdma_transfer_desc", [
    f("source_address", "h"), f("destination_address", "h"), f("line_size", "I"), f("line_repeat", "I"),
    f("source_line", "I"), f("destination_line", "I"), f("surface_repeat", "I"), f("source_surface", "I"),
    f("destination_surface", "I")], 32)
BDMA_SURFACE = Packed("dla_bdma_surface_desc", [
    f("source_type", "B"), f("destination_type", "B"), f("num_transfers", "H"), f("transfers", BDMA_TRANSFER, 20)])
CONV_SURFACE = Packed("dla_conv_surface_desc", [
    f("weight_data", CUBE), f("wmb_data", CUBE), f("wgs_data", CUBE), f("src_data", CUBE), f("dst_data", CUBE),
    f("offset_u", "q"), f("in_line_uv_stride", "I")])
CONV_OP = Packed("dla_conv_op_desc", [
    f("conv_mode", "B"), f("data_reuse", "B"), f("weight_reuse", "B"), f("skip_data_rls", "B"),
    f("skip_weight_rls", "B"), f("reserved0", "B"), f("entry_per_slice", "H"), f("data_format", "B"),
    f("pixel_mapping", "B"), f("fetch_grain", "H"), f("reserved_b", "B", 8), f("batch", "B"), f("weight_format", "B"),
    f("data_bank", "B"), f("weight_bank", "B"), f("batch_stride", "I"), f("post_extension", "B"),
    f("pixel_override", "B"), f("release", "H"), f("input_width_csc", "H"), f("input_height_csc", "H"),
    f("input_channel_csc", "H"), f("kernel_width_csc", "H"), f("kernel_height_csc", "H"),
    f("kernel_channel_csc", "H"), f("input_width_cmac", "H"), f("input_height_cmac", "H"),
    f("bytes_per_kernel", "I"), f("mean_ry", "h"), f("mean_gu", "h"), f("mean_bv", "h"), f("mean_ax", "h"),
    f("mean_format", "B"), f("conv_stride_x", "B"), f("conv_stride_y", "B"), f("pad_x_left", "B"),
    f("pad_x_right", "B"), f("pad_y_top", "B"), f("pad_y_bottom", "B"), f("dilation_x", "B"), f("dilation_y", "B"),
    f("reserved2", "B", 2), f("pra_truncate", "B"), f("in_precision", "B"), f("out_precision", "B"),
    f("pad_val", "h"), f("in_cvt", CVT), f("out_cvt", CVT)])
SDP_CVT = Packed("dla_sdp_cvt", [f("alu_cvt", CVT), f("mul_cvt", CVT)], 16)
SDP_OP_UNIT = Packed("dla_sdp_op", [
    f("enable", "B"), f("alu_type", "B"), f("type", "B"), f("mode", "B"), f("act", "B"), f("shift_value", "B"),
    f("truncate", "B"), f("precision", "B"), f("alu_operand", "i"), f("mul_operand", "i"), f("cvt", SDP_CVT)], 32)
SDP_SURFACE = Packed("dla_sdp_surface_desc", [
    f("src_data", CUBE), f("x1_data", CUBE), f("x2_data", CUBE), f("y_data", CUBE), f("dst_data", CUBE)])
SDP_OP = Packed("dla_sdp_op_desc", [
    f("src_precision", "B"), f("dst_precision", "B"), f("lut_index", "h"), f("out_cvt", CVT), f("conv_mode", "B"),
    f("batch_num", "B"), f("reserved0", "H"), f("batch_stride", "I"), f("x1_op", SDP_OP_UNIT),
    f("x2_op", SDP_OP_UNIT), f("y_op", SDP_OP_UNIT)])
PDP_SURFACE = Packed("dla_pdp_surface_desc", [f("src_data", CUBE), f("dst_data", CUBE)])
PDP_OP = Packed("dla_pdp_op_desc", [
    f("partial_in_width_first", "H"), f("partial_in_width_mid", "H"), f("partial_in_width_last", "H"),
    f("partial_width_first", "H"), f("partial_width_mid", "H"), f("partial_width_last", "H"), f("split_num", "B"),
    f("pool_mode", "B"), f("pool_width", "B"), f("pool_height", "B"), f("stride_x", "B"), f("stride_y", "B"),
    f("pad_left", "B"), f("pad_right", "B"), f("pad_top", "B"), f("pad_bottom", "B"), f("precision", "B"),
    f("reserved0", "B"), f("padding_value", "i", 7)])
CDP_SURFACE = Packed("dla_cdp_surface_desc", [f("src_data", CUBE), f("dst_data", CUBE)])
CDP_OP = Packed("dla_cdp_op_desc", [
    f("in_precision", "B"), f("out_precision", "B"), f("lut_index", "h"), f("in_cvt", CVT), f("out_cvt", CVT),
    f("local_size", "B"), f("bypass_sqsum", "B"), f("bypass_out_mul", "B"), f("reserved0", "B")])
RUBIK_SURFACE = Packed("dla_rubik_surface_desc", [f("src_data", CUBE), f("dst_data", CUBE)])
RUBIK_OP = Packed("dla_rubik_op_desc", [f("mode", "B"), f("precision", "B"), f("stride_x", "B"), f("stride_y", "B")])
LUT = Packed("dla_lut_param", [
    f("linear_exp_table", "h", 65), f("linear_only_table", "h", 257), f("linear_exp_offset", "h"),
    f("linear_only_offset", "h"), f("linear_exp_start", "Q"), f("linear_exp_end", "Q"), f("linear_only_start", "Q"),
    f("linear_only_end", "Q"), f("linear_exp_underflow_slope", "I"), f("linear_exp_overflow_slope", "I"),
    f("linear_only_underflow_slope", "I"), f("linear_only_overflow_slope", "I"), f("hybrid_priority", "B"),
    f("underflow_priority", "B"), f("overflow_priority", "B"), f("method", "B")], 700)

OP_CONTAINER_SIZE = max(p.size for p in (CONV_OP, SDP_OP, PDP_OP, CDP_OP, RUBIK_OP))
SURFACE_CONTAINER_SIZE = max(p.size for p in (BDMA_SURFACE, CONV_SURFACE, SDP_SURFACE, PDP_SURFACE, CDP_SURFACE,
                                              RUBIK_SURFACE))
assert OP_CONTAINER_SIZE == 116, OP_CONTAINER_SIZE
assert SURFACE_CONTAINER_SIZE == 644, SURFACE_CONTAINER_SIZE

OP_DESCS = {OP_CONV: CONV_OP, OP_SDP: SDP_OP, OP_PDP: PDP_OP, OP_CDP: CDP_OP, OP_RUBIK: RUBIK_OP}
SURFACE_DESCS = {OP_CONV: CONV_SURFACE, OP_SDP: SDP_SURFACE, OP_PDP: PDP_SURFACE, OP_CDP: CDP_SURFACE,
                 OP_RUBIK: RUBIK_SURFACE}


def op_container(op_type: int, values: dict[str, Any]) -> bytes:
    return OP_DESCS[op_type].pack(values).ljust(OP_CONTAINER_SIZE, b"\0")


def surface_container(op_type: int, values: dict[str, Any]) -> bytes:
    return SURFACE_DESCS[op_type].pack(values).ljust(SURFACE_CONTAINER_SIZE, b"\0")


# The EMU interface (CPU tasks run by NVIDIA's runtime): umd/core/src/common/include/priv/emu/emu1/A/
# emu_interface.h, version 0.0.1 (emu_version.h). The network descriptor and each buffer descriptor are
# aligned to 256 bytes; `emu_common_op_desc` is not packed (its floats at 4 and 8).
EMU_VERSION = (0, 0, 1)
EMU_OP_POWER, EMU_OP_SOFTMAX = 0, 1
EMU_FORMAT_FF16 = 3  # umd/core/src/common/include/priv/EMUInterface.h
EMU_NETWORK = Packed("emu_network_desc", [
    f("operation_desc_index", "h"), f("operation_buffer_desc_index", "h"), f("num_operations", "H"),
    f("reserved", "B", 250)], 256)
EMU_COMMON_OP = Packed("emu_common_op_desc", [
    f("op_type", "B"), f("reserved0", "B", 3), f("input_scale_factor", "f"), f("output_scale_factor", "f")], 12)
EMU_SOFTMAX_OP = Packed("emu_softmax_op_desc", [f("common", EMU_COMMON_OP), f("axis", "B"), f("reserved", "B", 3)], 16)
EMU_POWER_OP = Packed("emu_power_op_desc", [f("common", EMU_COMMON_OP), f("power", "f"), f("scale", "f"),
                                           f("shift", "f")], 24)
EMU_OP_CONTAINER_SIZE = max(EMU_SOFTMAX_OP.size, EMU_POWER_OP.size)
EMU_BUFFER = Packed("emu_buffer_desc", [
    f("addressIndex", "h"), f("addressIndexOffset", "I"), f("size", "I"), f("format", "H"), f("width", "H"),
    f("height", "H"), f("channel", "H"), f("line_stride", "I"), f("surf_stride", "I"), f("reserved", "B", 230)], 256)
EMU_BUFFERS = Packed("emu_softmax_buffer_descs", [f("src_data", EMU_BUFFER), f("dst_data", EMU_BUFFER)], 512)
assert EMU_OP_CONTAINER_SIZE == 24
