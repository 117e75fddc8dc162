"""Which code a deployment gets from the targets of its items (light: read when doit lists tasks).

The codegen, execute and compare steps and their doit tasks all dispatch on it, so it is written
once here rather than as a condition in each.
"""

from __future__ import annotations

from typing import Sequence


def code_kind(targets: Sequence[str]) -> str:
    """Which code a deployment whose items have `targets` gets (docs/codegen.md).

    'cuda': one cuda item alone, the CUDA generator's own harness; 'nvdla': one nvdla item
    alone, its loadable run by pipeline/execute/nvdla/run.py; 'program': the C deployment program, whose items are C items, .cu items and C
    proxies of nvdla items (cpu items, cuda items next to cpu items, several cuda items, nvdla
    items next to other items or several nvdla items: their loadables are written as well,
    docs/codegen-nvdla.md);
    'none': no item.
    """
    kinds = set(targets)
    if not kinds:
        return "none"
    if kinds == {"cuda"} and len(targets) == 1:
        return "cuda"
    if kinds == {"nvdla"} and len(targets) == 1:
        return "nvdla"
    return "program" if kinds <= {"cpu", "cuda", "nvdla"} else "none"
