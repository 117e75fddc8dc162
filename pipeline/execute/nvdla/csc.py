"""Where the convolution core finds each FP16 weight: the CSC's direct-convolution access order.

The CDMA copies the weight bytes into the convolution buffer in memory order (cmod
`cdma/NV_NVDLA_cdma.cpp` `DirectConvWeightResponseSequencerCommon`: one 32-byte atom after the
other), so a weight's byte offset in the buffer is its offset in memory. The CSC walks it with
these loops and strides (cmod `csc/NV_NVDLA_csc.cpp` `SendWeightToMacSequencerDirectConvCommon`):

    for kernel group g (16 FP16 kernels; the last group holds K mod 16 when that is not 0)
      for block b (64 input channels; the last block holds C mod 64, `cripple_channel_num`)
        for stripe t (a kernel tap; the data side reads tap t at row t / S, column t mod S:
                      `SendDataToMacSequencerDirectConvCommon`, `kernel_atom_coor_height/width`)
          for kernel n of the group
            the block's channels of kernel n at tap t, consecutive halves

    offset = g * kernel_group_stride + b * block_operation_stride + t * stripe_operation_stride
             + n * current_super_atom_size + 2 * channel
    kernel_group_stride = 16 * R * S * C * 2          (byte_per_kernel * KERNEL_PER_GROUP_FP16)
    block_operation_stride = 64 * 2 * R * S * kernels of this group
    stripe_operation_stride = current_super_atom_size * kernels of this group
    current_super_atom_size = 2 * channels of this block

The offsets are computed here from those strides, loop by loop, and from nothing the writer
(pipeline/codegen/nvdla/weights.py) computes: the two meet only in the loadable's bytes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

KERNEL_PER_GROUP_FP16 = 16
ELEMENT_PER_INPUT_ATOM = 64
ELEMENT_SIZE_FP16 = 2


@lru_cache(maxsize=256)
def weight_offsets(kernels: int, channels: int, height: int, width: int) -> np.ndarray:
    """Byte offset of weight [k, c, r, s] from the start of the weight surface, as a (K, C, R, S) int64 array
    (read-only: cached per shape)."""
    if min(kernels, channels, height, width) < 1:
        raise ValueError(f"a convolution of {kernels} kernels of {channels} x {height} x {width}")
    byte_per_kernel = width * height * channels * ELEMENT_SIZE_FP16
    kernel_group_stride = byte_per_kernel * KERNEL_PER_GROUP_FP16
    kernel_group_num = -(-kernels // KERNEL_PER_GROUP_FP16)
    kernel_per_group_last = kernels % KERNEL_PER_GROUP_FP16
    block_per_channel_num = -(-channels // ELEMENT_PER_INPUT_ATOM)
    cripple_channel_num = channels % ELEMENT_PER_INPUT_ATOM
    stripes = height * width
    offsets = np.full((kernels, channels, height, width), -1, dtype=np.int64)
    for group in range(kernel_group_num):
        last_group = group == kernel_group_num - 1
        kernel_per_group = kernel_per_group_last if last_group and kernel_per_group_last else KERNEL_PER_GROUP_FP16
        block_operation_stride = ELEMENT_PER_INPUT_ATOM * ELEMENT_SIZE_FP16 * stripes * kernel_per_group
        for block in range(block_per_channel_num):
            cripple = cripple_channel_num and block == block_per_channel_num - 1
            block_channels = cripple_channel_num if cripple else ELEMENT_PER_INPUT_ATOM
            super_atom = block_channels * ELEMENT_SIZE_FP16
            stripe_operation_stride = super_atom * kernel_per_group
            lanes = np.arange(block_channels, dtype=np.int64) * ELEMENT_SIZE_FP16
            for stripe in range(stripes):
                row, column = divmod(stripe, width)
                for kernel in range(kernel_per_group):
                    start = (group * kernel_group_stride + block * block_operation_stride
                             + stripe * stripe_operation_stride + kernel * super_atom)
                    k = group * KERNEL_PER_GROUP_FP16 + kernel
                    c0 = block * ELEMENT_PER_INPUT_ATOM
                    offsets[k, c0:c0 + block_channels, row, column] = start + lanes
    if offsets.min() < 0:  # every weight reached once: the loops above cover the whole tensor
        raise AssertionError("a weight the CSC's loops never reach")
    offsets.setflags(write=False)
    return offsets


def weight_extent(kernels: int, channels: int, height: int, width: int) -> int:
    """Bytes the CSC reads from the weight surface (before the 128-byte padding of D_WEIGHT_BYTES)."""
    return kernels * channels * height * width * ELEMENT_SIZE_FP16
