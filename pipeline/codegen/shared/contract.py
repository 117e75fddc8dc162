"""The item contract of the deployment program: what an item emitter hands the program.

The deployment program (pipeline/codegen/program) owns the item table, the sync variables, the
runtime and the harness; each item, whatever its target, is one source file whose
`nnef_item_<X>_run(epoch)` follows the item's schedule with the runtime's sync objects (and,
when the item has resources of its own, an init function the harness calls once before the first
inference). An emitter returns an ItemCode; the names below are the ones the program's tables,
the runtime (nnef_sync.h) and every item spell alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def item_file(item: str) -> str:
    """An item's source file in the program (a C item's; other targets name theirs in ItemCode.source_file)."""
    return f"nnef_item_{item}.c"


def weights_file(item: str) -> str:
    return f"nnef_weights_{item}.h"


def weights_blob_file(item: str) -> str:
    return f"nnef_weights_{item}.bin"


# Items with more float parameters than this keep them in a binary file linked by the
# assembler (.incbin) instead of C initializers: gcc spends minutes and gigabytes parsing
# millions of float literals, the assembler copies bytes. Smaller items stay readable text.
# The C and the CUDA emitters read it at generation time (tests lower it).
BLOB_MIN_FLOATS = 1 << 16


def sync_buffer(var: str) -> str:
    return f"nnef_syncbuf_{var}"


def sync_object(var: str) -> str:
    return f"nnef_sync_{var}"


def barrier_step(item_index: int, step_index: int, barrier_id: int) -> tuple[str, str]:
    """The two lines of a barrier step in a run function (C, CUDA and DLA-proxy items alike): the
    step comment and the host barrier under NNEF_STEP (the runtime's trace events and noise)."""
    return (f"/* step {step_index}: barrier {barrier_id} */",
            f"NNEF_STEP({item_index}, {step_index}, epoch, nnef_barrier({barrier_id}));")


@dataclass
class TraceEntry:
    nnef_line: int
    instruction: str
    code_file: str             # file name inside the item folder, or a deployment-level file
    first: int
    last: int


@dataclass
class ItemCode:
    """What generating one item produced."""

    name: str
    source: str
    weights: str | None        # the weights header (None: an item keeping its parameters in its source)
    entries: list[TraceEntry]
    memory_map: dict[str, Any]
    weight_records: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    inputs: dict[str, str]     # external name -> C address expression of its arena location
    outputs: dict[str, str]    # graph output -> C address expression of its location
    sends: list[str]
    gets: list[str]
    weights_blob: bytes | None = None  # the parameters as little-endian binary32, when linked as binary
    source_file: str = ""      # the item's source file name (default item_file(name), a .c)
    language: str = "c"        # "c" (gcc) or "cuda" (nvcc on the device, g++ for the host emulation)
    init: str | None = None    # the item's init function the harness calls once before the first inference
    support_files: dict[str, str] = field(default_factory=dict)  # deployment-level files the source includes

