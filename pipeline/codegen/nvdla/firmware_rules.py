"""The rules NVIDIA's firmware and runtime enforce on a loadable's task blobs, checked on the bytes (validator side).

Each rule names the nvdla/sw function it mirrors; none is computed by the writer's code (the
validator reads through reader.py only; the bank formulas are recomputed here from the
descriptor, as NVIDIA's compiler defines them). Findings (docs/codegen-nvdla.md):

- NVDLA-V012 the dependency graph the scheduler runs by (kmd/firmware/scheduler.c): every
  consumer slot names an operation of that slot's unit (cache.c `dla_get_op_desc`), a later one
  (index order is each unit's execution order; only a fused parent points back), each unit's
  queue from `op_head` through `consumers[own unit]` reaches every operation of the unit in order
  (`dla_dequeue_operation`; an operation never dequeued is never programmed), `dependency_count`
  equals the consumer entries naming the operation plus the fused-parent entries naming it
  (`dla_update_consumers` treats the fused parent as a consumer), a fused SDP is enabled by its
  CONV's OP_PROGRAMMED and enables the CONV (OP_ENABLED; the CONV completes only while its SDP
  runs), both ends of the pipe are type HW with address -1, and an operation reading what an
  earlier one writes runs after that one completes (an OP_COMPLETED entry, or the unit's order
  after an operation that waits for it).
  Forward edges only, each unit's queue in index order and the fused pair adjacent: the firmware
  cannot stall (the lowest unfinished operation is always programmed and its producers done).
- NVDLA-V013 register fields: every value the firmware writes as `value - 1` or under a field
  mask (conv.c `processor_conv_program`, sdp.c, pdp.c, cdp.c) fits its field in
  kmd/firmware/include/opendla_initial.h; the weight size is a multiple of 128 bytes (the
  D_WEIGHT_BYTES registers drop the low 7 bits).
- NVDLA-V014 convolution buffer: `data_bank` + `weight_bank` within the 16 banks of nv_full, the
  data banks hold the input (`entry_per_slice` x height), the weight banks at least one kernel group,
  `entry_per_slice` as NVIDIA's compiler computes it (engine-ast/ConvCoreNode.cpp `calculateEPS`),
  `release` and `fetch_grain` at least 1, `release` at most the input height.
- NVDLA-V015 EMU tasks as NVIDIA's emulator reads them (umd/core/src/runtime/Emulator.cpp
  `processTask`, emu_interface.h): a 256-byte network descriptor at address 0, operation and
  buffer containers inside the task's list, only the operations it has (softmax, power), buffers in
  FF16 format within their memory, softmax on 1 x 1 x C (it reads `channel` consecutive halves).
- NVDLA-V016 the assertions of `processor_*_program`: CONV output converter scale 1 and offset 0,
  uncompressed weights, a 1 x 1 output packed (line stride 32); PDP output to memory, strides 1-8,
  split count, pooling enums, FP16 padding values 0 (pdp.c); CDP source and destination in memory,
  no precision conversion (cdp.c); RUBIK source and destination in memory (rubik.c);
  `validate_data_cube` (common.c): cubes at most 8192 wide, high and deep.
"""

from __future__ import annotations

from typing import Any, Callable

from pipeline.codegen.nvdla import reader as R

OP_COMPLETED, OP_PROGRAMMED, OP_ENABLED = 1, 2, 3
UNITS = ("BDMA", "CONV", "SDP", "PDP", "CDP", "RUBIK")
CONV, SDP, PDP, CDP, RUBIK = 1, 2, 3, 4, 5
MEM_HW = 2
ATOM = 32
BANKS, ENTRIES_PER_BANK, ENTRY_BYTES, KERNEL_GROUP = 16, 256, 128, 16  # nv_full (compiler TargetConfig.cpp)
CUBE_MAX = 8192
SCHEDULER = "kmd/firmware/scheduler.c"
MAX_ORDERED = 8192  # operations of one task whose data order is checked (bounded time and memory)

Add = Callable[[str, str, str], None]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------------------------------------ graph (V012)
def check_graph(commons: list[Any], surfaces: list[Any], reads: list[list[int]], writes: list[int],
                heads: list[int], where: str, add: Add) -> None:
    n = len(commons)
    units = [c.op_type for c in commons]
    counts = [0] * n
    for i, c in enumerate(commons):
        for slot, entry in enumerate(c.consumers):
            if entry.index < 0:
                continue
            if entry.index >= n or units[entry.index] != slot:
                add("NVDLA-V012", f"{where} op {i}", f"consumers[{UNITS[slot]}] names operation {entry.index}, not an "
                    f"operation of that unit ({SCHEDULER} dla_update_consumers; cache.c dla_get_op_desc fails)")
                continue
            if entry.index <= i:
                add("NVDLA-V012", f"{where} op {i}", f"consumers[{UNITS[slot]}] names operation {entry.index}, not a "
                    "later one: index order is each unit's execution order, a backward edge can stall "
                    f"({SCHEDULER} dla_update_dependency)")
            if entry.event not in (OP_COMPLETED, OP_PROGRAMMED, OP_ENABLED):
                add("NVDLA-V012", f"{where} op {i}", f"consumers[{UNITS[slot]}] waits for event {entry.event}, which "
                    f"no operation signals ({SCHEDULER})")
            counts[entry.index] += 1
        parent = c.fused_parent.index
        if parent >= 0 and 0 <= parent < n:
            counts[parent] += 1
    fused_of = [0] * n
    for c in commons:
        if 0 <= c.fused_parent.index < n:
            fused_of[c.fused_parent.index] += 1
    for i, c in enumerate(commons):
        fused = fused_of[i]
        if c.dependency_count != counts[i]:
            add("NVDLA-V012", f"{where} op {i}", f"dependency_count {c.dependency_count}, but {counts[i] - fused} "
                f"consumer entr{'y' if counts[i] - fused == 1 else 'ies'} and {fused} fused-parent entr"
                f"{'y' if fused == 1 else 'ies'} name it ({SCHEDULER} dla_update_consumers: the count must reach 0 "
                "exactly)")
    _check_queues(units, commons, heads, where, add)
    _check_pipe(commons, surfaces, where, add)
    _check_data_order(commons, units, reads, writes, where, add)


def _check_queues(units: list[int], commons: list[Any], heads: list[int], where: str, add: Add) -> None:
    for unit in range(len(UNITS)):
        ops = [i for i, u in enumerate(units) if u == unit]
        chain, index, seen = [], heads[unit], set()
        while 0 <= index < len(units) and index not in seen and units[index] == unit:
            chain.append(index)
            seen.add(index)
            index = commons[index].consumers[unit].index
        if chain != ops:
            missing = [i for i in ops if i not in chain]
            add("NVDLA-V012", f"{where} {UNITS[unit]} queue",
                f"op_head[{unit}] = {heads[unit]} and consumers[{UNITS[unit]}] reach {chain}, the unit's "
                f"operations are {ops}" + (f": {missing} never dequeued, never programmed" if missing else " (not in index order)")
                + f" ({SCHEDULER} dla_dequeue_operation)")


def _check_pipe(commons: list[Any], surfaces: list[Any], where: str, add: Add) -> None:
    for i, c in enumerate(commons):
        parent = c.fused_parent.index
        src = getattr(surfaces[i], "src_data", None)
        reads_pipe = c.op_type == SDP and src is not None and src.type == MEM_HW
        if parent < 0 and not reads_pipe:
            continue
        w = f"{where} op {i}"
        if c.op_type != SDP or not reads_pipe:
            add("NVDLA-V012", w, f"fused parent {parent} on a {UNITS[c.op_type] if c.op_type < 6 else c.op_type} "
                "that does not read the CONV pipe (only an SDP fuses to a CONV here)")
            continue
        if parent != i - 1 or commons[parent].op_type != CONV:
            add("NVDLA-V012", w, f"SDP reads the CONV pipe but its fused parent is {parent}, not the CONV just before "
                f"it ({SCHEDULER} dla_program_operation: the fused parent must be a CONV)")
            continue
        if c.fused_parent.event != OP_ENABLED:
            add("NVDLA-V012", w, f"fused parent entry waits for event {c.fused_parent.event}: the SDP must enable its "
                f"CONV (OP_ENABLED), the CONV completes only while the SDP runs ({SCHEDULER} dla_update_consumers)")
        entry = commons[parent].consumers[SDP]
        if entry.index != i or entry.event != OP_PROGRAMMED:
            add("NVDLA-V012", w, f"its CONV (op {parent}) names {entry.index} with event {entry.event} in "
                f"consumers[SDP]: a fused SDP is released by its CONV's OP_PROGRAMMED (released on OP_COMPLETED it "
                f"waits for a CONV that waits for it: a deadlock) ({SCHEDULER} dla_op_programmed)")
        conv_dst = surfaces[parent].dst_data
        for name, cube in (("CONV dst_data", conv_dst), ("SDP src_data", src)):
            if cube.type != MEM_HW or cube.address != -1:
                add("NVDLA-V012", w, f"{name} of the pipe: type {cube.type}, address {cube.address} (type HW, address "
                    "-1, as engine-ast/EngineNode.cpp setDataCubeAccessor writes a fused end)")


def _check_data_order(commons: list[Any], units: list[int], reads: list[list[int]], writes: list[int], where: str,
                      add: Add) -> None:
    n = len(commons)
    if n > MAX_ORDERED:
        add("NVDLA-V012", where, f"{n} operations: the data-order check is bounded at {MAX_ORDERED} operations "
            "(not done)")
        return
    # after[k]: the operations that start only after operation k completed (bit j set): its OP_COMPLETED consumers
    # and the next operation of its unit, transitively (all edges point forward: one pass from the end)
    following: dict[int, int] = {}
    next_same = [-1] * n
    for k in range(n - 1, -1, -1):
        next_same[k] = following.get(units[k], -1)
        following[units[k]] = k
    after = [0] * n
    for k in range(n - 1, -1, -1):
        bits = 0
        successors = [e.index for e in commons[k].consumers if e.event == OP_COMPLETED and k < e.index < n]
        successors += [next_same[k]] if next_same[k] >= 0 else []
        for j in successors:
            bits |= (1 << j) | after[j]
        after[k] = bits
    producer: dict[int, int] = {}
    for j in range(n):
        for memory in reads[j]:
            i = producer.get(memory)
            if i is not None and not after[i] >> j & 1:
                add("NVDLA-V012", f"{where} op {j}", f"reads memory {memory}, written by op {i}, but nothing orders it "
                    f"after op {i} completes (no OP_COMPLETED entry from op {i} or from an operation it waits for) "
                    f"({SCHEDULER} dla_update_consumers)")
        if writes[j] >= 0:
            producer[writes[j]] = j


# ---------------------------------------------------------------------------------------- registers (V013)
def _fits(add: Add, where: str, what: str, value: int, low: int, high: int, source: str) -> None:
    if not low <= value <= high:
        add("NVDLA-V013", where, f"{what} {value} outside {low}-{high}: the register field it is written to "
            f"overflows ({source})")


def check_registers(unit: int, op: Any, surf: Any, where: str, add: Add) -> None:
    if unit == CONV:
        src = "conv.c processor_conv_program, opendla_initial.h"
        for what, value, high in (("entry_per_slice", op.entry_per_slice, 4096), ("fetch_grain", op.fetch_grain, 4096),
                                  ("release", op.release, 4096), ("data_bank", op.data_bank, 16),
                                  ("weight_bank", op.weight_bank, 16), ("batch", op.batch, 32),
                                  ("input_width_csc", op.input_width_csc, 8192),
                                  ("input_height_csc", op.input_height_csc, 8192),
                                  ("input_channel_csc", op.input_channel_csc, 8192),
                                  ("kernel_width_csc", op.kernel_width_csc, 32),
                                  ("kernel_height_csc", op.kernel_height_csc, 32),
                                  ("kernel_channel_csc", op.kernel_channel_csc, 8192),
                                  ("input_width_cmac", op.input_width_cmac, 8192),
                                  ("input_height_cmac", op.input_height_cmac, 8192),
                                  ("bytes_per_kernel", op.bytes_per_kernel, 1 << 18),
                                  ("conv_stride_x", op.conv_stride_x, 8), ("conv_stride_y", op.conv_stride_y, 8),
                                  ("dilation_x", op.dilation_x, 32), ("dilation_y", op.dilation_y, 32),
                                  ("dst channel", surf.dst_data.channel, 8192),
                                  ("dst width x height", surf.dst_data.width * surf.dst_data.height, 1 << 21)):
            _fits(add, where, f"CONV {what}", value, 1, high, src)
        for what, value, high in (("pad_x_left", op.pad_x_left, 31), ("pad_y_top", op.pad_y_top, 31),
                                  ("pad_x_right", op.pad_x_right, 63), ("pad_y_bottom", op.pad_y_bottom, 63)):
            _fits(add, where, f"CONV {what}", value, 0, high, src)
        if surf.weight_data.size % ENTRY_BYTES:
            add("NVDLA-V013", where, f"CONV weight size {surf.weight_data.size} is not a multiple of 128 bytes: "
                "D_WEIGHT_BYTES keeps bits 31-7 only, the last weights would not be fetched "
                "(conv.c processor_conv_program, opendla_initial.h CDMA_D_WEIGHT_BYTES_0)")
        for name in ("line_stride", "surf_stride"):
            _fits(add, where, f"CONV dst_data {name}", getattr(surf.dst_data, name), 0, (1 << 24) - ATOM,
                  "conv.c, CACC_D_LINE_STRIDE_0/SURF_STRIDE_0")
    elif unit == SDP:
        _fits(add, where, "SDP batch_num", op.batch_num, 1, 32, "sdp.c processor_sdp_program")
        for name in ("width", "height", "channel"):
            _fits(add, where, f"SDP src_data {name}", getattr(surf.src_data, name), 1, 8192,
                  "sdp.c processor_sdp_program, SDP_D_DATA_CUBE_*")
    elif unit == PDP:
        src = "pdp.c processor_pdp_program"
        for cube_name in ("src_data", "dst_data"):
            for name in ("width", "height", "channel"):
                _fits(add, where, f"PDP {cube_name} {name}", getattr(getattr(surf, cube_name), name), 1, 8192, src)
        _fits(add, where, "PDP split_num", op.split_num, 1, 8192, src)
        if op.split_num == 1:
            _fits(add, where, "PDP partial_in_width_first", op.partial_in_width_first, 1, 1024, src)
            _fits(add, where, "PDP partial_width_first", op.partial_width_first, 1, 1024, src)
    elif unit == CDP:
        _fits(add, where, "CDP local_size", op.local_size, 3, 9, "cdp.c map_local_size, CDP_D_LRN_CFG_0")
        if op.local_size % 2 == 0:
            add("NVDLA-V013", where, f"CDP local_size {op.local_size} is even: map_local_size ((n - 1) / 2 - 1) "
                "gives the same field as the odd size below it (cdp.c)")
        for name in ("width", "height", "channel"):
            _fits(add, where, f"CDP src_data {name}", getattr(surf.src_data, name), 1, 8192,
                  "cdp.c processor_cdp_program")


# ------------------------------------------------------------------------------------- CBUF banks (V014)
def entry_per_slice(channels: int, width: int) -> int:
    """engine-ast/ConvCoreNode.cpp calculateEPS, direct convolution on FP16 feature data (32-byte atoms, 128-byte
    entries)."""
    atoms = _ceil(channels * 2, ATOM)
    last = atoms % (ENTRY_BYTES // ATOM)
    return (atoms // (ENTRY_BYTES // ATOM)) * width + (width if last == 3 else _ceil(last * width, ENTRY_BYTES // ATOM))


def check_banks(op: Any, surf: Any, where: str, add: Add) -> None:
    src = "engine-ast/ConvCoreNode.cpp; conv.c processor_conv_program"
    eps = entry_per_slice(op.input_channel_csc, op.input_width_csc)
    if op.entry_per_slice != eps:
        add("NVDLA-V014", where, f"entry_per_slice {op.entry_per_slice}, but {op.input_channel_csc} FP16 channels of "
            f"width {op.input_width_csc} take {eps} entries per row ({src} calculateEPS)")
    need_data = _ceil(eps * op.input_height_csc, ENTRIES_PER_BANK)
    kernel_bytes = op.kernel_channel_csc * op.kernel_height_csc * op.kernel_width_csc * 2
    need_weight = _ceil(_ceil(kernel_bytes * KERNEL_GROUP, ENTRY_BYTES), ENTRIES_PER_BANK)
    if op.data_bank + op.weight_bank > BANKS:
        add("NVDLA-V014", where, f"data_bank {op.data_bank} + weight_bank {op.weight_bank} exceed the {BANKS} banks of "
            f"nv_full's convolution buffer ({src} splitNodesInternal)")
    if op.data_bank < need_data:
        add("NVDLA-V014", where, f"data_bank {op.data_bank}, the input ({eps} entries x {op.input_height_csc} rows) "
            f"needs {need_data} ({src} calculateTotalBanksForData)")
    if op.weight_bank < need_weight:
        add("NVDLA-V014", where, f"weight_bank {op.weight_bank}, one kernel group of {KERNEL_GROUP} kernels needs "
            f"{need_weight} ({src} calculateMinBanksForWeight)")
    if op.release > op.input_height_csc:
        add("NVDLA-V014", where, f"release {op.release} slices of an input {op.input_height_csc} high ({src})")


# -------------------------------------------------------------------------- processor_*_program (V016)
def check_program(unit: int, op: Any, surf: Any, where: str, add: Add) -> None:
    if unit == CONV:
        src = "kmd/firmware/conv.c processor_conv_program"
        if op.out_cvt.scale != 1 or op.out_cvt.offset != 0:
            add("NVDLA-V016", where, f"CONV out_cvt scale {op.out_cvt.scale}, offset {op.out_cvt.offset}: the "
                f"firmware asserts scale 1 and offset 0 and refuses the task ({src})")
        if op.weight_format != 0:
            add("NVDLA-V016", where, f"CONV weight_format {op.weight_format}: compressed weights need "
                f"weight_compress_support, which nv_full lacks ({src})")
        if op.data_format > 37:
            add("NVDLA-V016", where, f"CONV data_format {op.data_format} beyond map_img_fmt ({src})")
        dst = surf.dst_data
        if dst.width == 1 and dst.height == 1 and dst.line_stride != dst.width * ATOM:
            add("NVDLA-V016", where, f"CONV 1 x 1 output with line stride {dst.line_stride}: asserted {ATOM} ({src})")
    elif unit == PDP:
        src = "kmd/firmware/pdp.c vaildate_pdp_configs, processor_pdp_program"
        if surf.dst_data.type == MEM_HW:
            add("NVDLA-V016", where, f"PDP destination in HW: it has to be MC or CV ({src})")
        if not (1 <= op.stride_x <= 8 and 1 <= op.stride_y <= 8):
            add("NVDLA-V016", where, f"PDP stride {op.stride_x} x {op.stride_y} outside 1-8 ({src} validate_strides)")
        if op.split_num > 8192 or op.pool_width >= 8 or op.pool_height >= 8 or op.pool_mode >= 3 or op.precision >= 3:
            add("NVDLA-V016", where, f"PDP split_num {op.split_num}, pool {op.pool_width + 1} x {op.pool_height + 1}, "
                f"mode {op.pool_mode}, precision {op.precision}: beyond the firmware's maps ({src})")
        if op.precision == 2 and any(v != 0 for v in op.padding_value):
            add("NVDLA-V016", where, f"PDP FP16 padding values {list(op.padding_value)}: asserted 0 ({src})")
        if surf.src_data.type == MEM_HW and op.split_num != 1:
            add("NVDLA-V016", where, f"PDP on the fly with split_num {op.split_num}: asserted 1 ({src})")
        if op.split_num == 1 and op.stride_y:
            overlap = (1, 1, 2, 4, 4, 8, 8, 8, 8)[min(8, _ceil(op.pool_height + 1, op.stride_y))]
            widest = 7 * 1024 * 8 // (overlap * KERNEL_GROUP * 28)
            if surf.dst_data.width > widest:
                add("NVDLA-V016", where, f"PDP output {surf.dst_data.width} wide in one pass: the line buffer holds "
                    f"{widest} for this window and stride (engine-ast/PDPNode.cpp calculateMaxWidth, splitNodes)")
    elif unit == CDP:
        src = "kmd/firmware/cdp.c processor_cdp_program"
        if surf.src_data.type == MEM_HW or surf.dst_data.type == MEM_HW:
            add("NVDLA-V016", where, f"CDP source or destination in HW: invalid memory type ({src})")
        if op.in_precision != op.out_precision:
            add("NVDLA-V016", where, f"CDP precision {op.in_precision} -> {op.out_precision}: the CDP does not convert "
                f"({src})")
    elif unit == RUBIK:
        if surf.src_data.type == MEM_HW or surf.dst_data.type == MEM_HW:
            add("NVDLA-V016", where, "RUBIK source or destination in HW (kmd/firmware/rubik.c processor_rubik_program)")
    cubes = [getattr(surf, name) for name, _ in type(surf)._fields_ if name.endswith("_data")]
    for cube in cubes:
        if max(cube.width, cube.height, cube.channel) > CUBE_MAX or cube.type > MEM_HW:
            add("NVDLA-V016", where, f"cube {cube.channel} x {cube.height} x {cube.width} of type {cube.type}: at most "
                f"{CUBE_MAX} each, type at most HW (kmd/firmware/common.c validate_data_cube)")
            break


# --------------------------------------------------------------------------------------------- EMU (V015)
def check_emu(blob_of: Callable[[int], bytes], alist: list[int], memory_size: Callable[[int], int], where: str,
              add: Add) -> None:
    src = "umd/core/src/runtime/Emulator.cpp processTask"
    net_bytes = blob_of(0)
    if len(net_bytes) < R.C.sizeof(R.EmuNetwork):
        add("NVDLA-V015", where, f"the EMU network descriptor at address 0 has {len(net_bytes)} bytes, "
            f"emu_network_desc has {R.C.sizeof(R.EmuNetwork)} ({src})")
        return
    net = R.decode(R.EmuNetwork, net_bytes)
    for name in ("operation_desc_index", "operation_buffer_desc_index"):
        if not 0 < getattr(net, name) < len(alist):
            add("NVDLA-V015", where, f"{name} {getattr(net, name)} outside the task's {len(alist)} addresses ({src})")
            return
    ops, bufs = blob_of(net.operation_desc_index), blob_of(net.operation_buffer_desc_index)
    if len(ops) < R.EMU_OP_CONTAINER * net.num_operations or \
            len(bufs) < R.C.sizeof(R.EmuBuffers) * net.num_operations or net.num_operations == 0:
        add("NVDLA-V015", where, f"{net.num_operations} EMU operations do not fit the operation ({len(ops)} bytes) and "
            f"buffer ({len(bufs)} bytes) containers ({src})")
        return
    for i in range(net.num_operations):
        w = f"{where} emu op {i}"
        common = R.decode(R.EmuCommon, ops, i * R.EMU_OP_CONTAINER)
        buffers = R.decode(R.EmuBuffers, bufs, i * R.C.sizeof(R.EmuBuffers))
        if common.op_type not in (0, 1):
            add("NVDLA-V015", w, f"operation type {common.op_type}: NVIDIA's emulator has power (0) and softmax (1) "
                f"only ({src}; emu_interface.h)")
        for name in ("src_data", "dst_data"):
            buf = getattr(buffers, name)
            if buf.format != 3:
                add("NVDLA-V015", w, f"{name} format {buf.format}, FF16 (3) expected ({src} getBpe)")
            if not 0 < buf.addressIndex < len(alist):
                add("NVDLA-V015", w, f"{name} address index {buf.addressIndex} outside the task's list ({src})")
            elif buf.addressIndexOffset + buf.size > memory_size(buf.addressIndex):
                add("NVDLA-V015", w, f"{name} [{buf.addressIndexOffset}, +{buf.size}) beyond its memory ({src})")
            if buf.line_stride < buf.width * ATOM or buf.surf_stride < buf.height * buf.line_stride or \
                    buf.size < _ceil(buf.channel, 16) * buf.surf_stride:
                add("NVDLA-V015", w, f"{name} strides {buf.line_stride}/{buf.surf_stride} or size {buf.size} smaller "
                    f"than its {buf.channel} x {buf.height} x {buf.width} cube ({src} getAddrOffset)")
        if common.op_type == 1:
            s, d = buffers.src_data, buffers.dst_data
            if s.width * s.height != 1 or (d.channel, d.width, d.height) != (s.channel, 1, 1):
                add("NVDLA-V015", w, f"softmax on {s.channel} x {s.height} x {s.width}: NVIDIA's emulator reads "
                    "`channel` consecutive halves, a 1 x 1 x C surface only (Emulator.cpp executeSoftmax)")
