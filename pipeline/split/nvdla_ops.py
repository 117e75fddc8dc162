"""The vocabulary of NVDLA legalization: limits of a configuration, legalized operations, rewrites, refusals.

Shared by the legalizer's first pass (pipeline/split/nvdla_legalize.py, NNEF operations -> LegalOps)
and its rewrite passes (pipeline/split/nvdla_rewrites.py, LegalOps -> LegalOps the units run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.diagnostics import Location
from pipeline.split.errors import SplitError


@dataclass(frozen=True)
class Limits:
    """Unit limits of one NVDLA configuration (nv_full hardware manual / nvdla/sw compiler and firmware)."""

    name: str
    conv_kernel: tuple[int, int] = (1, 32)
    conv_pad: tuple[int, int] = (0, 31)
    conv_stride: tuple[int, int] = (1, 8)
    pool_kernel: tuple[int, int] = (1, 8)
    pool_pad: tuple[int, int] = (0, 7)
    pool_stride: tuple[int, int] = (1, 8)
    lrn_sizes: tuple[int, ...] = (3, 5, 7, 9)
    precisions: tuple[str, ...] = ("fp16",)
    cube_max: int = 8192  # kmd/firmware/common.h DCUBE_MAX_WIDTH/HEIGHT/CHANNEL


NV_FULL = Limits("nv_full")
CONFIGURATIONS = {"nv_full": NV_FULL}

# What an nvdla item can run, in the words of a refusal (issue 29: a refusal names the supported set).
SUPPORTED = ("conv (2-d, groups densified), linear/matmul with constant weights (1x1 or whole-input convolution), "
             "add/sub/mul/div/min/max (constant, per-channel or same-shape operand), relu, leaky_relu/prelu, clamp, "
             "batch_normalization, sigmoid and tanh (SDP lookup table), max/avg pooling and global pooling over H "
             "and W, local_response_normalization across channels, concat along channels, reshape/squeeze/"
             "unsqueeze/transpose that keep the memory layout, permute channels or flatten into a fully connected "
             "layer, softmax over the channels of a 1 x C tensor (the EMU)")


@dataclass
class LegalOp:
    """One operation the NVDLA units can run; tensors are NCHW (rank <= 4 for unit ops)."""

    kind: str  # conv, eltwise, relu, prelu, scale_bias, lut, pool, lrn, softmax, reshape
    inputs: list[str]
    output: str
    shape: list[int]
    attrs: dict[str, Any] = field(default_factory=dict)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    line: int = 0
    text: str = ""
    rules: list[str] = field(default_factory=list)


@dataclass
class Rewrite:
    rule: str
    before: str
    after: str
    line: int


@dataclass
class Legalized:
    config: str
    inputs: dict[str, list[int]]
    outputs: list[str]
    ops: list[LegalOp]
    rewrites: list[Rewrite]
    shapes: dict[str, list[int]]


@dataclass(frozen=True)
class Refusal:
    """Why one operation cannot run on the DLA item: collected, then reported together (SPLIT-E101)."""

    operation: str
    line: int
    why: str
    element: str = ""

    def sentence(self, config: str) -> str:
        return f"operation '{self.operation}' at NNEF line {self.line} cannot run on NVDLA ({config}): {self.why}"


class Refused(Exception):
    """Raised inside one operation's legalization; the legalizer records it and goes on."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.why)
        self.refusal = refusal


def refusal_error(refusals: list[Refusal], config: str) -> SplitError:
    """One SPLIT-E101 naming every operation the item cannot run, its limit, and what the item can run."""
    first = refusals[0]
    if len(refusals) == 1:
        message = first.sentence(config)
    else:
        message = (f"{len(refusals)} operations cannot run on NVDLA ({config}): "
                   + "; ".join(f"'{r.operation}' at NNEF line {r.line}: {r.why}" for r in refusals))
    message += f". An nvdla item runs: {SUPPORTED}"
    return SplitError("SPLIT-E101", message, Location(file="graph.nnef", line=first.line, element=first.element))


def cube(shape: list[int]) -> tuple[int, int, int]:
    """(C, H, W) of a batch-1 tensor as the units see it: dimension 1 is C, the last is W, those between fold
    into H; a rank-1 tensor is C x 1 x 1."""
    dims = [int(d) for d in shape]
    if len(dims) <= 1:
        return (dims[0] if dims else 1, 1, 1)
    if len(dims) == 2:
        return dims[1], 1, 1
    return dims[1], int(np.prod(dims[2:-1])) if len(dims) > 3 else 1, dims[-1]
