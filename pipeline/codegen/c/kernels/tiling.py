"""Register tiles of the convolution fast paths, chosen by a cycle model at generation time.

A tile is `a` x `b` vector accumulators, one independent output per lane, each lane's sum
in the reference order. Per tap the tile costs, in cycles, the largest of three bounds
(AVX2 without FMA, as on Zen 2/3 and most x86-64 cores since Haswell):

* arithmetic: a*b multiplications and a*b additions on two multiply and two add pipes;
* loads: a + b loads or broadcasts, three per cycle;
* latency: each accumulator receives one dependent addition per tap (3 cycles on Zen 3,
  4 on Intel cores: 3 used; fewer than 6 accumulators leave the add pipes idle).

The cost of a layer is the sum over its tiles, remainders included (a tile cut short at the
edge of the output channels or of a row costs its own, smaller, tile's bound), so a shape
that divides badly picks another tile. At most 8 accumulators across output columns (the
column vectors, a broadcast weight and a product must stay in the 16 vector registers: 12
accumulators spilled and were 15-50 % slower), 12 only as 6 channels x 2 column vectors of one
row over reductions of 64 x 3 x 3 terms or more (WIDE_ACCUMULATORS, an empirical rule), and 12 across output channels (the weight vectors
are operands of the multiplications straight from memory; 12 beat 8 on the strided
convolutions of ResNet-8/18 by 15-20 %), measured with gcc 12 on Zen 3. Ties: the larger tile, then the fewer loads per tap, then
the fewer operand vectors held in registers. The
tile changes which outputs are computed together, never the order of one output's sum.
"""

from __future__ import annotations

MAX_ACCUMULATORS = 8  # across output columns (positions_tile)
# Measured, not derived: across-columns tiles on the phase-split copy of a width-stride-2 input
# ran at ~25 GMAC/s where across-channels tiles ran at ~34 on the same layers (ResNet-8's
# stride-2 3x3 convolutions: 49 vs 35 and 44 vs 33 us), so their modelled cost is scaled up
# (phase_split_factor). A 1-column kernel reads only the even phase, one contiguous half-row per
# tap, and pays no such penalty: ResNet-18's 1x1 stride-2 projection ran 17.4 -> 14.9 us across
# columns while the 3x3 stride-2 layers stayed slower there (201 -> 334 and 61 -> 71 us).
PHASE_SPLIT_FACTOR = 4 / 3
MAX_CHANNEL_ACCUMULATORS = 12  # across output channels (channels_tile)
# Measured, not derived (Zen 3, gcc 12, single layers, same session): with a long reduction (at
# least 64 input channels x 3 x 3 taps) a tile of 6 output channels x 2 column vectors of one row,
# 12 accumulators (with the 2 operands, the broadcast weight and a product: exactly the 16 vector
# registers), ran faster than 4 x 2: ResNet-18's 64-channel 16x16 3x3 layer 248 -> 240 us, the plain
# CNN's 64-channel 32x32 one 1,082 -> 964 us and its 128-channel 16x16 one 1,043 -> 909 us (64 -> 128
# channels at 16x16: 510 -> 516 us, no loss). Each input vector serves 6 channels instead of 4: fewer
# loads and instructions per multiply-accumulate, which the cycle model does not count, so the wide
# tile's modelled cost is scaled by WIDE_FACTOR (it then wins where 64 or 128 channels leave a
# remainder). Not kept elsewhere: 5 x 2 was erratic (128 channels: 1,043 -> 990 us; 64 -> 128: 510 ->
# 572), short reductions slower (ResNet-8's 16-channel 32x32 3x3 layer 72 -> 94 us, a 1x1 over 32
# channels 59 -> 89 us), 6 channels x 2 rows of 1 vector erratic and 5 x 2 rows slower (128 channels
# at 8x8: 226 -> 268 us), 7 x 2 (spills) 248 -> 351 us.
WIDE_ACCUMULATORS = 12
WIDE_FACTOR = 0.95
WIDE_MIN_TAPS = 64 * 3 * 3
ADD_LATENCY = 3


def phase_split_factor(kernel_width: int) -> float:
    """The empirical scale of the across-columns cost on the phase-split copy: PHASE_SPLIT_FACTOR
    for kernels of two columns or more (their taps alternate between the two phases), none for a
    1-column kernel (it reads the even phase only). Measured on Zen 3, gcc 12; not a model."""
    return 1.0 if kernel_width == 1 else PHASE_SPLIT_FACTOR


def tile_cycles(a: int, b: int, b_loads: int = 1) -> float:
    """Cycles per tap of one a x b tile of vector accumulators (0 for an empty tile); each of the
    b operand vectors takes `b_loads` loads (2 and a shuffle for a stride-2 window)."""
    if a <= 0 or b <= 0:
        return 0.0
    return max((2 * a * b + b * (b_loads - 1)) / 4, (a + b * b_loads) / 3, ADD_LATENCY)


def split_cycles(extent: int, block: int, other: int) -> float:
    """Cycles per tap along one axis of `extent` units cut into blocks of `block`, times a tile
    side of `other` on the other axis."""
    return sum(count * tile_cycles(size, other) for size, count in _pieces(extent, block))


def _wide(r: int, t: int, q: int, taps: int) -> bool:
    """The one tile past MAX_ACCUMULATORS: WIDE_ACCUMULATORS as 6 channels x 2 column vectors of a
    row, over reductions of at least WIDE_MIN_TAPS terms (measured, above)."""
    return (r, t, q) == (WIDE_ACCUMULATORS // 2, 1, 2) and taps >= WIDE_MIN_TAPS


def positions_tile(channels: int, vectors: int, rows: int, x_loads: int = 1,
                   taps: int = 0) -> tuple[int, int, int, float]:
    """(output channels, output rows, column vectors, cycles per tap of the layer): vectors across
    output columns, `channels` output channels of a group, `rows` output rows of `vectors` column
    vectors each, `x_loads` loads per input vector, `taps` terms per output's sum. A tile of r
    channels x t rows x q vectors is an r x (t * q) tile."""
    best: tuple[float, int, int, int, int, int] | None = None
    most = max(MAX_ACCUMULATORS, WIDE_ACCUMULATORS)
    for r in range(1, min(channels, most) + 1):
        for t in range(1, min(rows, most // r) + 1):
            for q in range(1, min(vectors, most // (r * t)) + 1):
                wide = _wide(r, t, q, taps)
                if r * t * q > MAX_ACCUMULATORS and not wide:
                    continue
                cost = 0.0
                for rc, nr in _pieces(channels, r):
                    for tc, nt in _pieces(rows, t):
                        for qc, nq in _pieces(vectors, q):
                            cost += nr * nt * nq * tile_cycles(rc, tc * qc, x_loads)
                if wide:
                    cost *= WIDE_FACTOR
                key = (cost, -(r * t * q), r + t * q, t * q, t, r)
                if best is None or key < best:
                    best = key
    cost, _, _, _, t, r = best
    return r, t, best[3] // t, cost


def _pieces(extent: int, block: int) -> list[tuple[int, int]]:
    """(piece size, count): `extent` cut into blocks of `block` and a remainder."""
    return [(size, count) for size, count in ((block, extent // block), (extent % block, 1)) if count and size]


def channels_tile(channels: int, lanes: int, positions: int, whole: bool = False) -> tuple[int, int, float]:
    """(channel vectors, output positions, cycles per tap of the layer): vectors across output
    channels (blocks of vb * lanes channels, zero lanes past the last), `positions` outputs per channel;
    `whole`: only tiles of all the positions (the weights read once), vb = 0 where none fits."""
    best: tuple[float, int, int, int, int] | None = None
    most = -(-channels // lanes)
    for vb in range(1, min(4, most) + 1):
        blocks = -(-channels // (vb * lanes))
        for p in range(positions if whole else 1, min(positions, MAX_CHANNEL_ACCUMULATORS // vb) + 1):
            cost = blocks * split_cycles(positions, p, vb)
            key = (cost, -(vb * p), vb + p, vb, p)
            if best is None or key < best:
                best = key
    if best is None:
        return 0, positions, 0.0
    cost, _, _, vb, p = best
    return vb, p, cost


def transposing_store_cycles(channels: int, positions: int, taps: int) -> float:
    """The store of the across-channels layout in the unit of the tile costs (cycles per tap of
    the layer): each tile's accumulators go through a stack buffer to their channel planes, a
    scalar load and store per output (about a cycle each), paid once per `taps`-term sum. It
    matters only for short reductions: a 3-channel stem stores 32 * 1024 outputs after 27 taps
    (MobileNet's stem: 61 us across channels, 34 us across columns)."""
    return channels * positions / taps
