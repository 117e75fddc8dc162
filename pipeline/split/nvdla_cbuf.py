"""The on-chip buffers of nv_full: the convolution buffer (CBUF) banks a convolution's input data and weights need,
and the PDP's line buffer (how wide a pooling output can be without a width split).

The formulas are NVIDIA's compiler's (nvdla/sw umd/core/src/compiler/engine-ast/ConvCoreNode.cpp:
`calculateEPS`, `calculateTotalBanksForData`, `calculateTotalBanksForWeight`,
`calculateMinBanksForWeight`, and the order of preference of `splitNodesInternal`), with nv_full's
buffer geometry (TargetConfig.cpp, "nv_full": 16 banks of 256 entries of 128 bytes, 32-byte memory
atoms, 32 kernels per atomic-K, so 16 FP16 kernels per kernel group). Legalization refuses or splits a
convolution that no allocation fits; the loadable writer fills the CONV descriptor's
`entry_per_slice`, `data_bank` and `weight_bank` from the same functions, and the validator
(pipeline/codegen/nvdla/firmware_rules.py) recomputes them independently from the descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass

BANKS = 16
ENTRIES_PER_BANK = 256
ENTRY_BYTES = 128
ATOM_BYTES = 32
FP16_BYTES = 2
KERNELS_PER_GROUP = 16  # atomic-K 32 halved for 2-byte elements (calculateMinBanksForWeight: kpg)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def entry_per_slice(channels: int, width: int) -> int:
    """CBUF entries one input row (all channels) occupies, direct convolution on feature data (calculateEPS)."""
    atoms_per_entry = ENTRY_BYTES // ATOM_BYTES
    c_atoms = _ceil(channels * FP16_BYTES, ATOM_BYTES)
    last = c_atoms % atoms_per_entry
    whole = (c_atoms // atoms_per_entry) * width
    partial = width if last == 3 else _ceil(last * width, atoms_per_entry)
    return whole + partial


def data_banks(channels: int, height: int, width: int) -> int:
    """Banks for the whole input surface (calculateTotalBanksForData)."""
    return _ceil(entry_per_slice(channels, width) * height, ENTRIES_PER_BANK)


def weight_banks(kernels: int, channels: int, kh: int, kw: int) -> int:
    """Banks for every kernel's weights, the byte count rounded up to an entry (calculateTotalBanksForWeight)."""
    size = _ceil(kernels * channels * kh * kw * FP16_BYTES, ENTRY_BYTES) * ENTRY_BYTES
    return _ceil(size // ENTRY_BYTES, ENTRIES_PER_BANK)


def min_weight_banks(channels: int, kh: int, kw: int) -> int:
    """Banks for one kernel group of 16 kernels (calculateMinBanksForWeight)."""
    size = _ceil(channels * kh * kw * KERNELS_PER_GROUP * FP16_BYTES, ENTRY_BYTES) * ENTRY_BYTES
    return _ceil(size // ENTRY_BYTES, ENTRIES_PER_BANK)


def weight_bytes(kernels: int, channels: int, kh: int, kw: int) -> int:
    """The weight surface's size as the CONV reads it: rounded up to 128 bytes (the D_WEIGHT_BYTES register
    of CDMA and CSC has no bits below 7: kmd/firmware/include/opendla_initial.h, write mask 0xffffff80)."""
    return _ceil(kernels * channels * kh * kw * FP16_BYTES, ENTRY_BYTES) * ENTRY_BYTES


@dataclass(frozen=True)
class Allocation:
    data_banks: int
    weight_banks: int
    mode: str  # full weights, ping-pong kernel groups, one kernel group


def allocate(channels: int, height: int, width: int, kernels: int, kh: int, kw: int) -> Allocation | None:
    """The banks a convolution gets, in splitNodesInternal's order of preference (whole input with all
    weights, with two kernel groups in ping-pong, with one kernel group); None when none fits: the
    convolution must be split (or refused)."""
    d = data_banks(channels, height, width)
    total, one = weight_banks(kernels, channels, kh, kw), min_weight_banks(channels, kh, kw)
    if d + total <= BANKS:
        return Allocation(d, total, "full weights")
    if d + 2 * one <= BANKS:
        return Allocation(d, 2 * one, "two kernel groups (ping-pong)")
    if d + one <= BANKS:
        return Allocation(d, one, "one kernel group")
    return None


PDP_BUFFER_BITS = 7 * 1024 * 8  # the PDP's line buffer (engine-ast/PDPNode.cpp calculateMaxWidth: PDP_BUF_SIZE)
PDP_OVERLAP_LINES = (1, 1, 2, 4, 4, 8, 8, 8, 8)  # rtlOverlapLines, by ceil(window height / stride)
PDP_FP16_ELEMENT_BITS = 28


def pdp_max_width(window_height: int, stride_y: int) -> int:
    """The widest pooling output one PDP pass holds (calculateMaxWidth, FP16: 16 kernels per group, 28 bits per
    element); a wider output needs the compiler's width split (`pdpHWSplitWidth`), which is not built here."""
    overlap = PDP_OVERLAP_LINES[_ceil(window_height, stride_y)]
    return PDP_BUFFER_BITS // (overlap * KERNELS_PER_GROUP * PDP_FP16_ELEMENT_BITS)
