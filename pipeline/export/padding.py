"""Window geometry: ONNX's padding rules turned into NNEF's explicit (before, after) pairs.

NNEF's automatic padding (`padding = []`) is never written (HLR-FMT-003); every window
gets the exact pairs ONNX means. For one spatial axis with input n, kernel k, stride s,
dilation d (effective kernel e = (k - 1) d + 1):

- NOTSET      the `pads` attribute: [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
- VALID       (0, 0)
- SAME_UPPER  output ceil(n / s); total = max(0, (ceil(n / s) - 1) s + e - n);
              (total // 2, total - total // 2): the odd unit at the END (bottom/right).
              This is the TF/Keras "same" of the paper's example: pads bottom/right only
              when total = 1, while a PyTorch-style symmetric padding is (1, 1).
- SAME_LOWER  (total - total // 2, total // 2): the odd unit at the START.

Pools with ceil_mode = 1 can have an output extent larger than NNEF's
floor((n + p + q - e) / s) + 1 (the last window hangs over the end). The exporter takes
the output extent ONNX shape inference gives (which also drops a last window that would
start in the end padding) and adds the missing rows to the END padding, with a border that
keeps them out of the result ('ignore'). `window_padding` checks that NNEF's formula then
gives exactly ONNX's extent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

AUTO_PAD_MODES = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def effective(kernel: int, dilation: int) -> int:
    return (kernel - 1) * dilation + 1


def same_padding(n: int, k: int, s: int, d: int, upper: bool) -> tuple[int, int]:
    """SAME_UPPER / SAME_LOWER padding of one axis (output ceil(n / s))."""
    out = -(-n // s)
    total = max(0, (out - 1) * s + effective(k, d) - n)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


def base_padding(auto_pad: str, pads: Sequence[int] | None, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> list[tuple[int, int]]:
    """The (begin, end) pairs ONNX means by `auto_pad` / `pads`, before any ceil-mode extension.

    Raises ValueError for an unknown auto_pad mode or a malformed pads list.
    """
    rank = len(spatial)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return [same_padding(n, k, s, d, auto_pad == "SAME_UPPER")
                for n, k, s, d in zip(spatial, kernel, strides, dilations)]
    if auto_pad == "VALID":
        return [(0, 0)] * rank
    if auto_pad != "NOTSET":
        raise ValueError(f"auto_pad '{auto_pad}' is not one of {', '.join(AUTO_PAD_MODES)}")
    values = list(pads) if pads else [0] * (2 * rank)
    if len(values) != 2 * rank:
        raise ValueError(f"pads {values} must have {2 * rank} values (begin and end per spatial axis)")
    if any(v < 0 for v in values):
        raise ValueError(f"negative pads {values} are not supported")
    return [(values[i], values[i + rank]) for i in range(rank)]


def nnef_extent(n: int, k: int, s: int, d: int, padding: tuple[int, int]) -> int:
    """The output extent NNEF computes for one axis with explicit padding."""
    return (n + padding[0] + padding[1] - effective(k, d)) // s + 1


@dataclass(frozen=True)
class WindowPadding:
    """Explicit per-axis padding, and how much of the end padding only serves ceil mode."""

    pairs: list[tuple[int, int]]
    ceil_extra: list[int]

    @property
    def has_extra(self) -> bool:
        return any(self.ceil_extra)


def window_padding(base: Sequence[tuple[int, int]], spatial: Sequence[int], kernel: Sequence[int],
                   strides: Sequence[int], dilations: Sequence[int], out_spatial: Sequence[int]) -> WindowPadding:
    """Pairs giving exactly the output extents `out_spatial` (ONNX's): `base`, plus end rows if needed.

    Raises ValueError when no non-negative end padding reproduces ONNX's extent.
    """
    pairs, extras = [], []
    for n, k, s, d, (p, q), out in zip(spatial, kernel, strides, dilations, base, out_spatial):
        extra = max(0, (out - 1) * s + effective(k, d) - (n + p + q))
        pair = (p, q + extra)
        if nnef_extent(n, k, s, d, pair) != out:
            raise ValueError(f"padding {pair} gives extent {nnef_extent(n, k, s, d, pair)} on an axis of {n} "
                             f"(kernel {k}, stride {s}, dilation {d}); ONNX says {out}")
        pairs.append(pair)
        extras.append(extra)
    return WindowPadding(pairs, extras)
