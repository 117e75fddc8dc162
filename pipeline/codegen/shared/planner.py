"""The static buffer plan: every tensor of an item at a fixed offset of one arena.

Each buffer is live over an inclusive interval of schedule steps [first, last]: from the
step that writes it to the last step that reads it (-1 for an input the harness writes
before the first step; the number of steps for a graph output the harness reads after
the last). Two buffers whose intervals intersect never share a byte; buffers that are
never live at the same time reuse the same memory. A step's output is live at that step
as are its inputs, so no operation ever writes over one of its own operands.

Placement is greedy best-fit by decreasing size (then first use, then name, so the plan
is deterministic): each buffer goes to the lowest aligned offset where it overlaps no
already placed buffer with an intersecting interval. `check_plan` re-verifies the result
independently of how it was found (tests plant bad plans to see it fail).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.codegen.shared.errors import CodegenError
from pipeline.diagnostics import Location


@dataclass
class Buffer:
    """One arena buffer: `size` in bytes, live over steps [first, last], at `offset`."""

    name: str
    size: int
    first: int
    last: int
    offset: int = -1

    def live_with(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last

    def overlaps(self, other: "Buffer") -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


@dataclass
class Plan:
    buffers: list[Buffer]
    arena_bytes: int
    alignment: int

    def offset_of(self, name: str) -> int:
        for buffer in self.buffers:
            if buffer.name == name:
                return buffer.offset
        raise KeyError(name)


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def plan_buffers(buffers: list[Buffer], alignment: int = 64) -> Plan:
    """Place every buffer (sizes rounded up to `alignment`); returns the plan."""
    placed: list[Buffer] = []
    for buffer in sorted(buffers, key=lambda b: (-b.size, b.first, b.name)):
        size = _align(max(buffer.size, 1), alignment)
        busy = sorted((b.offset, b.offset + _align(max(b.size, 1), alignment)) for b in placed if b.live_with(buffer))
        offset = 0
        best = None
        for start, end in busy:
            if start - offset >= size and (best is None or start - offset < best[1]):
                best = (offset, start - offset)
            offset = max(offset, end)
        buffer.offset = best[0] if best is not None else offset
        placed.append(buffer)
    arena = max((_align(b.offset + max(b.size, 1), alignment) for b in placed), default=0)
    ordered = sorted(placed, key=lambda b: (b.offset, b.first, b.name))
    return Plan(ordered, arena, alignment)


def check_plan(plan: Plan) -> list[str]:
    """Every violated invariant: misaligned or out-of-arena buffers, live buffers sharing bytes."""
    problems = []
    for b in plan.buffers:
        if b.offset < 0 or b.offset % plan.alignment or b.offset + b.size > plan.arena_bytes:
            problems.append(f"buffer {b.name} at offset {b.offset} (+{b.size}) is misaligned or outside the "
                            f"{plan.arena_bytes}-byte arena")
        if b.first > b.last:
            problems.append(f"buffer {b.name} has an empty live interval [{b.first}, {b.last}]")
    ordered = sorted(plan.buffers, key=lambda b: b.offset)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.offset >= a.offset + a.size:
                break
            if a.live_with(b) and a.overlaps(b):
                problems.append(f"buffers {a.name} [{a.first}, {a.last}] and {b.name} [{b.first}, {b.last}] are live "
                                f"at the same time and share bytes {max(a.offset, b.offset)}.."
                                f"{min(a.offset + a.size, b.offset + b.size) - 1}")
    return problems


def checked_plan(buffers: list[Buffer], alignment: int, item: str, nnef_rel: str) -> Plan:
    """`plan_buffers`, then `check_plan` on the result: CODEGEN-E008 at the item's file on the first problem."""
    plan = plan_buffers(buffers, alignment)
    problems = check_plan(plan)
    if problems:
        raise CodegenError("CODEGEN-E008", f"buffer plan of item {item}: {problems[0]}", Location.in_file(nnef_rel))
    return plan
