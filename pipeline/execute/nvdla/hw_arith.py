"""The NVDLA C model's FP16-path arithmetic, for the emulator's `hw-approx` mode.

Each function is one place where the C model (github.com/nvdla/hw, branch nvdlav1, cmod/)
computes differently from the emulator's `ideal` float32 mode, and names the file it follows.
Read from that source, not copied; what it leaves out is listed in docs/codegen-nvdla.md
("Emulator"). Everything here works on float64 arrays holding values the hardware format can
represent, so the rounding steps are explicit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FP17_MANT_BITS = 11  # FP17 = 1 sign, 6 exponent (bias 31), 10 fraction bits (hls/include/nvdla_float.h)
FP17_MIN_NORMAL = 2.0 ** -30
CMAC_ATOMIC_C = 64  # FP16 channels per CMAC atomic operation (cmac/NV_NVDLA_cmac.h PARALLEL_CHANNEL_NUM)
CMAC_GROUP_BITS = 4  # exponent groups of 4 binades: the 5-bit exponent splits into 3 high and 2 low bits
CMAC_DROP_SHIFT = 32  # products shifted this far are dropped (cal_fp16_booth: sum_exp_sft >= 32)
CMAC_BIAS = 50  # a product's mantissa is scaled by 2^(group - 50) (calculation_fp16 checker: exp_new - 50)
_CHUNK = 1 << 21  # elements per (kernel, channel, pixel) block of the convolution, to bound memory


def round_significand(x: np.ndarray, bits: int) -> np.ndarray:
    """Round to `bits` significant bits, to nearest even, with an unbounded exponent."""
    mant, exp = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(np.rint(np.ldexp(mant, bits)), exp - bits)


def fp17(x: np.ndarray) -> np.ndarray:
    """FP17 rounding of the SDP/PDP/CDP datapaths: round to nearest even on 11 significant bits, values below
    the smallest FP17 normal flushed to zero (hls/include/nvdla_float.h FpMantRNE, Fp32ToFp17 with DENORM_NO;
    the FP17 overflow bound, 2^32, is above anything FP16 data reach and not modelled)."""
    out = round_significand(x, FP17_MANT_BITS)
    return np.where(np.abs(out) < FP17_MIN_NORMAL, np.copysign(0.0, out), out)  # SetToZero keeps the sign


def sdp_mul_flush(product: np.ndarray) -> np.ndarray:
    """SDP float32 multiply: a product below the smallest float32 normal becomes zero (FpMul in
    hls/include/nvdla_float.h sets `is_zero` when the result exponent is 0; hls/sdp/sdp_x.cpp multiplies
    in float32 with it), of the product's sign (`SetToZero` keeps the sign `a_sign ^ b_sign`: -3 x +0 is -0).
    Round to nearest even otherwise, as numpy does."""
    product = np.asarray(product, dtype=np.float32)
    return np.where(np.abs(product) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), product),
                    product).astype(np.float32)


def sdp_add(data: np.ndarray, operand: np.ndarray) -> np.ndarray:
    """SDP float32 ALU sum `data + operand`, rounded to nearest even like numpy, except the sign of a zero: an
    exact cancellation keeps the sign of the data (FpAdd in hls/include/nvdla_float.h takes the sign of the
    larger operand, the first one when the magnitudes are equal; FpAlu in hls/sdp/sdp.h passes the data
    first), so -3 + 3 is -0 where IEEE gives +0."""
    total = np.add(data, operand, dtype=np.float32)
    zero = np.copysign(np.float32(0), np.broadcast_to(np.asarray(data, dtype=np.float32), total.shape))
    return np.where(total == 0, zero, total).astype(np.float32)


def sdp_relu(x: np.ndarray) -> np.ndarray:
    """SDP ReLU: a value with the sign bit set becomes +0 (so -0 too), NaN passes (FpRelu in
    hls/include/nvdla_float.h, X_relu in hls/sdp/sdp_x.cpp)."""
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.signbit(x) & ~np.isnan(x), np.float32(0), x).astype(np.float32)


def cacc_to_fp32(value: np.ndarray) -> np.ndarray:
    """The CACC's conversion of its accumulator to the float32 it sends the SDP: the magnitude rounded on
    its guard bit alone, i.e. to nearest with ties away from zero (cacc/NV_NVDLA_cacc.cpp cacc_fp48_to_fp32)."""
    mant, exp = np.frexp(np.asarray(value, dtype=np.float64))
    rounded = np.sign(mant) * np.floor(np.abs(np.ldexp(mant, 24)) + 0.5)
    return np.ldexp(rounded, exp - 24).astype(np.float32)


def fp16_block_fields(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(signed mantissa shifted by the exponent's low 2 bits, exponent's high 3 bits) of FP16 values:
    the operands of the CMAC's block-floating-point multiply (cmac/NV_NVDLA_cmac.h cal_fp16_exp and
    cal_fp16_mul; a subnormal counts as exponent 1 with no implicit bit)."""
    bits = np.asarray(values, dtype=np.float32).astype(np.float16).view(np.uint16).astype(np.int64)
    exponent = (bits >> 10) & 0x1F
    fraction = bits & 0x3FF
    normal = exponent > 0
    mantissa = np.where(normal, fraction | 0x400, fraction) << np.where(normal, exponent & 3, 1)
    return np.where(bits & 0x8000, -mantissa, mantissa), exponent >> 2


# Sign compensation constant the CMAC adds per alignment shift (cmac/NV_NVDLA_cmac.h cal_fp16_booth).
CMAC_SIGN_COMP = {0: 0xAAAB0000, 4: 0xFAAAB000, 8: 0xFFAAAB00, 12: 0xFFFAAAB0, 16: 0xFFFFAAAB, 20: 0xFFFFFAAB,
                  24: 0xFFFFFFAB, 28: 0xFFFFFFFB}
_U32 = 0xFFFFFFFF


def _carry_save(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 3:2 carry-save adder on 32-bit words: (sum, carry shifted left)."""
    return a ^ b ^ c, (((a & b) | (b & c) | (a & c)) << 1) & _U32


def cmac_booth_product(negative: np.ndarray, wt: np.ndarray, dat: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The CMAC's product of two aligned FP16 mantissas, shifted right by `shift` (a multiple of 4): radix-4
    Booth partial products of `wt` (the weight) over `dat` (the data), reduced by carry-save adders to a sum
    and a carry word, each truncated by the shift separately, plus the sign-compensation constant
    (cmac/NV_NVDLA_cmac.h cal_fp16_booth). It is within one unit of floor(+-wt * dat / 2^shift), not always
    equal to it; 0 when the shift reaches 32."""
    negative, wt, dat, shift = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (negative, wt, dat,
                                                                                              shift)))
    reverse = np.where(negative != 0, 7, 0)
    digits = wt << 1
    pp, inv = [], []
    for _ in range(8):
        code = (digits & 7) ^ reverse
        digits = digits >> 2
        pp.append(np.select([(code == 0) | (code == 7), (code == 1) | (code == 2), code == 3, code == 4],
                            [0x10000, dat | 0x10000, (dat << 1) | 0x10000, ~(dat << 1) & 0xFFFF], ~dat & 0xFFFF))
        inv.append(((code >= 4) & (code <= 6)).astype(np.int64))
    rows = [pp[0], (pp[1] << 2) | inv[0], (pp[2] << 4) | (inv[1] << 2), (pp[3] << 6) | (inv[2] << 4), inv[3] << 6,
            pp[4] << 8, (pp[5] << 10) | (inv[4] << 8), (pp[6] << 12) | (inv[5] << 10), (pp[7] << 14) | (inv[6] << 12),
            inv[7] << 14]
    for stage in range(3):  # the C model's Wallace tree: rows 0-4, rows 5-9, then the two pairs left
        if stage == 2:
            rows[2], rows[3] = rows[5], rows[6]
        count, start = (4, 0) if stage == 2 else (5, 5 * stage)
        while count >= 3:
            groups = count // 3
            for j in range(groups):
                rows[start + 2 * j], rows[start + 2 * j + 1] = _carry_save(*rows[start + 3 * j:start + 3 * j + 3])
            for j in range(groups * 3, count):
                rows[start + j - groups] = rows[start + j]
            count -= groups
    capped = np.minimum(shift, 31)
    comp = np.zeros_like(shift)
    for value, constant in CMAC_SIGN_COMP.items():
        comp = np.where(shift == value, constant, comp)
    total = ((rows[0] >> capped) + (rows[1] >> capped) + comp) & _U32
    total = np.where(total >= 1 << 31, total - (1 << 32), total)
    return np.where(shift >= CMAC_DROP_SHIFT, 0, total)


def cmac_atomic_sum(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """One CMAC atomic operation per (kernel, pixel): the products of up to 64 channels aligned to the
    largest exponent group among them (4 bits of shift per group below it; dropped from 32 bits on), each
    as `cmac_booth_product`, summed exactly (cmac/NV_NVDLA_cmac.h calculation_fp16). A zero operand
    contributes nothing (the C model masks it). `w` is (K, C), `x` is (C, P); float64 (K, P) out."""
    wm, wh = fp16_block_fields(w)
    xm, xh = fp16_block_fields(x)
    group = wh[:, :, None] + xh[None, :, :]
    top = group.max(axis=1)
    shift = CMAC_GROUP_BITS * (top[:, None, :] - group)
    product = wm[:, :, None] * xm[None, :, :]  # unshifted, the Booth result is the exact product
    aligned = (shift > 0) & (shift < CMAC_DROP_SHIFT) & (product != 0)
    if aligned.any():
        wt = np.broadcast_to(np.abs(wm)[:, :, None], product.shape)[aligned]
        dat = np.broadcast_to(np.abs(xm)[None, :, :], product.shape)[aligned]
        product[aligned] = cmac_booth_product(product[aligned] < 0, wt, dat, shift[aligned])
    product[shift >= CMAC_DROP_SHIFT] = 0
    return np.ldexp(product.sum(axis=1).astype(np.float64), CMAC_GROUP_BITS * top - CMAC_BIAS)


def cmac_cacc_conv(w: np.ndarray, x: np.ndarray, op: Any, oh: int, ow: int) -> np.ndarray:
    """Direct convolution as CMAC atomic operations (one kernel tap, 64 input channels) accumulated by the
    CACC, then converted to the float32 the SDP receives. The CACC's FP48 accumulator (8-bit exponent,
    40-bit mantissa, rounded per addition; cacc/NV_NVDLA_cacc.cpp cacc_fp16_add) is modelled as float64,
    which keeps at least its 40 bits. `w` is (K, C, R, S), `x` the padded input (C, H, W)."""
    k, c, r, s = w.shape
    acc = np.zeros((k, oh * ow), dtype=np.float64)
    step = max(1, _CHUNK // max(1, k * min(c, CMAC_ATOMIC_C)))
    for i in range(r):
        for j in range(s):
            y0, x0 = i * op.dilation_y, j * op.dilation_x
            window = x[:, y0:y0 + op.conv_stride_y * (oh - 1) + 1:op.conv_stride_y,
                       x0:x0 + op.conv_stride_x * (ow - 1) + 1:op.conv_stride_x].reshape(c, -1)
            for c0 in range(0, c, CMAC_ATOMIC_C):
                wt = w[:, c0:c0 + CMAC_ATOMIC_C, i, j]
                for p0 in range(0, oh * ow, step):
                    acc[:, p0:p0 + step] += cmac_atomic_sum(wt, window[c0:c0 + CMAC_ATOMIC_C, p0:p0 + step])
    return cacc_to_fp32(acc).reshape(k, oh, ow)


def fp17_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """FP17 sum `a + b` (hls/vlibs/fp17_add.cpp, FpAdd<6,10>): rounded once to nearest even, and an exact
    cancellation (or two zeros) keeps the sign of `a`, the first operand, as FpAdd takes the sign of the
    larger operand and of `a` when the magnitudes are equal."""
    a = np.asarray(a, dtype=np.float64)
    total = fp17(a + b)
    return np.where(total == 0, np.copysign(0.0, np.broadcast_to(a, total.shape)), total)


def pdp_average_fp17(windows: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """PDP average in FP17: each window row summed element by element (the line buffer first, the new element
    second), the row sums summed (the new row first, the line buffer second), then multiplied by the
    reciprocal of the width and of the height, each an FP17 rounding (hls_wrapper/pdp_hls_wrapper.cpp
    HLS_PDP_PoolingStage0Calc_FP16_W/_H and Stage1Calc_FP16; the reciprocals are the firmware's
    recip_kernel_size FP16 table, 1/k rounded to FP17). `windows` is (KH, KW, C, OH, OW); `valid` (same shape)
    marks the elements inside the input: a padded position is no element there, only the padding value
    (0 here) added to the sum, which changes nothing but the sign of a zero, so it is left out."""
    kh, kw = windows.shape[:2]
    data = windows.astype(np.float64)
    inside = np.ones(data.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    total = np.zeros(data.shape[2:])
    rows_seen = np.zeros(data.shape[2:], dtype=bool)
    for i in range(kh):
        row = np.zeros(data.shape[2:])
        seen = np.zeros(data.shape[2:], dtype=bool)
        for j in range(kw):
            here = inside[i, j]
            row = np.where(here & seen, fp17_add(row, data[i, j]), np.where(here, data[i, j], row))
            seen |= here
        total = np.where(seen & rows_seen, fp17_add(row, total), np.where(seen, row, total))
        rows_seen |= seen
    return fp17(fp17(total * fp17(1.0 / kw)) * fp17(1.0 / kh))


def cdp_square_sum(x: np.ndarray, local_size: int) -> np.ndarray:
    """CDP sum of squares over a window of 3, 5, 7 or 9 channels in float32: squares (flushed like every
    float32 multiply), then centre-neighbour pairs added outwards, ((x[-1] + x[+1]) + x[0]) + (x[-2] +
    x[+2]) + ... (hls_wrapper/cdp_hls_wrapper.cpp HLS_CDP_lookup_fp16). Channels outside are zero."""
    half = local_size // 2
    sq = sdp_mul_flush(np.asarray(x, dtype=np.float32) ** 2)
    padded = np.concatenate([np.zeros((half, *sq.shape[1:]), np.float32), sq,
                             np.zeros((half, *sq.shape[1:]), np.float32)])
    c = sq.shape[0]

    def at(d: int) -> np.ndarray:
        return padded[half + d:half + d + c]

    total = (at(-1) + at(1)) + at(0)
    for d in range(2, half + 1):
        total = total + (at(-d) + at(d))
    return total.astype(np.float32)


def lut_interpolate_fp17(low: np.ndarray, high: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """CDP LUT interpolation between FP16 samples: the fraction keeps its 16 leading bits (truncated) and
    becomes FP17, high - low is computed in float32 and rounded to FP17, the product and the sum are FP17
    roundings (hls_wrapper/cdp_hls_wrapper.cpp HLS_CDP_lookup_lut; hls/vlibs/uint16_to_fp17.cpp)."""
    frac16 = np.floor(np.asarray(fraction, dtype=np.float64) * 65536.0) / 65536.0
    step = fp17((np.asarray(high, np.float32) - np.asarray(low, np.float32)).astype(np.float64))
    return fp17(fp17(step * fp17(frac16)) + np.asarray(low, np.float64))
