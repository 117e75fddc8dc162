"""Independent reader of NVDLA loadables: the validator's and the emulator's view of the bytes.

Shares no code with the writer: the flatbuffer is walked with PyPI flatbuffers' Table
(vtable slots in the order of loadable.fbs), and the firmware descriptors of interface
0.12.x are declared again here as ctypes packed structures (sizes asserted).
"""

from __future__ import annotations

import ctypes as C
from typing import Any

from flatbuffers import encode, number_types as N
from flatbuffers.table import Table


class _Packed(C.LittleEndianStructure):
    _pack_ = 1

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, kind in self._fields_:
            value = getattr(self, name)
            if isinstance(value, _Packed):
                value = value.as_dict()
            elif isinstance(value, C.Array):
                value = [v.as_dict() if isinstance(v, _Packed) else int(v) for v in value]
            out[name] = value
        return out


def _s(name: str, fields: list[tuple[str, Any]], size: int | None = None) -> type:
    cls = type(name, (_Packed,), {"_fields_": fields})
    if size is not None:
        assert C.sizeof(cls) == size, f"{name}: {C.sizeof(cls)} != {size}"
    return cls


u8, i8, u16, i16, u32, i32, u64, i64 = C.c_uint8, C.c_int8, C.c_uint16, C.c_int16, C.c_uint32, C.c_int32, \
    C.c_uint64, C.c_int64
Network = _s("Network", [(n, i16) for n in ("operation_desc_index", "surface_desc_index", "dependency_graph_index",
                                             "lut_data_index", "roi_array_index", "surface_index", "stat_list_index",
                                             "reserved1")] + [("op_head", i16 * 6)]
             + [(n, u16) for n in ("num_rois", "num_operations", "num_luts", "num_addresses")]
             + [("input_layer", i16), ("dynamic_roi", u8), ("reserved0", u8)], 40)
Consumer = _s("Consumer", [("index", i16), ("event", u8), ("res", u8)], 4)
CommonOp = _s("CommonOp", [("index", i16), ("roi_index", i8), ("op_type", u8), ("dependency_count", u8),
                           ("reserved0", u8 * 3), ("consumers", Consumer * 6), ("fused_parent", Consumer)], 36)
Cvt = _s("Cvt", [("scale", i16), ("truncate", u8), ("enable", u8), ("offset", i32)], 8)
Cube = _s("Cube", [("type", u16), ("address", i16), ("offset", u32), ("size", u32), ("width", u16),
                   ("height", u16), ("channel", u16), ("reserved0", u16), ("line_stride", u32),
                   ("surf_stride", u32), ("plane_stride", u32)], 32)
BdmaTransfer = _s("BdmaTransfer", [("source_address", i16), ("destination_address", i16)]
                  + [(n, u32) for n in ("line_size", "line_repeat", "source_line", "destination_line",
                                         "surface_repeat", "source_surface", "destination_surface")], 32)
BdmaSurface = _s("BdmaSurface", [("source_type", u8), ("destination_type", u8), ("num_transfers", u16),
                                 ("transfers", BdmaTransfer * 20)], 644)
ConvSurface = _s("ConvSurface", [(n, Cube) for n in ("weight_data", "wmb_data", "wgs_data", "src_data", "dst_data")]
                 + [("offset_u", i64), ("in_line_uv_stride", u32)], 172)
ConvOp = _s("ConvOp", [(n, u8) for n in ("conv_mode", "data_reuse", "weight_reuse", "skip_data_rls",
                                         "skip_weight_rls", "reserved0")]
            + [("entry_per_slice", u16), ("data_format", u8), ("pixel_mapping", u8), ("fetch_grain", u16),
               ("reserved_b", u8 * 8), ("batch", u8), ("weight_format", u8), ("data_bank", u8),
               ("weight_bank", u8), ("batch_stride", u32), ("post_extension", u8), ("pixel_override", u8),
               ("release", u16)]
            + [(n, u16) for n in ("input_width_csc", "input_height_csc", "input_channel_csc", "kernel_width_csc",
                                  "kernel_height_csc", "kernel_channel_csc", "input_width_cmac",
                                  "input_height_cmac")]
            + [("bytes_per_kernel", u32)] + [(n, i16) for n in ("mean_ry", "mean_gu", "mean_bv", "mean_ax")]
            + [(n, u8) for n in ("mean_format", "conv_stride_x", "conv_stride_y", "pad_x_left", "pad_x_right",
                                 "pad_y_top", "pad_y_bottom", "dilation_x", "dilation_y")]
            + [("reserved2", u8 * 2), ("pra_truncate", u8), ("in_precision", u8), ("out_precision", u8),
               ("pad_val", i16), ("in_cvt", Cvt), ("out_cvt", Cvt)], 92)
SdpUnit = _s("SdpUnit", [(n, u8) for n in ("enable", "alu_type", "type", "mode", "act", "shift_value", "truncate",
                                           "precision")]
             + [("alu_operand", i32), ("mul_operand", i32), ("alu_cvt", Cvt), ("mul_cvt", Cvt)], 32)
SdpSurface = _s("SdpSurface", [(n, Cube) for n in ("src_data", "x1_data", "x2_data", "y_data", "dst_data")], 160)
SdpOp = _s("SdpOp", [("src_precision", u8), ("dst_precision", u8), ("lut_index", i16), ("out_cvt", Cvt),
                     ("conv_mode", u8), ("batch_num", u8), ("reserved0", u16), ("batch_stride", u32),
                     ("x1_op", SdpUnit), ("x2_op", SdpUnit), ("y_op", SdpUnit)], 116)
TwoCubes = _s("TwoCubes", [("src_data", Cube), ("dst_data", Cube)], 64)
PdpOp = _s("PdpOp", [(n, u16) for n in ("partial_in_width_first", "partial_in_width_mid", "partial_in_width_last",
                                        "partial_width_first", "partial_width_mid", "partial_width_last")]
           + [(n, u8) for n in ("split_num", "pool_mode", "pool_width", "pool_height", "stride_x", "stride_y",
                                "pad_left", "pad_right", "pad_top", "pad_bottom", "precision", "reserved0")]
           + [("padding_value", i32 * 7)])
CdpOp = _s("CdpOp", [("in_precision", u8), ("out_precision", u8), ("lut_index", i16), ("in_cvt", Cvt),
                     ("out_cvt", Cvt), ("local_size", u8), ("bypass_sqsum", u8), ("bypass_out_mul", u8),
                     ("reserved0", u8)], 24)
RubikOp = _s("RubikOp", [("mode", u8), ("precision", u8), ("stride_x", u8), ("stride_y", u8)], 4)
Lut = _s("Lut", [("linear_exp_table", i16 * 65), ("linear_only_table", i16 * 257), ("linear_exp_offset", i16),
                 ("linear_only_offset", i16)]
         + [(n, u64) for n in ("linear_exp_start", "linear_exp_end", "linear_only_start", "linear_only_end")]
         + [(n, u32) for n in ("linear_exp_underflow_slope", "linear_exp_overflow_slope",
                               "linear_only_underflow_slope", "linear_only_overflow_slope")]
         + [(n, u8) for n in ("hybrid_priority", "underflow_priority", "overflow_priority", "method")], 700)
# NVIDIA's EMU interface (umd/core/src/common/include/priv/emu/emu1/A/emu_interface.h): the network descriptor and
# each buffer descriptor are 256-byte aligned, the common descriptor is not packed (floats at 4 and 8).
EmuNetwork = _s("EmuNetwork", [("operation_desc_index", i16), ("operation_buffer_desc_index", i16),
                               ("num_operations", u16), ("reserved", u8 * 250)], 256)
EmuCommon = _s("EmuCommon", [("op_type", u8), ("reserved0", u8 * 3), ("input_scale_factor", C.c_float),
                             ("output_scale_factor", C.c_float)], 12)
EmuSoftmax = _s("EmuSoftmax", [("common", EmuCommon), ("axis", u8), ("reserved", u8 * 3)], 16)
EmuPower = _s("EmuPower", [("common", EmuCommon), ("power", C.c_float), ("scale", C.c_float), ("shift", C.c_float)],
              24)
EmuBuffer = _s("EmuBuffer", [("addressIndex", i16), ("addressIndexOffset", u32), ("size", u32), ("format", u16),
                             ("width", u16), ("height", u16), ("channel", u16), ("line_stride", u32),
                             ("surf_stride", u32), ("reserved", u8 * 230)], 256)
EmuBuffers = _s("EmuBuffers", [("src_data", EmuBuffer), ("dst_data", EmuBuffer)], 512)
EMU_OP_CONTAINER = 24
OP_CONTAINER, SURFACE_CONTAINER = 116, 644
OP_TYPES = {1: (ConvOp, ConvSurface), 2: (SdpOp, SdpSurface), 3: (PdpOp, TwoCubes), 4: (CdpOp, TwoCubes),
            5: (RubikOp, TwoCubes)}
assert max(C.sizeof(op) for op, _ in OP_TYPES.values()) == OP_CONTAINER
assert max(C.sizeof(s) for _, s in OP_TYPES.values()) < SURFACE_CONTAINER == C.sizeof(BdmaSurface)


def operand_cubes(unit: int, op: Any, surf: Any) -> tuple[list[Any], Any]:
    """(cubes an operation reads from memory, the cube it writes or None) by its descriptors: the source, a CONV's
    weights, an SDP stage's operand when the stage is enabled, has an operation and is not per layer; a CONV writes
    only its pipe. Pipe ends (type HW) are left out: the validator and the emulator order data by these."""
    reads = [surf.src_data] + ([surf.weight_data] if unit == 1 else [])
    if unit == 2:
        for name in ("x1", "x2", "y"):
            sub = getattr(op, f"{name}_op")
            if sub.enable and sub.type != 0 and sub.mode != 0:
                reads.append(getattr(surf, f"{name}_data"))
    written = None if unit == 1 else surf.dst_data
    return [c for c in reads if c.type != 2], (written if written is not None and written.type != 2 else None)


def decode(cls: type, data: bytes, offset: int = 0) -> Any:
    if offset + C.sizeof(cls) > len(data):
        raise ValueError(f"{cls.__name__} at {offset} runs past the blob ({len(data)} bytes)")
    return cls.from_buffer_copy(data, offset)


# -- flatbuffer side ---------------------------------------------------------------------------------------
_KIND = {"u8": N.Uint8Flags, "u16": N.Uint16Flags, "i16": N.Int16Flags, "u32": N.Uint32Flags,
         "i32": N.Int32Flags, "u64": N.Uint64Flags}
SCHEMA: dict[str, list[tuple[str, str]]] = {
    "Loadable": [("version", "version"), ("task_list", "[TaskListEntry]"), ("memory_list", "[MemoryListEntry]"),
                 ("address_list", "[AddressListEntry]"), ("event_list", "[EventListEntry]"), ("blobs", "[Blob]"),
                 ("tensor_desc_list", "[TensorDescListEntry]"), ("reloc_list", "[RelocListEntry]"),
                 ("submit_list", "[SubmitListEntry]")],
    "Blob": [("name", "str"), ("size", "u64"), ("interface", "u32"), ("sub_interface", "u32"),
             ("version", "version"), ("data", "[u8]")],
    "MemoryListEntry": [("id", "u16"), ("domain", "u8"), ("flags", "u16"), ("size", "u64"), ("alignment", "u32"),
                        ("contents", "[str]"), ("offsets", "[u64]"), ("bind_id", "u16"), ("tensor_desc_id", "u16")],
    "EventListEntry": [("id", "u16"), ("type", "u8"), ("target", "u16"), ("val", "u32"), ("op", "u8")],
    "TaskListEntry": [("id", "u16"), ("interface", "u32"), ("instance", "i16"), ("address_list", "[u16]"),
                      ("pre_actions", "[u16]"), ("post_actions", "[u16]")],
    "AddressListEntry": [("id", "u16"), ("mem_id", "u16"), ("offset", "u64"), ("size", "u64")],
    "SubmitListEntry": [("id", "u16"), ("task_id", "[u16]")],
    "TensorDescListEntry": [("name", "str"), ("id", "u16"), ("mem_id", "u16"), ("size", "u64"), ("offset", "u64"),
                            ("data_format", "u8"), ("data_type", "u8"), ("data_category", "u8"),
                            ("pixel_format", "u8"), ("pixel_mapping", "u8"), ("n", "i32"), ("c", "i32"),
                            ("h", "i32"), ("w", "i32")] + [(f"stride_{i}", "u32") for i in range(8)],
    "RelocListEntry": [("address_id", "u16"), ("write_id", "u16"), ("offset", "u64"), ("interface", "u32"),
                       ("sub_interface", "u32"), ("reloc_type", "u8")],
}


def _field(tab: Table, slot: int, kind: str) -> Any:
    off = tab.Offset(4 + 2 * slot)
    if kind == "version":
        return None if not off else [tab.Get(N.Uint8Flags, tab.Pos + off + i) for i in range(3)]
    if kind in _KIND:
        return tab.Get(_KIND[kind], tab.Pos + off) if off else 0
    if not off:
        return None  # absent string or vector
    if kind == "str":
        return tab.String(tab.Pos + off).decode("utf-8")
    start, length = tab.Vector(off), tab.VectorLen(off)
    inner = kind[1:-1]
    if inner == "u8":
        return bytes(tab.Bytes[start:start + length])
    if inner in _KIND:
        width = _KIND[inner].bytewidth
        return [tab.Get(_KIND[inner], start + i * width) for i in range(length)]
    items = []
    for i in range(length):
        pos = start + 4 * i
        target = tab.Indirect(pos)
        if inner == "str":
            items.append(tab.String(pos).decode("utf-8"))
        else:
            items.append(_table(Table(tab.Bytes, target), inner))
    return items


def _table(tab: Table, name: str) -> dict[str, Any]:
    return {field: _field(tab, slot, kind) for slot, (field, kind) in enumerate(SCHEMA[name])}


def read_loadable(data: bytes) -> dict[str, Any]:
    """Every field of the loadable as plain data; absent vectors read as None."""
    buf = bytearray(data)
    root = encode.Get(N.UOffsetTFlags.packer_type, buf, 0)
    return _table(Table(buf, root), "Loadable")
