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

from pipeline.codegen.shared.contract import ItemCode, TraceEntry, barrier_step, sync_object
from pipeline.codegen.shared.spelling import ident
from pipeline.codegen.cuda import RUNTIME_DIR, RUNTIME_FILES
from pipeline.codegen.cuda.emitter import CudaItemEmitter, DeviceCode, item_file
from pipeline.codegen.cuda.programs import math_header
from pipeline.codegen.deployment import DeploymentInput, ItemInput

HOST_ALIGNMENT_FLOATS = 16   # 64 bytes


def linked_item(deployment: DeploymentInput, item: ItemInput, index: int) -> ItemCode:
    """The .cu of a cuda item of a mixed deployment, as an ItemCode of the C program."""
    emitter = CudaItemEmitter(deployment, item, index, linked=True)
    return linked_tail(emitter, emitter.generate())


def _support_files() -> dict[str, str]:
    files = {name: (RUNTIME_DIR / name).read_text(encoding="utf-8") for name in RUNTIME_FILES}
    files["nnef_cuda_math.h"] = math_header()
    return files


def linked_tail(e: CudaItemEmitter, device_code: DeviceCode) -> ItemCode:
    """Append the host side (host arena, init, run) to the item's kernels; return its ItemCode."""
    item, d = e.item, e.d
    w, launches, plan = device_code.writer, device_code.launches, device_code.plan
    entries, kernel_records = device_code.entries, device_code.kernels
    src = item_file(item.name)
    arena = f"nnef_arena_{item.name}"
    floats = lambda name: math.prod(e._shape(name))  # noqa: E731
    # host arena: inputs the harness stages, outputs it reads, staging of every sent value
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
    host_floats = max(1, offset)
    get_call = "nnef_get" if d.sync == "event" else "nnef_get_published"
    variables = sorted({s.var for _, s in sends + gets})

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
    # init
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
    w.line("")
    # run
    trace: list[TraceEntry] = [TraceEntry(x["nnef_line"], x["instruction"], src, *x["code_lines"]) for x in entries]
    w.comment(f"One inference of item {item.name}: the steps of {d.schedule_rel} in order.")
    run_first = w.line(f'extern "C" void nnef_item_{item.name}_run(uint32_t epoch)')
    w.line("{")
    w.line("    (void)epoch;")
    for name in inputs:
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
    for name in outputs:
        start, count = host[f"out:{name}"]
        w.line(f"    /* output {name}: device -> host arena, where the harness reads it */")
        w.line(f"    NNEF_RUN_CHECK(cudaMemcpyAsync({arena} + {start}, {e.storage[name].c}, {count * 4}u, "
               "cudaMemcpyDeviceToHost, nnef_stream));")
    w.line("    NNEF_RUN_CHECK(cudaStreamSynchronize(nnef_stream));")
    w.line("    NNEF_RUN_CHECK(cudaGetLastError());")
    run_last = w.line("}")
    source = w.text()
    trace += _declaration_entries(e, source, input_lines)
    functions = [{"function": r["kernel"], "step": r["step"], "nnef_line": r["nnef_line"],
                  "lines": x["code_lines"], "operation": r["operation"]} for r, x in zip(kernel_records, entries)]
    functions += [{"function": f"nnef_item_{item.name}_init", "step": None, "nnef_line": None,
                   "lines": [init_first, init_last], "operation": "init"},
                  {"function": f"nnef_item_{item.name}_run", "step": None, "nnef_line": None,
                   "lines": [run_first, run_last], "operation": "schedule"}]
    memory_map = {"schema_version": 1, "item": item.name, "target": "cuda", "arena": "nnef_dev_arena (device)",
                  "arena_bytes": plan.arena_bytes, "alignment": plan.alignment, "steps": len(item.steps),
                  "buffers": [{"tensor": b.name, "offset": b.offset, "size": b.size, "first": b.first,
                               "last": b.last} for b in plan.buffers],
                  "weights": [{"array": k, "bytes": int(v[1].size) * 4} for k, v in e.host_arrays.items()],
                  "host_arena": {"symbol": arena, "bytes": host_floats * 4,
                                 "buffers": [{"use": k.split(":", 1)[0], "tensor": k.split(":", 1)[1],
                                              "offset": o * 4, "size": c * 4} for k, (o, c) in host.items()]}}
    records = []
    for op in e.graph.operations:
        if op.name == "variable":
            label = str(op.attribs.get("label", ""))
            weight = d.weights[label]
            records.append({"array": f"H_{ident(label)}", "variable": op.output_refs()[0].name, "label": label,
                            "file": weight.rel, "sha256": weight.sha256, "layout": {"kind": "identity"},
                            "floats": int(weight.array.size), "shape": list(weight.array.shape)})
    return ItemCode(item.name, source, None, sorted(trace, key=lambda x: (x.nnef_line, x.code_file)), memory_map,
                    records, functions,
                    {n: f"{arena} + {host[f'in:{n}'][0]}" for n in inputs},
                    {n: f"{arena} + {host[f'out:{n}'][0]}" for n in outputs},
                    [s.var for _, s in sends], [s.var for _, s in gets],
                    source_file=src, language="cuda", init=f"nnef_item_{item.name}_init",
                    support_files=_support_files(), weights_blob=device_code.blob)


def _declaration_entries(e: CudaItemEmitter, source: str, input_lines: dict[str, int]) -> list[TraceEntry]:
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

