"""An NVDLA item inside a mixed deployment's C program: its proxy item (docs/codegen-nvdla.md "Next to CPU items").

The C deployment program (pipeline/codegen/program/generate.py) stays the program; an item of target
`nvdla` is one C source, `nnef_item_<X>.c`, that follows the contract of a C item while the
item's computation is its loadable (written by pipeline/codegen/nvdla/generate.py beside it and
judged by codegen.accelerators):

* `nnef_item_<X>_init()`: once before the first inference, opens the submission channel: two
  FIFOs whose paths the harness reads from NNEF_DLA_<X>_REQUEST and NNEF_DLA_<X>_REPLY (the
  execute step creates them and starts the emulator server, pipeline/execute/nvdla/server.py).
* `nnef_item_<X>_run(epoch)`: the item's schedule (schedule.json) in order, every step in
  NNEF_STEP: a get step waits for its value as a C item does (`nnef_get` / `nnef_get_published`);
  the loadable is submitted at the first compute step after the last get (request: every input
  of the loadable as float32, in its order; wait for the reply: every output); the other compute
  steps were done by that submission and are recorded as empty steps in schedule order, so a
  trace stays a path of the net; a send step publishes the output received for it with
  `nnef_send`; a barrier is `nnef_barrier`. A loadable is one submission, so an item that
  receives a value after it has sent one cannot be a proxy (CODEGEN-E010).
* The channel stands where the UMD/KMD submit would on a board. Its failures stop the program
  (exit 6) with a coded message: RUN-E053 the server is gone (end of file, broken pipe, no
  channel), RUN-E054 an answer of the wrong size, magic or epoch, RUN-E055 no answer within
  NNEF_DLA_TIMEOUT_MS (default 60000), RUN-E056 the server reports an emulation error.

Messages (little-endian): request = "NVDQ", u32 version 1, u32 epoch, u32 payload bytes, then
the inputs; reply = "NVDR", u32 status (0 ok), u32 epoch, u32 payload bytes, then the outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipeline.codegen.shared.contract import (ItemCode, TraceEntry, barrier_step, item_file, sync_buffer, sync_object,
                                              weights_file)
from pipeline.codegen.shared.writer import CodeWriter
from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput
from pipeline.codegen.nvdla.generate import CONFIGURATION
from pipeline.diagnostics import Location, PipelineError
from pipeline.split.nvdla_legalize import legalize

ALIGNMENT_FLOATS = 16      # 64 bytes
PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT_MS = 60000
EXIT_STATUS = 6


def at(arena: str, offset: int) -> str:
    """`arena + offset`, the arena alone at offset 0 (no dead `+ 0`: MISRA C:2012 rule 2.2)."""
    return f"{arena} + {offset}" if offset else arena


def request_variable(item: str) -> str:
    return f"NNEF_DLA_{item}_REQUEST"


def reply_variable(item: str) -> str:
    return f"NNEF_DLA_{item}_REPLY"


def loadable_io(deployment: DeploymentInput, item: ItemInput) -> tuple[list[tuple[str, list[int]]], list[str]]:
    """The loadable's inputs (name, shape; sorted by name as build.json lists them) and outputs, from the
    same legalization the loadable is written from (pipeline/codegen/nvdla/generate.py)."""
    variables = {label: weight.array for label, weight in deployment.weights.items()}
    try:
        legal = legalize(item.graph, variables, CONFIGURATION, text="\n".join(item.lines))
    except PipelineError as error:
        raise CodegenError("CODEGEN-E009", f"{item.name}: {error.code}: {error.message}",
                           error.location or Location.in_file(item.nnef_path)) from None
    return sorted((n, list(s)) for n, s in legal.inputs.items()), list(legal.outputs)


def _submission_step(item: ItemInput) -> int:
    """The step that submits the loadable: the first compute step after the last get, before any send."""
    kinds = [s.kind for s in item.steps]
    last_get = max((k for k, kind in enumerate(kinds) if kind == "get"), default=-1)
    first_send = min((k for k, kind in enumerate(kinds) if kind == "send"), default=len(kinds))
    at = next((k for k in range(last_get + 1, len(kinds)) if kinds[k] == "compute"), None)
    if at is None or at > first_send or last_get > first_send:
        raise CodegenError("CODEGEN-E010", f"nvdla item {item.name}: its schedule receives a value after it sends "
                           "one (or computes nothing after its last get); a loadable is one submission, so the item "
                           "cannot be a proxy of the C program", Location.in_file(item.nnef_path))
    return at



@dataclass
class Submission:
    """What the proxy of one nvdla item exchanges with its loadable and where it keeps it."""

    item: ItemInput
    inputs: list[tuple[str, list[int]]]    # the loadable's inputs (name, shape), in the request's order
    outputs: list[str]                     # the loadable's outputs, in the reply's order
    out_shapes: dict[str, list[int]]
    at: int                                # the step that submits the loadable
    externals: list[str]                   # the item's inputs the harness stages
    received: dict[str, str]               # an input received with get_var -> its sync variable
    host: dict[str, tuple[int, int]]       # "in:<x>" / "out:<x>" -> (offset, floats) in the item's arena

    @property
    def arena(self) -> str:
        return f"nnef_arena_{self.item.name}"

    @property
    def arena_floats(self) -> int:
        return max(1, sum(-(-count // ALIGNMENT_FLOATS) * ALIGNMENT_FLOATS for _, count in self.host.values()))

    def floats_in(self, name: str) -> int:
        return math.prod(dict(self.inputs)[name])

    def floats_out(self, name: str) -> int:
        return math.prod(self.out_shapes[name])

    @property
    def request_bytes(self) -> int:
        return 4 * sum(self.floats_in(n) for n, _ in self.inputs)

    @property
    def reply_bytes(self) -> int:
        return 4 * sum(self.floats_out(n) for n in self.outputs)

    def source_of(self, name: str) -> str:
        """Where the request takes input `name` from: the sync buffer it was received in, or the arena."""
        if name in self.received:
            return f"(const float *){sync_buffer(self.received[name])}"
        return at(self.arena, self.host['in:' + name][0])


def _submission(d: DeploymentInput, item: ItemInput) -> Submission:
    """The loadable's inputs and outputs, the submitting step and the arena: the staged externals, then
    every output of the loadable (sent values and graph outputs)."""
    inputs, outputs = loadable_io(d, item)
    at = _submission_step(item)
    externals = [op.output_refs()[0].name for op in item.graph.operations if op.name == "external"]
    received = {item.step_ops[k].output_refs()[0].name: s.var  # type: ignore[union-attr]
                for k, s in enumerate(item.steps) if s.kind == "get"}
    shapes = dict(inputs)
    out_shapes = {n: [int(v) for v in item.graph.tensors[n].shape or []] for n in outputs}
    for n in externals:
        if n not in shapes:
            raise CodegenError("CODEGEN-E009", f"{item.name}: input {n} is not an input of the loadable",
                               Location.in_file(item.nnef_path))
    host: dict[str, tuple[int, int]] = {}
    offset = 0
    for key, count in [(f"in:{n}", math.prod(shapes[n])) for n in externals] + \
            [(f"out:{n}", math.prod(out_shapes[n])) for n in outputs]:
        host[key] = (offset, count)
        offset += -(-count // ALIGNMENT_FLOATS) * ALIGNMENT_FLOATS
    return Submission(item, inputs, outputs, out_shapes, at, externals, received, host)


def _nnef(item: ItemInput, op: Any) -> tuple[int, str]:
    """The NNEF line of `op` and its text, safe inside a C comment."""
    line, text = item.instruction(op)
    return line, text.replace("*/", "* /")


def _head(w: CodeWriter, d: DeploymentInput, s: Submission, generator: str) -> dict[int, tuple[int, str]]:
    """The file comment, the includes, the arena and a comment per declaration; returns the line of each
    declaration's comment (by NNEF line, with its text) for the trace."""
    item, name, arena, host, arena_floats = s.item, s.item.name, s.arena, s.host, s.arena_floats
    src = item_file(name)
    w.comment(f"{src} -- generated by {generator}; do not edit.\n"
              f"Proxy of item {name} (target nvdla) of deployment {d.model}/{d.deployment}, from\n"
              f"{item.nnef_rel} (sha256 {item.nnef_sha256}) and {d.schedule_rel}.\n"
              f"The item's computation is its NVDLA loadable ({name}.nvdla of the deployment's codegen/nvdla folder);\n"
              "this C item follows the schedule, receives and sends as a C item does and submits the loadable\n"
              "through the channel of pipeline/codegen/nvdla/proxy.py (where UMD/KMD submit would be on a board).")
    w.line("#define _POSIX_C_SOURCE 200809L   /* open flags, clock_gettime, nanosleep */")
    w.line("#include <errno.h>")
    w.line("#include <fcntl.h>")
    w.line("#include <poll.h>")
    w.line("#include <signal.h>")
    w.line("#include <stdint.h>")
    w.line("#include <stdio.h>")
    w.line("#include <stdlib.h>")
    w.line("#include <string.h>")
    w.line("#include <time.h>")
    w.line("#include <unistd.h>")
    w.line('#include "nnef_runtime.h"')
    w.line('#include "nnef_deployment.h"')
    w.line(f'#include "{weights_file(name)}"')
    w.line("")
    w.comment(f"The arena of item {name}: {arena_floats * 4} bytes (memory_map.json): the inputs the harness stages and\n"
              "the outputs of the loadable (the values sent, the graph outputs the harness reads).")
    w.line(f"float {arena}[{arena_floats}] NNEF_ALIGNED(64);")
    declaration_lines: dict[int, tuple[int, str]] = {}
    for op in item.graph.operations:
        if op.name in ("external", "variable", "constant"):
            line, text = _nnef(item, op)
            tensor = op.output_refs()[0].name
            where = (f"staged by the harness at {arena} + {host['in:' + tensor][0]}" if op.name == "external"
                     else "a parameter of the loadable (its memory list), not of this C item")
            at = w.line(f"/* NNEF {item.nnef_rel}:{line}: {text} -- {where} */")
            declaration_lines[line] = (at, text)
    return declaration_lines


def _channel(w: CodeWriter, name: str) -> None:
    """The channel's C helpers: its descriptors, failure, clock, exact writes and reads with a deadline."""
    w.line(f"static int nnef_dla_request = -1, nnef_dla_reply = -1, nnef_dla_timeout_ms = {DEFAULT_TIMEOUT_MS};")
    w.line("")
    w.comment(f"A failure of the channel stops the program (exit {EXIT_STATUS}): no item may wait forever.")
    w.line("static void nnef_dla_fail(const char *code, const char *what)")
    w.line("{")
    w.line(f'    fprintf(stderr, "%s: nvdla item {name}: %s\\n", code, what);')
    w.line(f"    exit({EXIT_STATUS});")
    w.line("}")
    w.line("")
    w.line("static int64_t nnef_dla_now_ms(void)")
    w.line("{")
    w.line("    struct timespec t;")
    w.line("    clock_gettime(CLOCK_MONOTONIC, &t);")
    w.line("    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;")
    w.line("}")
    w.line("")
    w.line("static void nnef_dla_write(const void *data, size_t bytes)")
    w.line("{")
    w.line("    const unsigned char *p = (const unsigned char *)data;")
    w.line("    for (size_t done = 0; done < bytes;) {")
    w.line("        ssize_t n = write(nnef_dla_request, p + done, bytes - done);")
    w.line("        if (n < 0 && errno == EINTR)")
    w.line("            continue;")
    w.line("        if (n <= 0)")
    w.line('            nnef_dla_fail("RUN-E053", "the emulator server is gone (request not delivered)");')
    w.line("        done += (size_t)n;")
    w.line("    }")
    w.line("}")
    w.line("")
    w.comment("Read exactly `bytes` before `deadline` (ms, monotonic); `what` names the part for the message.")
    w.line("static void nnef_dla_read(void *data, size_t bytes, int64_t deadline, const char *what)")
    w.line("{")
    w.line("    unsigned char *p = (unsigned char *)data;")
    w.line("    char message[160];")
    w.line("    for (size_t done = 0; done < bytes;) {")
    w.line("        struct pollfd f = {nnef_dla_reply, POLLIN, 0};")
    w.line("        int64_t left = deadline - nnef_dla_now_ms();")
    w.line("        int ready = left > 0 ? poll(&f, 1, (int)left) : 0;")
    w.line("        if (ready < 0 && errno == EINTR)")
    w.line("            continue;")
    w.line("        if (ready == 0) {")
    w.line('            snprintf(message, sizeof message, "no answer within %d ms (%s: %zu of %zu bytes)", '
           "nnef_dla_timeout_ms, what, done, bytes);")
    w.line('            nnef_dla_fail("RUN-E055", message);')
    w.line("        }")
    w.line("        ssize_t n = read(nnef_dla_reply, p + done, bytes - done);")
    w.line("        if (n < 0 && errno == EINTR)")
    w.line("            continue;")
    w.line("        if (n <= 0) {")
    w.line('            snprintf(message, sizeof message, "the emulator server is gone after %zu of %zu bytes of the '
           '%s", done, bytes, what);')
    w.line('            nnef_dla_fail(done > 0 ? "RUN-E054" : "RUN-E053", message);')
    w.line("        }")
    w.line("        done += (size_t)n;")
    w.line("    }")
    w.line("}")
    w.line("")
    w.line("static void nnef_dla_u32(unsigned char *p, uint32_t v)")
    w.line("{")
    w.line("    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); "
           "p[3] = (unsigned char)(v >> 24);")
    w.line("}")
    w.line("")
    w.line("static uint32_t nnef_dla_get_u32(const unsigned char *p)")
    w.line("{")
    w.line("    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;")
    w.line("}")
    w.line("")


def _init(w: CodeWriter, name: str) -> tuple[int, int]:
    """The init function (opens the channel); its first and last lines."""
    w.comment(f"Called once by the harness before the first inference: the channel ({request_variable(name)} for\n"
              f"writing, {reply_variable(name)} for reading), within NNEF_DLA_TIMEOUT_MS.")
    init_first = w.line(f"int nnef_item_{name}_init(void)")
    w.line("{")
    w.line(f'    const char *request = getenv("{request_variable(name)}"), *reply = getenv("{reply_variable(name)}");')
    w.line('    const char *timeout = getenv("NNEF_DLA_TIMEOUT_MS");')
    w.line("    if (!request || !reply) {")
    w.line(f'        fprintf(stderr, "RUN-E053: nvdla item {name}: {request_variable(name)} and {reply_variable(name)} '
           'are not set (the execute step starts the emulator server and sets them)\\n");')
    w.line("        return 1;")
    w.line("    }")
    w.line("    if (timeout && atoi(timeout) > 0)")
    w.line("        nnef_dla_timeout_ms = atoi(timeout);")
    w.line("    signal(SIGPIPE, SIG_IGN);   /* a vanished server is a write error (RUN-E053), not a signal */")
    w.line("    int64_t deadline = nnef_dla_now_ms() + nnef_dla_timeout_ms;")
    w.line("    for (;;) {   /* a FIFO opens for writing once its reader (the server) has it open */")
    w.line("        nnef_dla_request = open(request, O_WRONLY | O_NONBLOCK | O_CLOEXEC);")
    w.line("        if (nnef_dla_request >= 0)")
    w.line("            break;")
    w.line("        if (errno != ENXIO && errno != EINTR) {")
    w.line(f'            fprintf(stderr, "RUN-E053: nvdla item {name}: cannot open %s: %s\\n", request, strerror(errno));')
    w.line("            return 1;")
    w.line("        }")
    w.line("        if (nnef_dla_now_ms() > deadline) {")
    w.line(f'            fprintf(stderr, "RUN-E055: nvdla item {name}: no emulator server opened %s within %d ms\\n", '
           "request, nnef_dla_timeout_ms);")
    w.line("            return 1;")
    w.line("        }")
    w.line("        struct timespec pause = {0, 1000000};")
    w.line("        nanosleep(&pause, 0);")
    w.line("    }")
    w.line("    fcntl(nnef_dla_request, F_SETFL, fcntl(nnef_dla_request, F_GETFL) & ~O_NONBLOCK);")
    w.line("    nnef_dla_reply = open(reply, O_RDONLY | O_NONBLOCK | O_CLOEXEC);")
    w.line("    if (nnef_dla_reply < 0) {")
    w.line(f'        fprintf(stderr, "RUN-E053: nvdla item {name}: cannot open %s: %s\\n", reply, strerror(errno));')
    w.line("        return 1;")
    w.line("    }")
    w.line("    return 0;")
    init_last = w.line("}")
    return init_first, init_last


def _submit(w: CodeWriter, s: Submission) -> tuple[int, int]:
    """nnef_dla_submit: the request (header, inputs), the reply (header checked, outputs); its first and last lines."""
    inputs, outputs, out_shapes, arena = s.inputs, s.outputs, s.out_shapes, s.arena
    request_bytes, reply_bytes = s.request_bytes, s.reply_bytes
    order = ", ".join(f"{n} {s}" for n, s in inputs)
    w.comment(f"Submit the loadable and wait for its completion: request {request_bytes} bytes of inputs ({order}),\n"
              f"reply {reply_bytes} bytes of outputs ({', '.join(f'{n} {out_shapes[n]}' for n in outputs)}), float32.")
    submit_first = w.line("static void nnef_dla_submit(uint32_t epoch)")
    w.line("{")
    w.line("    unsigned char header[16];")
    w.line('    memcpy(header, "NVDQ", 4);')
    w.line(f"    nnef_dla_u32(header + 4, {PROTOCOL_VERSION}u);")
    w.line("    nnef_dla_u32(header + 8, epoch);")
    w.line(f"    nnef_dla_u32(header + 12, {request_bytes}u);")
    w.line("    nnef_dla_write(header, sizeof header);")
    for n, _ in inputs:
        w.line(f"    nnef_dla_write({s.source_of(n)}, {s.floats_in(n) * 4}u);   /* {n} */")
    w.line("    int64_t deadline = nnef_dla_now_ms() + nnef_dla_timeout_ms;")
    w.line('    nnef_dla_read(header, sizeof header, deadline, "reply header");')
    w.line('    if (memcmp(header, "NVDR", 4) != 0 || nnef_dla_get_u32(header + 8) != epoch)')
    w.line('        nnef_dla_fail("RUN-E054", "the reply is not the answer to this request (magic or epoch)");')
    w.line("    if (nnef_dla_get_u32(header + 4) != 0u)")   # unsigned against unsigned (MISRA 10.4)
    w.line('        nnef_dla_fail("RUN-E056", "the emulator server reports an error (its log names it)");')
    w.line(f"    if (nnef_dla_get_u32(header + 12) != {reply_bytes}u) {{")
    w.line("        char message[96];")
    w.line(f'        snprintf(message, sizeof message, "the reply announces %u bytes of outputs, not {reply_bytes}", '
           "(unsigned)nnef_dla_get_u32(header + 12));")
    w.line('        nnef_dla_fail("RUN-E054", message);')
    w.line("    }")
    for n in outputs:
        w.line(f'    nnef_dla_read({at(arena, s.host["out:" + n][0])}, {s.floats_out(n) * 4}u, deadline, "output {n}");')
    submit_last = w.line("}")
    return submit_first, submit_last


def _run(w: CodeWriter, d: DeploymentInput, s: Submission, index: int) -> tuple[list[TraceEntry], int, int]:
    """The run function: the schedule in order, the loadable submitted at its step, the other compute steps
    empty; its trace entries, first and last lines."""
    item, name, arena, host, submit_at = s.item, s.item.name, s.arena, s.host, s.at
    src = item_file(name)
    get_call = "nnef_get" if d.sync == "event" else "nnef_get_published"
    trace: list[TraceEntry] = []
    w.comment(f"One inference of item {name}: the steps of {d.schedule_rel} in order; the loadable runs at step "
              f"{submit_at}.")
    run_first = w.line(f"void nnef_item_{name}_run(uint32_t epoch)")
    w.line("{")
    for k, step in enumerate(item.steps):
        op = item.step_ops[k]
        if step.kind == "barrier":
            for text in barrier_step(index, k, step.id):
                w.line(f"    {text}")
            continue
        assert op is not None
        line, text = _nnef(item, op)
        if step.kind == "compute":
            what = ("the loadable is submitted here and the item waits for its completion" if k == submit_at else
                    f"computed by the loadable's submission at step {submit_at}")
            first = w.line(f"    /* step {k}: {item.nnef_rel}:{line}: {text} -- {what} */")
            last = w.line(f"    NNEF_STEP({index}, {k}, epoch, {'nnef_dla_submit(epoch)' if k == submit_at else '(void)0'});")
        elif step.kind == "get":
            first = w.line(f"    /* step {k}: {item.nnef_rel}:{line}: {text} */")
            last = w.line(f"    NNEF_STEP({index}, {k}, epoch, (void){get_call}(&{sync_object(step.var)}, epoch));")
        else:
            value = op.input_refs()[0].name
            first = w.line(f"    /* step {k}: {item.nnef_rel}:{line}: {text} */")
            last = w.line(f"    NNEF_STEP({index}, {k}, epoch, nnef_send(&{sync_object(step.var)}, "
                          f"{at(arena, host['out:' + value][0])}, epoch));")
        trace.append(TraceEntry(line, text, src, first, last))
    run_last = w.line("}")
    return trace, run_first, run_last


def _memory_map(s: Submission) -> dict[str, Any]:
    item = s.item
    return {"schema_version": 1, "item": item.name, "target": "nvdla", "arena": s.arena,
            "arena_bytes": s.arena_floats * 4, "alignment": ALIGNMENT_FLOATS * 4, "steps": len(item.steps),
            "buffers": [{"tensor": key.split(":", 1)[1], "use": key.split(":", 1)[0], "offset": o * 4,
                         "size": c * 4, "first": 0, "last": max(0, len(item.steps) - 1)}
                        for key, (o, c) in s.host.items()],
            "submission": {"step": s.at, "request_bytes": s.request_bytes, "reply_bytes": s.reply_bytes,
                           "inputs": [{"name": n, "shape": shape} for n, shape in s.inputs],
                           "outputs": [{"name": n, "shape": s.out_shapes[n]} for n in s.outputs]}}


def proxy_item(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    """The C proxy of nvdla item `item` (module docstring), as an ItemCode of the C program: the
    submission's layout, then the file's parts in order (head, channel, init, submit, run)."""
    d, name = deployment, item.name
    src = item_file(name)
    s = _submission(d, item)
    w = CodeWriter()
    declaration_lines = _head(w, d, s, generator)
    w.line("")
    _channel(w, name)
    init_first, init_last = _init(w, name)
    w.line("")
    submit_first, submit_last = _submit(w, s)
    w.line("")
    trace, run_first, run_last = _run(w, d, s, index)
    source = w.text()
    trace += [TraceEntry(line, text, src, at, at) for line, (at, text) in declaration_lines.items()]
    weights = CodeWriter()
    weights.comment(f"{weights_file(name)} -- generated by {generator}; do not edit.\n"
                    f"Item {name} (target nvdla) has no parameter in C: they are in its loadable ({name}.nvdla).")
    functions = [{"function": f"nnef_item_{name}_init", "step": None, "nnef_line": None,
                  "lines": [init_first, init_last], "operation": "init"},
                 {"function": "nnef_dla_submit", "step": s.at, "nnef_line": None,
                  "lines": [submit_first, submit_last], "operation": "submit"},
                 {"function": f"nnef_item_{name}_run", "step": None, "nnef_line": None,
                  "lines": [run_first, run_last], "operation": "schedule"}]
    own_outputs = [n for n in d.outputs if d.outputs[n] == name]
    return ItemCode(name, source, weights.text(), sorted(trace, key=lambda x: (x.nnef_line, x.first)), _memory_map(s),
                    [], functions, {n: at(s.arena, s.host['in:' + n][0]) for n in s.externals},
                    {n: at(s.arena, s.host['out:' + n][0]) for n in own_outputs},
                    [step.var for step in item.steps if step.kind == "send"],
                    [step.var for step in item.steps if step.kind == "get"], init=f"nnef_item_{name}_init")
