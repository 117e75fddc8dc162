"""A CUDA item inside a mixed deployment's C program (docs/codegen-cuda.md "CUDA items next to CPU items").

The C deployment program (pipeline/codegen/program/generate.py: the item table, the sync variables,
the runtime, the harness) stays the program; an item of target `cuda` is one `.cu` whose
functions have C linkage and follow the contract of a C item:

* `nnef_item_<X>_init()`: called once by the harness before the first inference (and before
  any timing): creates the item's stream, allocates the device arena of the buffer plan and one
  device array per weight, copies the weights. Nothing is allocated or copied later but values.
* `nnef_item_<X>_run(epoch)`: one inference, the item's schedule in order, every step wrapped
  in NNEF_STEP (the instrumented build logs its start and end as for a C item):
    - the item's external inputs: the harness stages them in the host arena
      `nnef_arena_<X>` (as it does for a C item); run copies them to the device first;
    - compute: the instruction's kernel on the item's stream (in the instrumented build the step
      also waits for the kernel, so that its end event is the kernel's end);
    - get_var: wait on the sync object exactly as a C item does (`nnef_get` under event sync,
      `nnef_get_published` under barrier sync), then copy the host sync buffer into the value's
      device buffer (cudaMemcpyAsync host -> device on the item's stream) and synchronise the
      stream;
    - send_var: copy the value's device buffer into the item's host staging buffer
      (cudaMemcpyAsync device -> host), synchronise the stream, then `nnef_send` (which copies
      the staging buffer into the sync buffer and publishes the epoch with a release store:
      the runtime's one protocol, unchanged);
    - barrier: the host barrier `nnef_barrier(id)`;
    - at the end: the graph outputs the item computes, device -> host arena, stream synchronised.
* A CUDA runtime error during an inference stops the program (RUN-E018, exit 5): no item
  waits forever on a value that will never come.

The same source is the host emulation (g++ -DNNEF_CUDA_EMULATE, nnef_cuda_emulate.h), where
NNEF_EMULATE_SEED in the environment chooses the launch order (0 or unset: in order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipeline.codegen.shared.contract import ItemCode, TraceEntry, barrier_step, sync_object
from pipeline.codegen.shared.planner import Plan
from pipeline.codegen.shared.spelling import ident
from pipeline.codegen.shared.writer import CodeWriter
from pipeline.codegen.cuda import RUNTIME_DIR, RUNTIME_FILES
from pipeline.codegen.cuda.emitter import CudaItemEmitter, DeviceCode, item_file
from pipeline.codegen.cuda.programs import math_header
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput
from pipeline.split.splitter import Step

HOST_ALIGNMENT_FLOATS = 16   # 64 bytes


def linked_item(deployment: DeploymentInput, item: ItemInput, index: int) -> ItemCode:
    """The .cu of a cuda item of a mixed deployment, as an ItemCode of the C program."""
    emitter = CudaItemEmitter(deployment, item, index, linked=True)
    return linked_tail(emitter, emitter.generate())


def _support_files() -> dict[str, str]:
    files = {name: (RUNTIME_DIR / name).read_text(encoding="utf-8") for name in RUNTIME_FILES}
    files["nnef_cuda_math.h"] = math_header()
    return files

@dataclass
class HostArena:
    """The item's host arena in the C program: the inputs the harness stages, the outputs it reads and a
    staging buffer per sent value, each at its offset."""

    symbol: str                            # nnef_arena_<X>
    inputs: list[str]                      # the item's inputs (external), in declaration order
    outputs: list[str]                     # the graph outputs the item computes
    sends: list[tuple[int, Step]]          # (step index, step) of every send
    gets: list[tuple[int, Step]]           # (step index, step) of every get
    buffers: dict[str, tuple[int, int]]    # "in:<x>" / "out:<x>" / "send:<var>" -> (offset, floats)

    @property
    def floats(self) -> int:
        padded = [-(-count // HOST_ALIGNMENT_FLOATS) * HOST_ALIGNMENT_FLOATS for _, count in self.buffers.values()]
        return max(1, sum(padded))

    def address(self, key: str) -> str:
        offset = self.buffers[key][0]
        return f"{self.symbol} + {offset}" if offset else self.symbol   # no + 0 (MISRA C:2012 2.2)


def _host_arena(e: CudaItemEmitter) -> HostArena:
    item = e.item
    floats = lambda name: math.prod(e._shape(name))  # noqa: E731
    inputs = [op.output_refs()[0].name for op in e.graph.operations if op.name == "external"]
    outputs = e.own_outputs()
    sends = [(index, step) for index, step in enumerate(item.steps) if step.kind == "send"]
    gets = [(index, step) for index, step in enumerate(item.steps) if step.kind == "get"]
    host: dict[str, tuple[int, int]] = {}
    offset = 0
    for key, count in [(f"in:{n}", floats(n)) for n in inputs] + [(f"out:{n}", floats(n)) for n in outputs] + \
            [(f"send:{s.var}", floats(item.step_ops[i].input_refs()[0].name)) for i, s in sends]:
        if key in host:
            continue
        host[key] = (offset, count)
        offset += -(-count // HOST_ALIGNMENT_FLOATS) * HOST_ALIGNMENT_FLOATS
    return HostArena(f"nnef_arena_{item.name}", inputs, outputs, sends, gets, host)


def _host_declarations(w: CodeWriter, e: CudaItemEmitter, a: HostArena) -> dict[str, int]:
    """The host arena and the sync objects the item uses, with C linkage; the line of each input's comment."""
    item, arena, host, host_floats, inputs = e.item, a.symbol, a.buffers, a.floats, a.inputs
    variables = sorted({s.var for _, s in a.sends + a.gets})
    w.comment(f"Host side of item {item.name} in the deployment's C program (docs/codegen-cuda.md): the host arena\n"
              f"({host_floats * 4} bytes: the inputs the harness stages, the outputs it reads, a staging buffer per "
              "sent value),\nthe sync objects of nnef_deployment.c, and C linkage for the harness and the runtime.")
    input_lines: dict[str, int] = {}
    for name in inputs:
        op = item.declaration(name)
        assert op is not None
        line, text = e._line(op)
        start, count = host[f"in:{name}"]
        input_lines[name] = w.line(f"/* NNEF {item.nnef_rel}:{line}: {text.replace('*/', '* /')}\n"
                                   f"   staged at {arena} + {start} ({count} floats) */".replace("\n", " "))
    w.line('extern "C" {')
    for var in variables:
        w.line(f"extern nnef_sync {sync_object(var)};")
    w.line(f"alignas(64) float {arena}[{host_floats}];")
    w.line("}")
    w.line("")
    return input_lines


def _host_helpers(w: CodeWriter, e: CudaItemEmitter, a: HostArena) -> None:
    """The CUDA error stop, the step macros, and the get/send helpers the item's steps need."""
    item, gets, sends = e.item, a.gets, a.sends
    get_call = "nnef_get" if e.d.sync == "event" else "nnef_get_published"
    w.comment("A CUDA runtime error during an inference stops the program: no other item may wait forever.")
    w.line("[[noreturn]] static void nnef_cuda_fail(const char *what, cudaError_t error)")
    w.line("{")
    w.line(f'    fprintf(stderr, "RUN-E018: item {item.name}: %s: CUDA error %d (%s)\\n", what, (int)error, '
           "cudaGetErrorString(error));")
    w.line("    exit(5);")
    w.line("}")
    w.line("#define NNEF_RUN_CHECK(call) do { cudaError_t nnef_e_ = (call); if (nnef_e_ != cudaSuccess) "
           "nnef_cuda_fail(#call, nnef_e_); } while (0)")
    w.line("#if defined(NNEF_TRACE)   /* a compute step ends when its kernel has */")
    w.line("#define NNEF_KERNEL_DONE() NNEF_RUN_CHECK(cudaStreamSynchronize(nnef_stream))")
    w.line("#else")
    w.line("#define NNEF_KERNEL_DONE() ((void)0)")
    w.line("#endif")
    w.line("")
    if gets:
        w.comment(f"get_var: wait for the value as a C item does ({get_call}), then copy the host sync buffer to the "
                  "device buffer\non the item's stream and wait for the copy.")
        w.line("static void nnef_cuda_get(nnef_sync *s, float *device, unsigned floats, uint32_t epoch)")
        w.line("{")
        w.line(f"    const float *value = {get_call}(s, epoch);")
        w.line("    NNEF_RUN_CHECK(cudaMemcpyAsync(device, value, floats * sizeof(float), cudaMemcpyHostToDevice, "
               "nnef_stream));")
        w.line("    NNEF_RUN_CHECK(cudaStreamSynchronize(nnef_stream));")
        w.line("}")
        w.line("")
    if sends:
        w.comment("send_var: copy the device buffer to the host staging buffer on the item's stream, wait for it, "
                  "then\nnef_send (copy into the sync buffer, publish the epoch: the runtime's protocol).")
        w.line("static void nnef_cuda_send(nnef_sync *s, const float *device, float *staging, unsigned floats, "
               "uint32_t epoch)")
        w.line("{")
        w.line("    NNEF_RUN_CHECK(cudaMemcpyAsync(staging, device, floats * sizeof(float), cudaMemcpyDeviceToHost, "
               "nnef_stream));")
        w.line("    NNEF_RUN_CHECK(cudaStreamSynchronize(nnef_stream));")
        w.line("    nnef_send(s, staging, epoch);")
        w.line("}")
        w.line("")


def _init(w: CodeWriter, e: CudaItemEmitter, plan: Plan) -> tuple[int, int]:
    """The init function (stream, device arena, weights); its first and last lines."""
    item = e.item
    w.comment("Called once by the harness before the first inference: the stream, the device arena "
              f"({plan.arena_bytes} bytes,\nmemory_map.json), one device array per weight and its copy. "
              "The emulation's launch order comes from NNEF_EMULATE_SEED.")
    init_first = w.line(f'extern "C" int nnef_item_{item.name}_init(void)')
    w.line("{")
    w.line("#if defined(NNEF_CUDA_EMULATE)")
    w.line('    const char *seed = getenv("NNEF_EMULATE_SEED");')
    w.line("    nnef_emulate_seed = seed ? (uint64_t)strtoull(seed, 0, 10) : 0u;")
    w.line("#endif")
    w.line("    NNEF_CUDA_CHECK(cudaStreamCreate(&nnef_stream));")
    w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&nnef_dev_arena, {max(plan.arena_bytes, 4)}u));")
    for device, (host_name, values, _) in e.host_arrays.items():
        w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&{device}, {values.size * 4}u));")
        w.line(f"    NNEF_CUDA_CHECK(cudaMemcpy({device}, {host_name}, {values.size * 4}u, cudaMemcpyHostToDevice));")
    w.line("    return 0;")
    init_last = w.line("}")
    return init_first, init_last


def _run(w: CodeWriter, e: CudaItemEmitter, a: HostArena, device_code: DeviceCode) -> tuple[list[TraceEntry], int, int]:
    """The run function: inputs to the device, the schedule (kernels, gets, sends, barriers), outputs back;
    the trace entries of the kernels and steps, its first and last lines."""
    item, d, arena, host, launches = e.item, e.d, a.symbol, a.buffers, device_code.launches
    src = item_file(item.name)
    floats = lambda name: math.prod(e._shape(name))  # noqa: E731
    trace: list[TraceEntry] = [TraceEntry(x["nnef_line"], x["instruction"], src, *x["code_lines"])
                               for x in device_code.entries]
    w.comment(f"One inference of item {item.name}: the steps of {d.schedule_rel} in order.")
    run_first = w.line(f'extern "C" void nnef_item_{item.name}_run(uint32_t epoch)')
    w.line("{")
    w.line("    (void)epoch;")
    for name in a.inputs:
        start, count = host[f"in:{name}"]
        w.line(f"    /* input {name}: staged by the harness in the host arena, copied to the device */")
        w.line(f"    NNEF_RUN_CHECK(cudaMemcpyAsync({e.storage[name].c}, {arena} + {start}, {count * 4}u, "
               "cudaMemcpyHostToDevice, nnef_stream));")
    for index, step in enumerate(item.steps):
        op = item.step_ops[index]
        if step.kind == "barrier":
            for text in barrier_step(e.index, index, step.id):
                w.line(f"    {text}")
            continue
        assert op is not None
        line, text = e._line(op)
        first = w.line(f"    /* step {index}: {item.nnef_rel}:{line}: {text.replace('*/', '* /')} */")
        if step.kind == "compute":
            if index in launches:
                w.line(f"    NNEF_STEP({e.index}, {index}, epoch, {launches[index]} NNEF_KERNEL_DONE());")
            else:
                w.line(f"    NNEF_STEP({e.index}, {index}, epoch, (void)0);   /* a view: no kernel */")
                trace.append(TraceEntry(line, text, src, first, first))
            continue
        if step.kind == "get":
            result = op.output_refs()[0].name
            last = w.line(f"    NNEF_STEP({e.index}, {index}, epoch, nnef_cuda_get(&{sync_object(step.var)}, "
                          f"{e.storage[result].c}, {floats(result)}u, epoch));")
        else:
            value = op.input_refs()[0].name
            start, count = host[f"send:{step.var}"]
            last = w.line(f"    NNEF_STEP({e.index}, {index}, epoch, nnef_cuda_send(&{sync_object(step.var)}, "
                          f"{e.storage[value].c}, {arena} + {start}, {count}u, epoch));")
        trace.append(TraceEntry(line, text, src, first, last))
    for name in a.outputs:
        start, count = host[f"out:{name}"]
        w.line(f"    /* output {name}: device -> host arena, where the harness reads it */")
        w.line(f"    NNEF_RUN_CHECK(cudaMemcpyAsync({arena} + {start}, {e.storage[name].c}, {count * 4}u, "
               "cudaMemcpyDeviceToHost, nnef_stream));")
    w.line("    NNEF_RUN_CHECK(cudaStreamSynchronize(nnef_stream));")
    w.line("    NNEF_RUN_CHECK(cudaGetLastError());")
    run_last = w.line("}")
    return trace, run_first, run_last


def _memory_map(e: CudaItemEmitter, a: HostArena, plan: Plan) -> dict[str, Any]:
    item = e.item
    return {"schema_version": 1, "item": item.name, "target": "cuda", "arena": "nnef_dev_arena (device)",
            "arena_bytes": plan.arena_bytes, "alignment": plan.alignment, "steps": len(item.steps),
            "buffers": [{"tensor": b.name, "offset": b.offset, "size": b.size, "first": b.first,
                         "last": b.last} for b in plan.buffers],
            "weights": [{"array": k, "bytes": int(v[1].size) * 4} for k, v in e.host_arrays.items()],
            "host_arena": {"symbol": a.symbol, "bytes": a.floats * 4,
                           "buffers": [{"use": k.split(":", 1)[0], "tensor": k.split(":", 1)[1],
                                        "offset": o * 4, "size": c * 4} for k, (o, c) in a.buffers.items()]}}


def _weight_records(e: CudaItemEmitter) -> list[dict[str, Any]]:
    """weights.json's arrays: every variable's host array, in the identity layout."""
    records = []
    for op in e.graph.operations:
        if op.name == "variable":
            label = str(op.attribs.get("label", ""))
            weight = e.d.weights[label]
            records.append({"array": f"H_{ident(label)}", "variable": op.output_refs()[0].name, "label": label,
                            "file": weight.rel, "sha256": weight.sha256, "layout": {"kind": "identity"},
                            "floats": int(weight.array.size), "shape": list(weight.array.shape)})
    return records


def linked_tail(e: CudaItemEmitter, device_code: DeviceCode) -> ItemCode:
    """Append the host side (host arena, helpers, init, run) to the item's kernels; return its ItemCode."""
    item, w, plan = e.item, device_code.writer, device_code.plan
    src = item_file(item.name)
    a = _host_arena(e)
    input_lines = _host_declarations(w, e, a)
    _host_helpers(w, e, a)
    init_first, init_last = _init(w, e, plan)
    w.line("")
    trace, run_first, run_last = _run(w, e, a, device_code)
    source = w.text()
    trace += declaration_entries(e, source, input_lines)
    functions = [{"function": r["kernel"], "step": r["step"], "nnef_line": r["nnef_line"],
                  "lines": x["code_lines"], "operation": r["operation"]}
                 for r, x in zip(device_code.kernels, device_code.entries)]
    functions += [{"function": f"nnef_item_{item.name}_init", "step": None, "nnef_line": None,
                   "lines": [init_first, init_last], "operation": "init"},
                  {"function": f"nnef_item_{item.name}_run", "step": None, "nnef_line": None,
                   "lines": [run_first, run_last], "operation": "schedule"}]
    return ItemCode(item.name, source, None, sorted(trace, key=lambda x: (x.nnef_line, x.code_file)),
                    _memory_map(e, a, plan), _weight_records(e), functions,
                    {n: a.address(f"in:{n}") for n in a.inputs}, {n: a.address(f"out:{n}") for n in a.outputs},
                    [s.var for _, s in a.sends], [s.var for _, s in a.gets],
                    source_file=src, language="cuda", init=f"nnef_item_{item.name}_init",
                    support_files=_support_files(), weights_blob=device_code.blob)



def declaration_entries(e: CudaItemEmitter, source: str, input_lines: dict[str, int]) -> list[TraceEntry]:
    """Trace entries of the item's declarations: weights (their host arrays or #defines into the linked
    blob, comment included) and inputs (the host arena line)."""
    lines = source.splitlines()
    src = item_file(e.item.name)
    result = []
    for op in e.graph.operations:
        if op.name not in ("variable", "constant", "external"):
            continue
        line, text = e._line(op)
        if op.name == "external":
            at = input_lines[op.output_refs()[0].name]
            result.append(TraceEntry(line, text, src, at, at))
            continue
        marker = f"NNEF {e.item.nnef_rel}:{line}: "
        start = next((n for n, t in enumerate(lines) if marker in t), None)
        if start is None:
            continue
        end = next(n for n in range(start, len(lines))   # the initializer's end, or the #define into the blob
                   if lines[n] == "};" or lines[n].startswith("#define H_"))
        first = next(n for n in range(start, -1, -1) if lines[n].startswith("/*"))
        result.append(TraceEntry(line, text, src, first + 1, end + 1))
    return result

