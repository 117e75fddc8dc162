"""A discrete-event model of NVIDIA's firmware scheduler running one DLA task (the emulator's order of operations).

It follows nvdla/sw kmd/firmware/scheduler.c, reading only the task's blobs:

- `dla_initiate_processors`: each unit submits its `op_head` and dequeues the operation its
  `consumers[own unit]` names (two register groups per unit);
- `dla_submit_operation` / `dla_program_operation`: an operation is programmed into a free group (an
  SDP or CDP whose lookup table differs from the one the other, active, group holds waits: `is_ready`
  in sdp.c and cdp.c), then OP_PROGRAMMED is signalled; it is enabled when its dependency count is 0;
- `dla_update_consumers`: an event decrements the count of every consumer entry waiting for that
  event, and of the `fused_parent` entry; a count reaching 0 enables a programmed operation, an
  enabled one signals OP_ENABLED;
- the hardware runs each unit's programmed operations in order (the groups' consumer pointer); an
  enabled operation at the head completes, except that a CONV completes only while the SDP at the head
  of the SDP unit is enabled and reads its pipe (the fused SDP), and then both complete; operations
  runnable in the same round run concurrently, so each must find what it reads written before the round;
- `dla_op_completion`: OP_COMPLETED is signalled, a pending group is programmed, the next operation of
  the unit is dequeued.

`run` calls back `execute(index)` when an operation completes (the emulator computes it then) and
raises EmulationError NVDLA-E001 when the task stalls before every operation completed, naming each
stuck operation and what it waits for, NVDLA-E002 when an operation completes before an operation
writing what it reads (a missing edge: the hardware would read stale data), NVDLA-E003 when the
graph breaks a rule the firmware enforces while running (a consumer slot naming another unit's
operation, a fused parent that is not a CONV).
Not modelled: timing (every runnable operation completes in one round), CBUF and SRAM, ROIs, batches,
the CDMA weight/data-done events, statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pipeline.diagnostics import Location, PipelineError

OP_COMPLETED, OP_PROGRAMMED, OP_ENABLED = 1, 2, 3
UNIT_NAMES = ("BDMA", "CONV", "SDP", "PDP", "CDP", "RUBIK")
EVENT_NAMES = {OP_COMPLETED: "OP_COMPLETED", OP_PROGRAMMED: "OP_PROGRAMMED", OP_ENABLED: "OP_ENABLED"}
CONV, SDP = 1, 2


class EmulationError(PipelineError):
    """The loadable asks for something the emulator (or the hardware) cannot do, or would not run."""

    def __init__(self, message: str, code: str = "NVDLA-E000", where: str = "") -> None:
        super().__init__(code, message, Location(element=where))


@dataclass
class Op:
    index: int
    unit: int
    count: int
    consumers: list[tuple[int, int]]  # per unit slot: (index, event)
    fused_parent: tuple[int, int]
    lut: int = -1  # lookup table an SDP/CDP programs (-1: none)
    reads_pipe: bool = False  # an SDP whose source is the CONV pipe
    reads: list[str] = field(default_factory=list)
    writes: str = ""
    programmed: bool = False
    enabled: bool = False
    done: bool = False
    pending: bool = False  # prepared in a group, waiting for the other group's lookup table


@dataclass
class Unit:
    groups: list[int] = field(default_factory=list)  # operations in the two groups, in the order they run
    tail: int = -1  # the last operation dequeued (dla_dequeue_operation reads its own-unit consumer)
    lut: dict[int, int] = field(default_factory=dict)  # operation -> lookup table its group holds


def _name(op: Op) -> str:
    return f"{UNIT_NAMES[op.unit]} op {op.index}"


class Scheduler:
    def __init__(self, ops: list[Op], heads: list[int], execute: Callable[[int], None],
                 written_before: set[str]) -> None:
        self.ops, self.heads, self.execute = ops, heads, execute
        self.units = [Unit() for _ in UNIT_NAMES]
        self.written = {m: -1 for m in written_before}  # memory -> the round it was written in
        self.producer = {op.writes: op.index for op in ops if op.writes}
        self.order: list[int] = []  # completion order
        self.delivered: set[tuple[int, int, int]] = set()  # (source, target, event) decrements done

    # firmware side -----------------------------------------------------------------------------------------
    def _op(self, index: int, slot: int, where: str) -> Op:
        if not 0 <= index < len(self.ops) or self.ops[index].unit != slot:
            raise EmulationError(f"{where} names operation {index} in the slot of {UNIT_NAMES[slot]}, which is "
                                 f"{'no operation' if not 0 <= index < len(self.ops) else _name(self.ops[index])} "
                                 "(kmd/firmware/cache.c dla_get_op_desc fails)", "NVDLA-E003", where)
        return self.ops[index]

    def _submit(self, op: Op) -> None:
        unit = self.units[op.unit]
        unit.tail = op.index
        unit.groups.append(op.index)
        if op.lut >= 0 and not self._lut_ready(op):
            op.pending = True
            return
        self._program(op)

    def _lut_ready(self, op: Op) -> bool:
        """sdp.c / cdp.c is_ready: one lookup table is shared by the unit's two groups."""
        unit = self.units[op.unit]
        other = [i for i in unit.groups if i != op.index]
        if not other:
            return True
        held = unit.lut.get(other[0], -1)
        if held == op.lut:
            return True
        if held != -1:
            return False
        return not self.ops[other[0]].enabled

    def _program(self, op: Op) -> None:
        op.pending = False
        op.programmed = True
        if op.lut >= 0:
            self.units[op.unit].lut[op.index] = op.lut
        if op.fused_parent[0] >= 0:
            self._op(op.fused_parent[0], op.unit - 1, f"{_name(op)} fused_parent")
        self._signal(op, OP_PROGRAMMED)
        if op.count == 0:
            self._enable(op)

    def _enable(self, op: Op) -> None:
        if op.enabled or not op.programmed:
            return
        op.enabled = True
        self._signal(op, OP_ENABLED)

    def _signal(self, op: Op, event: int) -> None:
        entries = [(slot, index, ev) for slot, (index, ev) in enumerate(op.consumers) if index >= 0]
        if op.fused_parent[0] >= 0:
            entries.append((op.unit - 1, op.fused_parent[0], op.fused_parent[1]))
        for slot, index, ev in entries:
            if ev != event:
                continue
            target = self._op(index, slot, f"{_name(op)} consumer")
            if target.count == 0:
                raise EmulationError(f"{_name(op)} signals {EVENT_NAMES[event]} to {_name(target)}, whose dependency "
                                     "count is already 0 (scheduler.c dla_update_dependency asserts it is not)",
                                     "NVDLA-E003", _name(op))
            target.count -= 1
            self.delivered.add((op.index, index, event))
            if target.count == 0:
                self._enable(target)

    def _dequeue(self, unit_index: int) -> None:
        unit = self.units[unit_index]
        if unit.tail < 0:
            return
        index = self.ops[unit.tail].consumers[unit_index][0]
        if index >= 0:
            self._submit(self._op(index, unit_index, f"{_name(self.ops[unit.tail])} own-unit consumer"))

    # hardware side ---------------------------------------------------------------------------------------
    def _front(self, unit_index: int) -> Op | None:
        groups = self.units[unit_index].groups
        return self.ops[groups[0]] if groups else None

    def _runnable(self) -> list[Op]:
        ready = []
        for unit_index in range(len(UNIT_NAMES)):
            op = self._front(unit_index)
            if op is None or not op.enabled:
                continue
            if op.unit == CONV:
                sdp = self._front(SDP)
                if sdp is None or not sdp.enabled or not sdp.reads_pipe or sdp.fused_parent[0] != op.index:
                    continue
            if op.unit == SDP and op.reads_pipe:
                conv = self._front(CONV)
                if conv is None or conv.index != op.fused_parent[0] or not conv.enabled:
                    continue
            ready.append(op)
        return ready

    def _complete(self, op: Op, round_no: int) -> None:
        missing = [m for m in op.reads if m in self.producer and self.written.get(m, round_no) >= round_no]
        if missing:
            producers = ", ".join(_name(self.ops[self.producer[m]]) for m in missing)
            raise EmulationError(f"{_name(op)} runs before {producers} wrote what it reads ({', '.join(missing)}): "
                                 "no event orders them", "NVDLA-E002", _name(op))
        self.execute(op.index)
        if op.writes:
            self.written[op.writes] = round_no
        op.done = True
        self.order.append(op.index)
        unit = self.units[op.unit]
        unit.groups.remove(op.index)
        unit.lut.pop(op.index, None)
        self._signal(op, OP_COMPLETED)
        waiting = [self.ops[i] for i in unit.groups if self.ops[i].pending]
        if waiting and self._lut_ready(waiting[0]):
            self._program(waiting[0])
        self._dequeue(op.unit)

    def run(self) -> list[int]:
        """Execute the task; the completion order."""
        for unit_index, head in enumerate(self.heads):
            if head >= 0:
                self._submit(self._op(head, unit_index, f"op_head[{unit_index}]"))
                self._dequeue(unit_index)
        round_no = 0
        while len(self.order) < len(self.ops):
            ready = self._runnable()
            if not ready:
                raise EmulationError(self._stall(), "NVDLA-E001", "DLA task")
            for op in ready:  # runnable together: each must find its data written in an earlier round
                if not op.done:
                    self._complete(op, round_no)
            round_no += 1
        return self.order

    def _stall(self) -> str:
        waits: dict[int, list[str]] = {}
        for op in self.ops:
            if op.done:
                continue
            entries = [(index, ev) for index, ev in op.consumers if index >= 0]
            if op.fused_parent[0] >= 0:
                entries.append(op.fused_parent)
            for index, ev in entries:
                if 0 <= index < len(self.ops) and (op.index, index, ev) not in self.delivered:
                    waits.setdefault(index, []).append(f"{EVENT_NAMES.get(ev, ev)} of {_name(op)}")
        stuck = []
        for op in self.ops:
            if op.done:
                continue
            if not op.programmed and op.index not in self.units[op.unit].groups:
                why = "never dequeued: no operation of its unit names it in consumers[" + UNIT_NAMES[op.unit] + "]" \
                    if not self._reachable(op) else "not yet dequeued (its unit's two groups are busy)"
            elif op.pending:
                why = "prepared, waiting for the other group's lookup table"
            elif not op.enabled:
                why = f"programmed, dependency count {op.count}: waits for " + (
                    ", ".join(waits.get(op.index, [])) or "events no operation will signal")
            elif self._front(op.unit) is not op:
                why = f"enabled, behind {_name(self._front(op.unit))} in its unit"
            elif op.unit == CONV:
                why = "enabled, waits for its fused SDP to run (the pipe)"
            else:
                why = "enabled, waits for its CONV (the pipe)"
            stuck.append(f"{_name(op)}: {why}")
        done = sum(op.done for op in self.ops)
        return (f"the DLA task stalls after {done} of {len(self.ops)} operations (the firmware would wait forever): "
                + "; ".join(stuck))

    def _reachable(self, op: Op) -> bool:
        index = self.heads[op.unit]
        seen = set()
        while 0 <= index < len(self.ops) and index not in seen:
            if index == op.index:
                return True
            seen.add(index)
            index = self.ops[index].consumers[op.unit][0]
        return False
