"""FP16 direct-convolution weights in the order NVIDIA's convolution core reads them.

The CDMA copies the weight bytes into the convolution buffer as they lie in memory; the CSC then
reads them kernel group by kernel group (16 FP16 kernels), in each group channel block by channel
block (64 input channels, the last block holding what is left), in each block kernel row by kernel
row and column by column, and at each kernel tap kernel after kernel, each kernel's channels of the
block consecutive. So one tap of one block is `kernels x channels` halves, and a block is the
group's taps one after the other (nvdla/hw cmod `csc/NV_NVDLA_csc.cpp`
`SendWeightToMacSequencerDirectConvCommon`: `kernel_group_stride`, `block_operation_stride`,
`stripe_operation_stride`, `current_super_atom_size`; the same order in nvdla/sw
`umd/core/src/compiler/include/priv/WeightTranslationUnit.h` `prepWtTrnsOpsForDC`, called by
`ConvCoreNode::translateAuxData`). The whole is zero-padded to a multiple of 128 bytes, the
granule of `D_WEIGHT_BYTES`.

This is the writer's side only: the emulator computes every weight's address from the CSC's
access order itself (pipeline/execute/nvdla/csc.py), so a disagreement between the two shows.
"""

from __future__ import annotations

import numpy as np

KERNELS_PER_GROUP = 16  # FP16 kernels the CMAC computes at once (cmod csc/NV_NVDLA_csc.h KERNEL_PER_GROUP_FP16)
CHANNELS_PER_BLOCK = 64  # FP16 input channels of one atomic operation (ELEMENT_PER_INPUT_ATOM)
WEIGHT_GRANULE = 128  # bytes: D_WEIGHT_BYTES keeps bits 31-7 (kmd/firmware/include/opendla_initial.h)


def direct_conv_bytes(weight: np.ndarray) -> bytes:
    """The FP16 bytes of a (K, C, R, S) weight tensor in the CSC's read order, padded to 128 bytes."""
    if weight.ndim != 4:
        raise ValueError(f"direct-convolution weights are K x C x R x S, not {list(weight.shape)}")
    k, c, _r, _s = weight.shape
    halves = np.asarray(weight, dtype=np.float32).astype("<f2")
    pieces = []
    for k0 in range(0, k, KERNELS_PER_GROUP):
        group = halves[k0:k0 + KERNELS_PER_GROUP]
        for c0 in range(0, c, CHANNELS_PER_BLOCK):
            block = group[:, c0:c0 + CHANNELS_PER_BLOCK]  # (kernels, channels, R, S)
            pieces.append(np.ascontiguousarray(block.transpose(2, 3, 0, 1)).tobytes())  # R, S, kernel, channel
    data = b"".join(pieces)
    return data.ljust(-(-len(data) // WEIGHT_GRANULE) * WEIGHT_GRANULE, b"\0")

