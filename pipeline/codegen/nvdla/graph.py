"""The dependency graph of a DLA task, as NVIDIA's firmware schedules by it (writer side).

The firmware (nvdla/sw kmd/firmware/scheduler.c) keeps two register groups per unit. It programs a
unit's first operation (`op_head`) and the one its `consumers[own unit]` names, and on each completion
the next through the same slot (`dla_dequeue_operation`); an operation is enabled when its
`dependency_count` reaches 0, every event named in a consumer slot decrementing it
(`dla_update_consumers`, which treats the `fused_parent` entry as one more consumer). The rules,
derived from NVIDIA's compiler (umd/core/src/compiler/engine-ast/EngineNode.cpp
`resolveComputeDependencies`, `resolveDataDependencies`, `emitDependencyParams`):

- own-unit successor: every operation names the next operation of its unit (index order is each
  unit's execution order) in its own unit's slot, with OP_COMPLETED when that operation reads its
  output, else OP_PROGRAMMED;
- data edges: the producer of every memory an operation reads names it in the reader's unit slot
  with OP_COMPLETED; a slot already naming an earlier operation of that unit implies the edge (the
  unit runs its operations in order), so one operation per slot suffices;
- a CONV and its fused SDP (the on-the-fly pipe): CONV `consumers[SDP] = {sdp, OP_PROGRAMMED}`,
  SDP `fused_parent = {conv, OP_ENABLED}`: the SDP is enabled once the CONV is programmed, the CONV
  once the SDP is enabled;
- `dependency_count` = the consumer entries naming the operation + the fused-parent entries naming it.

The validator (pipeline/codegen/nvdla/firmware_rules.py) recomputes none of this: it checks the
graph it reads against the firmware's rules; the emulator runs it (pipeline/execute/nvdla/scheduler.py).
"""

from __future__ import annotations

from dataclasses import dataclass

OP_NUM = 6
OP_COMPLETED, OP_PROGRAMMED, OP_ENABLED = 1, 2, 3  # dla_interface.h DLA_EVENT_OP_*
NONE = (-1, 0)


@dataclass
class Dependencies:
    consumers: list[list[tuple[int, int]]]  # per operation, per unit slot: (index, event), (-1, 0) when empty
    fused_parent: list[tuple[int, int]]
    counts: list[int]


def dependency_graph(units: list[int], reads: list[list[str]], writes: list[str], fused: list[int]
                     ) -> Dependencies:
    """The firmware graph of one DLA task's operations (index order = execution order of every unit)."""
    n = len(units)
    consumers = [[NONE] * OP_NUM for _ in range(n)]
    producer_of: dict[str, int] = {}
    producers: list[list[int]] = []
    for j in range(n):
        producers.append(sorted({producer_of[m] for m in reads[j] if m in producer_of}))
        if writes[j]:
            producer_of[writes[j]] = j
    for i in range(n):
        later = next((j for j in range(i + 1, n) if units[j] == units[i]), None)
        if later is not None:
            consumers[i][units[i]] = (later, OP_COMPLETED if i in producers[later] else OP_PROGRAMMED)
    fused_parent = [NONE] * n
    for j, parent in enumerate(fused):
        if parent >= 0:
            consumers[parent][units[j]] = (j, OP_PROGRAMMED)
            fused_parent[j] = (parent, OP_ENABLED)
    for j in range(n):
        for i in producers[j]:
            slot = consumers[i][units[j]]
            if slot == NONE:
                consumers[i][units[j]] = (j, OP_COMPLETED)
            elif slot[0] > j:
                raise AssertionError(f"operation {i}: slot {units[j]} names {slot[0]} after its reader {j}")
    counts = [0] * n
    for i in range(n):
        for index, _ in consumers[i]:
            if index >= 0:
                counts[index] += 1
        if fused_parent[i][0] >= 0:
            counts[fused_parent[i][0]] += 1
    return Dependencies(consumers, fused_parent, counts)
