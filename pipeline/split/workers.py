"""Executable split semantics: the items as concurrent workers exchanging messages.

Each item is a thread that runs its static schedule (schedule.json) over its own flat
graph (its item file, re-read by the checker), with the kernels of the reference
semantics (pipeline.semantics): a compute step runs the item's instruction with that
result; `send` puts a read-only copy of the value on one queue per (sync variable,
reader), so items never share memory; `get` takes it from the reader's queue. Sync modes:

- event: a get blocks until the writer has sent (the sync semantics of the extension);
- barrier: items meet at `threading.Barrier`s at the schedule's barrier steps, and a get
  must find its value already there; an empty queue is a schedule that violates its
  own barrier placement (SPLIT-E040), never a wait.

Before running, the schedule is matched against the item files: its compute steps are
the item's computing instructions, each once; every send/get step is a send_var/get_var
of the file with the same variable, value and items. The outputs are compared byte for
byte with the unsplit interpreter (`compare_with_reference`): HLR-SPL-003.

The observed events (start/end of every step, per item, with a monotonic clock shared
by the threads) are kept in `ExecutionResult.trace`; `trace_document` writes them in the
trace format of the Petri analysis (docs/petri.md), with or without the times.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pipeline.nnef.graph import Graph, Operation
from pipeline.semantics.interpreter import DECLARATIONS, bind_declaration, run_operation
from pipeline.split.errors import SplitError
from pipeline.split.emit import BINDINGS, COMMUNICATION, first_result
from pipeline.split.plan import SCHEMA_VERSION, Schedule
from pipeline.split.splitter import Step

DEFAULT_TIMEOUT_S = 120.0
_POLL_S = 0.05


@dataclass
class ExecutionResult:
    """Outputs by name, and per item the observed events {event, step, t (ns), seq}."""

    outputs: dict[str, np.ndarray]
    trace: dict[str, list[dict[str, int | str]]]


def trace_document(trace: Mapping[str, Sequence[Mapping[str, Any]]], times: bool = False) -> dict[str, Any]:
    """The trace in the format of the Petri trace replay (pipeline/petri/trace.py):
    {"schema_version": 1, "clock": ..., "items": {ITEM: [{"event", "step"[, "t"]}]}}.

    Without `times` (clock "per-item", no "t") the document depends only on the schedule
    and is byte-identical across runs, as artifacts must be; with them (clock "shared": the
    threads read one monotonic clock, ns since the run started) it is one observation.
    """
    items = {}
    for item, events in trace.items():
        items[item] = [{"event": e["event"], "step": e["step"], **({"t": e["t"]} if times else {})} for e in events]
    return {"schema_version": SCHEMA_VERSION, "clock": "shared" if times else "per-item", "items": items}


def _fail(message: str) -> SplitError:
    return SplitError("SPLIT-E040", message)


def match_schedule(graph: Graph, steps: Sequence[Step]) -> dict[str, Operation]:
    """Check `steps` against the item graph; return first result -> computing instruction."""
    item = graph.item or graph.name
    compute = {first_result(op): op for op in graph.operations if op.name not in BINDINGS | COMMUNICATION}
    sends = {(first_result(op), op.inputs["data"].name, tuple(str(d) for d in op.attribs["dest"]))
             for op in graph.operations if op.name == "send_var"}
    gets = {(op.inputs["data"].name, first_result(op), str(op.attribs["source"]))
            for op in graph.operations if op.name == "get_var"}
    scheduled = [s.result for s in steps if s.kind == "compute"]
    if sorted(scheduled) != sorted(compute):
        missing = sorted(set(compute) - set(scheduled))
        extra = sorted(set(scheduled) - set(compute))
        twice = sorted({r for r in scheduled if scheduled.count(r) > 1})
        raise _fail(f"item {item}: the schedule's compute steps are not the item's instructions "
                    f"(missing {missing}, unknown {extra}, repeated {twice})")
    for step in steps:
        if step.kind == "compute" and compute[step.result].name != step.op:
            raise _fail(f"item {item}: schedule computes {step.result} with {step.op}, the file with "
                        f"{compute[step.result].name}")
        if step.kind == "send" and (step.var, step.value, step.to) not in sends:
            raise _fail(f"item {item}: schedule sends {step.value} as {step.var} to {list(step.to)}; the file has "
                        "no such send_var")
        if step.kind == "get" and (step.var, step.result, step.source) not in gets:
            raise _fail(f"item {item}: schedule gets {step.result} from {step.source} via {step.var}; the file has "
                        "no such get_var")
    if len([s for s in steps if s.kind == "send"]) != len(sends) or len([s for s in steps if s.kind == "get"]) != len(gets):
        raise _fail(f"item {item}: the schedule's send/get steps are not the file's send_var/get_var")
    return compute


class _Run:
    """Shared state of one execution: queues, barrier, clock, first failure."""

    def __init__(self, items: Sequence[str], schedule: Schedule, timeout: float) -> None:
        self.queues: dict[tuple[str, str], queue.Queue[np.ndarray]] = {}
        for steps in schedule.items.values():
            for step in steps:
                if step.kind == "send":
                    for reader in step.to:
                        self.queues.setdefault((step.var, reader), queue.Queue())
        self.barrier = threading.Barrier(len(items)) if schedule.sync == "barrier" else None
        self.sync = schedule.sync
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.failed = threading.Event()
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.seq = 0
        self.t0 = time.perf_counter_ns()

    def event(self, events: list[dict[str, int | str]], kind: str, step: int) -> None:
        with self.lock:
            events.append({"event": kind, "step": step, "t": time.perf_counter_ns() - self.t0, "seq": self.seq})
            self.seq += 1

    def fail(self, error: BaseException) -> None:
        with self.lock:
            self.errors.append(error)
        self.failed.set()
        if self.barrier is not None:
            self.barrier.abort()

    def receive(self, item: str, step: Step) -> np.ndarray:
        key = (step.var, item)
        channel = self.queues.get(key)
        if channel is None:
            raise _fail(f"item {item}: nobody sends {step.var} to it")
        if self.sync == "barrier":
            try:
                return channel.get_nowait()
            except queue.Empty:
                raise _fail(f"item {item}: get of {step.var} from {step.source} found no value: the barrier "
                            "schedule places the get in the same phase as its send or before it") from None
        while True:
            try:
                return channel.get(timeout=_POLL_S)
            except queue.Empty:
                if self.failed.is_set():
                    raise _fail(f"item {item}: stopped waiting for {step.var} (another item failed)") from None
                if time.monotonic() > self.deadline:
                    raise _fail(f"item {item}: waited {self.timeout:.0f} s for {step.var} from {step.source} "
                                "(deadlock?)") from None


def _worker(run: _Run, graph: Graph, steps: Sequence[Step], inputs: Mapping[str, np.ndarray],
            variables: Mapping[str, np.ndarray], events: list[dict[str, int | str]],
            env: dict[str, np.ndarray]) -> None:
    item = str(graph.item or graph.name)
    try:
        compute = match_schedule(graph, steps)
        for op in graph.operations:
            if op.name in DECLARATIONS:
                bind_declaration(op, inputs, variables, env)
        for index, step in enumerate(steps):
            if run.failed.is_set():
                return
            run.event(events, "start", index)
            if step.kind == "compute":
                run_operation(graph, compute[step.result], env)
            elif step.kind == "send":
                value = env[step.value].copy()
                value.setflags(write=False)
                for reader in step.to:
                    run.queues[(step.var, reader)].put(value)
            elif step.kind == "get":
                env[step.result] = run.receive(item, step)
            elif step.kind == "barrier":
                assert run.barrier is not None
                try:
                    run.barrier.wait(timeout=max(0.0, run.deadline - time.monotonic()))
                except threading.BrokenBarrierError:
                    if run.failed.is_set():
                        return
                    raise _fail(f"item {item}: barrier {step.id} timed out (deadlock?)") from None
            run.event(events, "end", index)
    except BaseException as error:  # noqa: BLE001 - reported by execute_split
        run.fail(error)


def execute_split(items: Sequence[Graph], schedule: Schedule, inputs: Mapping[str, np.ndarray],
                  variables: Mapping[str, np.ndarray], *, timeout: float = DEFAULT_TIMEOUT_S) -> ExecutionResult:
    """Run the item graphs as threads following `schedule`; outputs of all items by name.

    Raises SplitError SPLIT-E040 on a deadlock (after `timeout` s) or a schedule that does
    not match the item files or violates its sync mode; PipelineError from the reference
    interpreter as it raises it (a missing input or parameter: SEM-E002, with its location).
    """
    names = [str(g.item or g.name) for g in items]
    if sorted(names) != sorted(schedule.items):
        raise _fail(f"the schedule's items {sorted(schedule.items)} are not the item files' {sorted(names)}")
    run = _Run(names, schedule, timeout)
    events: dict[str, list[dict[str, int | str]]] = {name: [] for name in names}
    envs: dict[str, dict[str, np.ndarray]] = {name: {} for name in names}
    threads = [threading.Thread(target=_worker, name=f"item-{name}", daemon=True,
                                args=(run, graph, schedule.items[name], inputs, variables, events[name], envs[name]))
               for name, graph in zip(names, items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout + 5.0)
    if any(thread.is_alive() for thread in threads):
        run.fail(_fail("a worker did not finish"))
    if run.errors:
        real = [e for e in run.errors if not (isinstance(e, SplitError) and "another item failed" in e.message)]
        raise (real or run.errors)[0]
    _check_causality(schedule, events)
    outputs: dict[str, np.ndarray] = {}
    syncs = {first_result(op) for g in items for op in g.operations if op.name == "variablesync"}
    for name, graph in zip(names, items):
        for output in graph.outputs:
            if output not in syncs:
                outputs[output] = envs[name][output]
    return ExecutionResult(outputs, events)


def _check_causality(schedule: Schedule, events: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Every get ended after its send started, in the observed global order (a self-check)."""
    send_start: dict[str, int] = {}
    for item, steps in schedule.items.items():
        for event in events[item]:
            step = steps[int(event["step"])]
            if step.kind == "send" and event["event"] == "start":
                send_start[step.var] = int(event["seq"])
    for item, steps in schedule.items.items():
        for event in events[item]:
            step = steps[int(event["step"])]
            if step.kind == "get" and event["event"] == "end" and not int(event["seq"]) > send_start.get(step.var, 1 << 62):
                raise _fail(f"item {item}: get of {step.var} ended before its send started")


# ---------------------------------------------------------------------- comparison

def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same dtype, same shape, same bytes (NaN payloads and signed zeros included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def first_difference(name: str, expected: np.ndarray, actual: np.ndarray) -> str:
    """A message naming the first element whose bits differ."""
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return f"'{name}': expected {expected.dtype}{list(expected.shape)}, got {actual.dtype}{list(actual.shape)}"
    e = np.ascontiguousarray(expected).reshape(-1)
    a = np.ascontiguousarray(actual).reshape(-1)
    differs = (e.view(np.uint8).reshape(e.size, -1) != a.view(np.uint8).reshape(a.size, -1)).any(axis=1)
    index = int(np.flatnonzero(differs)[0])
    position = list(np.unravel_index(index, expected.shape))
    return f"'{name}'{position}: expected {e[index]!r}, got {a[index]!r}"


@dataclass
class Comparison:
    """Split execution against the unsplit interpreter over several vectors."""

    vectors: int = 0
    identical_vectors: int = 0
    outputs_compared: int = 0
    first_difference: str = ""
    traces: list[dict[str, list[dict[str, int | str]]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.vectors > 0 and self.identical_vectors == self.vectors


def compare_with_reference(items: Sequence[Graph], schedule: Schedule,
                           reference: Callable[[int], Mapping[str, np.ndarray]],
                           vectors: Sequence[Mapping[str, np.ndarray]], variables: Mapping[str, np.ndarray], *,
                           timeout: float = DEFAULT_TIMEOUT_S, keep_traces: int = 1) -> Comparison:
    """Run every vector split and compare the bytes with `reference(index)` (the unsplit
    interpreter's outputs for vectors[index])."""
    result = Comparison()
    for index, vector in enumerate(vectors):
        expected = reference(index)
        run = execute_split(items, schedule, vector, variables, timeout=timeout)
        if index < keep_traces:
            result.traces.append(run.trace)
        result.vectors += 1
        same = True
        for name, value in expected.items():
            result.outputs_compared += 1
            actual = run.outputs.get(name)
            if actual is None:
                same = False
                result.first_difference = result.first_difference or f"vector {index}: output '{name}' not produced"
            elif not identical(value, actual):
                same = False
                result.first_difference = result.first_difference or \
                    f"vector {index}: {first_difference(name, value, actual)}"
        result.identical_vectors += int(same)
    return result
