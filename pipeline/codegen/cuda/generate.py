"""Generate the CUDA code of a deployment whose items are all of target `cuda` (docs/codegen-cuda.md).

Output folder (artifacts/<m>/codegen/cuda/<deployment>/ or a test's folder):

    build.json                    what the builds need: items, inputs, outputs, sources
    nnef_cuda.h, nnef_cuda_emulate.h   the macros and the host emulation (copied from the package)
    nnef_cuda_math.h              exp/log/tanh/sigmoid/softplus/pow from the reference's programs
    nnef_cuda_main.cu             a harness: raw float32 vectors in, raw float32 vectors out
    <ITEM>/nnef_item_<ITEM>.cu    the item: weights, one kernel per NNEF instruction, init and infer
    <ITEM>/nnef_weights_<ITEM>.bin  the weights as binary32, for items above the C generator's
                                  BLOB_MIN_FLOATS (linked into the host code by the assembler's .incbin)
    <ITEM>/trace.json             NNEF instruction -> code lines
    <ITEM>/memory_map.json        the device arena's buffer plan

Each kernel is a `__host__ __device__` body computing whole output elements from (block, thread)
plus a thin `extern "C" __global__` wrapper named `nnef_k_<ITEM>_L<nnef line>_<result>`: the
PTX/SASS gate maps a kernel to its NNEF line from that name alone. Device memory (the arena of
the buffer plan and every weight) is allocated and the weights copied once, in init; an
inference copies its inputs in, launches the kernels in schedule order on the item's one
stream, and copies its outputs out.

Weights of a small item are hex-float initializers in the .cu; above BLOB_MIN_FLOATS floats (the C
generator's threshold) they are the bytes of <ITEM>/nnef_weights_<ITEM>.bin (little-endian binary32,
each array on a 64-byte boundary), placed in the host's .rodata by a file-scope `.incbin` that the
device passes never see (`__CUDA_ARCH__`): nvcc and the host compiler parse no float literal, and
each host array is a #define into that symbol. The path is relative to the code folder, the
working directory of both builds. The array comments keep the variable, its tensor file and
SHA-256; memory_map.json records the blob's SHA-256.

A cuda item exchanging values with other items (send_var/get_var, barriers) is a .cu item of the
deployment's C program instead (pipeline/codegen/cuda/linked.py, the same emitter with
`linked=True`); here, in a one-item deployment, such steps stop at CODEGEN-E006.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline import __version__
from pipeline.files.atomic import write_bytes, write_json, write_text
from pipeline.files.names import confined
from pipeline.codegen.c import item as c_item
from pipeline.codegen.c.kernels.common import flit, ident, strides
from pipeline.codegen.c.planner import Buffer, check_plan, plan_buffers
from pipeline.codegen.c.writer import CodeWriter
from pipeline.codegen.codes import CodegenError
from pipeline.codegen.cuda.kernels import EMITTERS, VIEW_OPERATIONS, Arg, Body, Unsupported
from pipeline.codegen.cuda.programs import math_header
from pipeline.codegen.deployment import DeploymentInput, ItemInput
from pipeline.diagnostics import Location
from pipeline.project.layout import project_relative
from pipeline.nnef.graph import Operation, Ref

GENERATOR = f"pipeline.codegen.cuda {__version__}"
RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_FILES = ("nnef_cuda.h", "nnef_cuda_emulate.h")
THREADS = 128
ALIGNMENT = 256
F32 = np.float32


def item_file(item: str) -> str:
    return f"nnef_item_{item}.cu"


def kernel_name(item: str, line: int, result: str) -> str:
    """The symbol of an instruction's kernel; the gate reads the NNEF line back from it."""
    return f"nnef_k_{ident(item)}_L{line}_{ident(result)}"


def weights_blob_file(item: str) -> str:
    return f"nnef_weights_{item}.bin"


def weights_symbol(item: str) -> str:
    return f"nnef_weights_{ident(item)}"


BLOB_ALIGNMENT = 64


KERNEL_NAME = re.compile(r"^nnef_k_(?P<item>[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*?)_L(?P<line>\d+)_(?P<result>\w+)$")


@dataclass
class Storage:
    kind: str                  # "arena" | "weight"
    root: str                  # the tensor owning the storage
    c: str                     # device pointer expression


class CudaItemEmitter:
    """One item of target cuda as a .cu file (see the module docstring)."""

    def __init__(self, d: DeploymentInput, item: ItemInput, index: int = 0, linked: bool = False) -> None:
        """`linked`: the item is one of a mixed deployment's C program (cuda/linked.py) and exchanges
        values with the other items; `index` is its place in the program's item table."""
        self.d, self.item, self.graph = d, item, item.graph
        self.index, self.linked = index, linked
        self.storage: dict[str, Storage] = {}
        self.host_arrays: dict[str, tuple[str, np.ndarray, str]] = {}   # device name -> host name, values, note
        self.blob: bytes | None = None   # the weights as binary32 when linked by .incbin (_host_weights)

    def _where(self, op: Operation) -> Location:
        if op.span is None:
            return Location.in_file(self.item.nnef_rel)
        return Location(self.item.nnef_rel, op.span.line, op.span.column, op.span.end_line, op.span.end_column)

    def _shape(self, name: str) -> tuple[int, ...]:
        info = self.graph.tensors.get(name)
        if info is None or info.shape is None:
            raise CodegenError("CODEGEN-E008", f"tensor {name} has no inferred shape", Location.in_file(self.item.nnef_rel))
        return tuple(int(s) for s in info.shape)

    def _line(self, op: Operation) -> tuple[int, str]:
        line = op.span.line if op.span else 0
        text = self.item.lines[line - 1].strip() if 0 < line <= len(self.item.lines) else op.name
        return line, text

    def _declare(self) -> None:
        for op in self.graph.operations:
            if op.name not in ("external", "variable", "constant"):
                if op.name == "variablesync" and not self.linked:
                    raise CodegenError("CODEGEN-E006", "CUDA items exchanging values with other items "
                                       "(variablesync/send_var/get_var) are not generated yet", self._where(op))
                continue
            name = op.output_refs()[0].name
            if op.name == "external":
                self.storage[name] = Storage("arena", name, "")
                continue
            if op.name == "variable":
                label = str(op.attribs.get("label", ""))
                values = np.asarray(self.d.weights[label].array, F32)
                note = f"variable {name} (label '{label}'): file {self.d.weights[label].rel}, sha256 {self.d.weights[label].sha256}"
                key = ident(label)
            else:
                shape = [int(s) for s in op.attribs["shape"]]
                raw = op.attribs["value"]
                raw = list(raw) if isinstance(raw, (list, tuple)) else [raw]
                data = np.asarray([F32(float(v)) for v in raw], F32)
                values = np.full(shape, data[0], F32) if data.size == 1 else data.reshape(shape)
                note = f"constant {name}: literal values rounded once to float32"
                key = f"K_{ident(name)}"
            line, text = self._line(op)
            note = f"NNEF {self.item.nnef_rel}:{line}: {text}\n{note}"
            self.host_arrays[f"D_{key}"] = (f"H_{key}", values.reshape(-1), note)
            self.storage[name] = Storage("weight", name, f"D_{key}")

    def _arg(self, value: Any, op: Operation) -> Arg | list[Arg]:
        if isinstance(value, list):
            return [self._arg(v, op) for v in value]  # type: ignore[misc]
        if isinstance(value, Ref):
            return Arg(self._shape(value.name), f"x_{ident(value.name)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodegenError("CODEGEN-E002", f"{op.name}: operand {value!r} is not a tensor or a number", self._where(op))
        return Arg((), "", F32(float(value)))

    def _refuse_unsupported(self) -> None:
        """Every operation of the item without a CUDA kernel, in one CODEGEN-E001 (issue 15)."""
        missing = [op for step, op in zip(self.item.steps, self.item.step_ops)
                   if step.kind == "compute" and op is not None and op.name not in VIEW_OPERATIONS
                   and op.name not in EMITTERS]
        if missing:
            listed = "; ".join(f"'{op.name}' at {self._where(op)}" for op in missing)
            raise CodegenError("CODEGEN-E001", f"{len(missing)} operation(s) not supported by the CUDA generator: "
                               f"{listed}; supported: {', '.join(sorted(EMITTERS))}", self._where(missing[0]))

    def generate(self) -> dict[str, Any]:
        item = self.item
        self._declare()
        self._refuse_unsupported()
        kernels: list[tuple[int, Operation, Body]] = []
        for index, (step, op) in enumerate(zip(item.steps, item.step_ops)):
            if (step.kind != "compute" or op is None) and self.linked:
                if step.kind == "get" and op is not None:   # the device buffer the host value is copied into
                    name = op.output_refs()[0].name
                    self.storage[name] = Storage("arena", name, "")
                continue
            if step.kind != "compute" or op is None:
                raise CodegenError("CODEGEN-E006", f"step {index} of item {item.name} is a {step.kind} step: CUDA "
                                   "items exchanging values with other items are not generated yet",
                                   Location.in_file(self.d.schedule_rel))
            result = op.output_refs()[0].name
            if op.name in VIEW_OPERATIONS:
                self.storage[result] = self.storage[op.input_refs()[0].name]
                continue
            emit = EMITTERS.get(op.name)
            if emit is None:
                raise CodegenError("CODEGEN-E001", f"operation '{op.name}' is not supported by the CUDA generator; "
                                   f"supported: {', '.join(sorted(EMITTERS))}", self._where(op))
            if len(op.output_refs()) != 1:
                raise CodegenError("CODEGEN-E001", f"{op.name}: one result per kernel", self._where(op))
            for ref in op.output_refs() + op.input_refs():
                info = self.graph.tensors.get(ref.name)
                if info is not None and info.dtype != "scalar":
                    raise CodegenError("CODEGEN-E002", f"{op.name}: tensor '{ref.name}' is {info.dtype}; scalar only",
                                       self._where(op))
            body = Body(op, {k: self._arg(v, op) for k, v in op.inputs.items()}, self._shape(result))
            try:
                emit(body)
            except (Unsupported, ValueError) as error:
                raise CodegenError("CODEGEN-E002", str(error), self._where(op)) from None
            self.storage[result] = Storage("arena", result, "")
            kernels.append((index, op, body))
        plan = self._plan()
        offsets = {b.name: b.offset // 4 for b in plan.buffers}
        for name, storage in self.storage.items():
            if storage.kind == "arena" and storage.root == name:
                storage.c = f"(nnef_dev_arena + {offsets[name]})"
        for name, storage in self.storage.items():
            if storage.root != name:
                storage.c = self.storage[storage.root].c
        return self._assemble(kernels, plan)

    def own_outputs(self) -> list[str]:
        """The graph outputs this item computes (all of them in a one-item deployment)."""
        return sorted(n for n, owner in self.d.outputs.items() if owner == self.item.name)

    def _plan(self):
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for name, s in self.storage.items():
            if s.kind == "arena" and s.root == name:
                first.setdefault(name, -1)
        for index, op in enumerate(self.item.step_ops):
            if op is None:                 # a barrier (linked items)
                continue
            for ref in op.output_refs():
                s = self.storage.get(ref.name)
                if s is not None and s.kind == "arena" and s.root == ref.name:
                    first[ref.name] = index
                    last[ref.name] = max(last.get(ref.name, index), index)
            for ref in op.input_refs():
                s = self.storage.get(ref.name)
                if s is not None and s.kind == "arena":
                    last[s.root] = max(last.get(s.root, index), index)
        for name in self.own_outputs():
            s = self.storage.get(name)
            if s is None or s.kind != "arena":
                raise CodegenError("CODEGEN-E002", f"graph output {name} is not computed by item {self.item.name}",
                                   Location.in_file(self.item.nnef_rel))
            last[s.root] = len(self.item.steps)
        buffers = [Buffer(n, math.prod(self._shape(n)) * 4, first[n], max(last.get(n, first[n]), first[n]))
                   for n in first]
        plan = plan_buffers(buffers, ALIGNMENT)
        problems = check_plan(plan)
        if problems:
            raise CodegenError("CODEGEN-E008", f"buffer plan of item {self.item.name}: {problems[0]}",
                               Location.in_file(self.item.nnef_rel))
        return plan

    def _host_weights(self, w: CodeWriter) -> bytes | None:
        """The host copies of the weights: hex-float initializers, or #defines into the linked blob
        when the item holds more than the C generator's BLOB_MIN_FLOATS floats (returned)."""
        total = sum(int(values.size) for _, values, _ in self.host_arrays.values())
        if total <= c_item.BLOB_MIN_FLOATS:
            for host, values, note in self.host_arrays.values():
                w.comment(note)
                lits = [flit(v) for v in values]
                w.line(f"static const float {host}[{len(lits)}] = {{")
                for start in range(0, len(lits), 8):
                    w.line("    " + ", ".join(lits[start:start + 8]) + ",")
                w.line("};")
            return None
        item = self.item.name
        symbol, name = weights_symbol(item), weights_blob_file(item)
        w.comment(f"The weights are the bytes of {item}/{name} (IEEE 754 binary32, little-endian, every array on a\n"
                  f"{BLOB_ALIGNMENT}-byte boundary), placed in the host's .rodata by the assembler's .incbin (the device\n"
                  "passes, __CUDA_ARCH__ defined, never see it): no compiler parses them. The path is relative to\n"
                  "the code folder, the working directory of the nvcc and emulation builds; a build that cannot\n"
                  "find the file fails.")
        w.line(f"extern \"C\" const float {symbol}[];")
        w.line("#if !defined(__CUDA_ARCH__)")
        w.line(f'__asm__(".pushsection .rodata\\n\\t.balign {BLOB_ALIGNMENT}\\n\\t.globl {symbol}\\n{symbol}:\\n'
               f'\\t.incbin \\"{item}/{name}\\"\\n\\t.popsection");')
        w.line("#endif")
        blob = bytearray()
        for host, values, note in self.host_arrays.values():
            blob.extend(bytes(-len(blob) % BLOB_ALIGNMENT))
            first = len(blob) // 4
            blob.extend(np.asarray(values, F32).reshape(-1).astype("<f4", copy=False).tobytes())
            w.comment(note)
            w.line(f"#define {host} ({symbol} + {first}) /* floats [{first}, {len(blob) // 4}) of {name} */")
        return bytes(blob)

    def _assemble(self, kernels: list[tuple[int, Operation, Body]], plan) -> dict[str, Any]:
        item, d = self.item, self.d
        w = CodeWriter()
        src = item_file(item.name)
        entries: list[dict[str, Any]] = []
        kernel_records: list[dict[str, Any]] = []
        w.comment(f"{src} -- generated by {GENERATOR}; do not edit.\n"
                  f"Item {item.name} (target cuda) of deployment {d.model}/{d.deployment}, from\n"
                  f"{item.nnef_rel} (sha256 {item.nnef_sha256}) and {d.schedule_rel}.\n"
                  "One kernel per NNEF instruction (file, line and text in its comment; the line also in its name\n"
                  "nnef_k_<item>_L<line>_<result>); each thread computes whole output elements in the reference's\n"
                  "order; no atomics, no shared memory, no CUDA math library. Device memory is allocated and the\n"
                  "weights are copied once, in init; see docs/codegen-cuda.md.")
        if self.linked:
            w.line("#include <stdio.h>")
            w.line("#include <stdlib.h>")
        w.line('#include "nnef_cuda.h"')
        w.line('#include "nnef_cuda_math.h"')
        if self.linked:
            w.line('#include "nnef_sync.h"')
        w.line("")
        w.line(f"#define NNEF_THREADS {THREADS}u")
        w.line("")
        blob = self.blob = self._host_weights(w)
        w.line("")
        w.comment(f"Device memory, allocated once by nnef_cuda_{item.name}_init: the arena ({plan.arena_bytes} bytes, "
                  "memory_map.json)\nand one array per weight; the item's one stream.")
        w.line("static float *nnef_dev_arena;")
        for device in self.host_arrays:
            w.line(f"static float *{device};")
        w.line("static cudaStream_t nnef_stream;")
        w.line("")
        launches: dict[int, str] = {}
        for index, op, body in kernels:
            line, text = self._line(op)
            result = op.output_refs()[0].name
            kname = kernel_name(item.name, line, result)
            bname = f"nnef_body_L{line}_{ident(result)}"
            params: list[str] = []
            pointers: list[str] = []
            for value in op.inputs.values():
                for ref in (value if isinstance(value, list) else [value]):
                    if isinstance(ref, Ref) and f"x_{ident(ref.name)}" not in params:
                        params.append(f"x_{ident(ref.name)}")
                        pointers.append(self.storage[ref.name].c)
            text_body = "\n".join(body.lines)
            used = [p for p in params if re.search(rf"\b{p}\b", text_body)]
            pointers = [ptr for p, ptr in zip(params, pointers) if p in used]
            signature = ", ".join([f"const float *__restrict__ {p}" for p in used] + ["float *__restrict__ y"])
            count = math.prod(body.out_shape)
            first = w.line_number
            w.comment(f"NNEF {item.nnef_rel}:{line}:\n    {text}\n"
                      f"Step {index} of item {item.name}: {op.name} -> {result} {list(body.out_shape)}, "
                      f"{count} elements, one per thread.")
            w.line(f"NNEF_HD void {bname}(unsigned nnef_block, unsigned nnef_thread, {signature})")
            w.line("{")
            w.line("    const unsigned i = nnef_block * NNEF_THREADS + nnef_thread;")
            w.line(f"    if (i >= {count}u) return;")
            st = strides(body.out_shape)
            for a, (n, s) in enumerate(zip(body.out_shape, st)):
                if re.search(rf"\bu{a}\b", text_body):
                    w.line(f"    const unsigned u{a} = {'i' if s == 1 else f'(i / {s}u)'}{f' % {n}u' if a else ''};")
            for text_line in body.lines:
                w.line("    " + text_line)
            w.line("}")
            w.line("#if !defined(NNEF_CUDA_EMULATE)")
            w.line(f'extern "C" __global__ void {kname}({signature})')
            w.line("{")
            args = ", ".join(used + ["y"])
            w.line(f"    {bname}(blockIdx.x, threadIdx.x, {args});")
            w.line("}")
            w.line("#endif")
            last = w.line("")
            entries.append({"nnef_line": line, "instruction": text, "code_file": src, "code_lines": [first, last - 1]})
            blocks = -(-count // THREADS)
            launches[index] = (f"NNEF_LAUNCH({kname}, {bname}, {blocks}u, "
                               f"{', '.join(pointers + [self.storage[result].c])});")
            kernel_records.append({"kernel": kname, "step": index, "nnef_line": line, "operation": op.name,
                                   "elements": count, "blocks": blocks, "threads": THREADS})
        if self.linked:
            from pipeline.codegen.cuda.linked import linked_tail

            return linked_tail(self, w, launches, entries, kernel_records, plan)
        # init
        w.comment("Allocate device memory and copy the weights, once; nothing is allocated or copied later but "
                  "inputs and outputs.")
        w.line(f'extern "C" int nnef_cuda_{item.name}_init(void)')
        w.line("{")
        w.line("    NNEF_CUDA_CHECK(cudaStreamCreate(&nnef_stream));")
        w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&nnef_dev_arena, {max(plan.arena_bytes, 4)}u));")
        for device, (host, values, _) in self.host_arrays.items():
            w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&{device}, {values.size * 4}u));")
            w.line(f"    NNEF_CUDA_CHECK(cudaMemcpy({device}, {host}, {values.size * 4}u, cudaMemcpyHostToDevice));")
        w.line("    return 0;")
        w.line("}")
        w.line("")
        inputs = [op.output_refs()[0].name for op in self.graph.operations if op.name == "external"]
        outputs = sorted(self.d.outputs)
        w.comment(f"One inference: inputs ({', '.join(inputs)}) in, the steps of {d.schedule_rel} in order on the "
                  f"item's stream,\noutputs ({', '.join(outputs)}) out.")
        w.line(f'extern "C" int nnef_cuda_{item.name}_infer(const float *const *inputs, float *const *outputs)')
        w.line("{")
        for n, name in enumerate(inputs):
            size = math.prod(self._shape(name)) * 4
            w.line(f"    NNEF_CUDA_CHECK(cudaMemcpyAsync({self.storage[name].c}, inputs[{n}], {size}u, "
                   f"cudaMemcpyHostToDevice, nnef_stream));")
        for index, op in enumerate(item.step_ops):
            assert op is not None
            line, text = self._line(op)
            w.line(f"    /* step {index}: {item.nnef_rel}:{line}: {text.replace('*/', '* /')} */")
            if index in launches:
                w.line("    " + launches[index])
        for n, name in enumerate(outputs):
            size = math.prod(self._shape(name)) * 4
            w.line(f"    NNEF_CUDA_CHECK(cudaMemcpyAsync(outputs[{n}], {self.storage[name].c}, {size}u, "
                   f"cudaMemcpyDeviceToHost, nnef_stream));")
        w.line("    NNEF_CUDA_CHECK(cudaStreamSynchronize(nnef_stream));")
        w.line("    return (int)cudaGetLastError();")
        w.line("}")
        memory_map = {"schema_version": 1, "item": item.name, "arena_bytes": plan.arena_bytes,
                      "alignment": plan.alignment,
                      **({"weights_blob": {"file": weights_blob_file(item.name), "bytes": len(blob),
                                           "sha256": hashlib.sha256(blob).hexdigest()}} if blob is not None else {}),
                      "buffers": [{"tensor": b.name, "offset": b.offset, "size": b.size, "first": b.first,
                                   "last": b.last} for b in plan.buffers],
                      "weights": [{"array": k, "bytes": int(v[1].size) * 4} for k, v in self.host_arrays.items()]}
        return {"source": w.text(), "blob": blob, "entries": entries, "kernels": kernel_records, "memory_map": memory_map,
                "inputs": [{"name": n, "shape": list(self._shape(n))} for n in inputs],
                "outputs": [{"name": n, "shape": list(self._shape(n))} for n in outputs]}


def _main(item: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> str:
    w = CodeWriter()
    w.comment(f"nnef_cuda_main.cu -- generated by {GENERATOR}; do not edit.\n"
              "Harness: nnef_cuda_run IN_DIR OUT_DIR VECTORS [SEED] reads IN_DIR/<input>.f32 (VECTORS x the input's\n"
              "elements, raw little-endian float32), runs one inference per vector, writes OUT_DIR/<output>.f32.\n"
              "SEED (host emulation only): 0 runs blocks and threads in order, otherwise in a shuffled order.")
    w.line("#include <stdio.h>")
    w.line("#include <stdlib.h>")
    w.line(f'#include "{item}/{item_file(item)}"')
    w.line("")
    w.line("static float *nnef_read(const char *dir, const char *name, size_t n)")
    w.line("{")
    w.line("    char path[4096]; snprintf(path, sizeof path, \"%s/%s.f32\", dir, name);")
    w.line("    FILE *f = fopen(path, \"rb\"); if (!f) { fprintf(stderr, \"cannot read %s\\n\", path); exit(2); }")
    w.line("    float *p = (float *)malloc(n * sizeof(float));")
    w.line("    if (!p || fread(p, sizeof(float), n, f) != n) { fprintf(stderr, \"short file %s\\n\", path); exit(2); }")
    w.line("    fclose(f); return p;")
    w.line("}")
    w.line("")
    w.line("int main(int argc, char **argv)")
    w.line("{")
    w.line("    if (argc < 4) { fprintf(stderr, \"usage: %s IN_DIR OUT_DIR VECTORS [SEED]\\n\", argv[0]); return 2; }")
    w.line("    const size_t vectors = (size_t)strtoul(argv[3], 0, 10);")
    w.line("#if defined(NNEF_CUDA_EMULATE)")
    w.line("    nnef_emulate_seed = argc > 4 ? (uint64_t)strtoull(argv[4], 0, 10) : 0u;")
    w.line("#endif")
    w.line(f"    int rc = nnef_cuda_{item}_init();")
    w.line("    if (rc) { fprintf(stderr, \"init: CUDA error %d (%s)\\n\", rc, cudaGetErrorString((cudaError_t)rc)); return 1; }")
    for n, spec in enumerate(inputs):
        w.line(f"    float *in{n} = nnef_read(argv[1], \"{spec['name']}\", vectors * {math.prod(spec['shape'])}u);")
    for n, spec in enumerate(outputs):
        w.line(f"    float *out{n} = (float *)malloc(vectors * {math.prod(spec['shape'])}u * sizeof(float));")
    w.line("    for (size_t v = 0; v < vectors; ++v) {")
    ins = ", ".join(f"in{n} + v * {math.prod(s['shape'])}u" for n, s in enumerate(inputs)) or "0"
    outs = ", ".join(f"out{n} + v * {math.prod(s['shape'])}u" for n, s in enumerate(outputs))
    w.line(f"        const float *ins[{max(1, len(inputs))}] = {{{ins}}};")
    w.line(f"        float *outs[{max(1, len(outputs))}] = {{{outs}}};")
    w.line(f"        rc = nnef_cuda_{item}_infer(ins, outs);")
    w.line("        if (rc) { fprintf(stderr, \"infer: CUDA error %d (%s)\\n\", rc, cudaGetErrorString((cudaError_t)rc)); return 1; }")
    w.line("    }")
    for n, spec in enumerate(outputs):
        size = math.prod(spec["shape"])
        w.line("    {")
        w.line(f"        char path[4096]; snprintf(path, sizeof path, \"%s/%s.f32\", argv[2], \"{spec['name']}\");")
        w.line("        FILE *f = fopen(path, \"wb\");")
        w.line(f"        if (!f || fwrite(out{n}, sizeof(float), vectors * {size}u, f) != vectors * {size}u) return 2;")
        w.line("        fclose(f);")
        w.line("    }")
    w.line("    return 0;")
    w.line("}")
    return w.text()


def generate_cuda(deployment: DeploymentInput, out_dir: str | Path, architectures: tuple[str, ...] = ()
                  ) -> dict[str, Any]:
    """Generate and write the CUDA code of a one-item cuda deployment; returns build.json's content.

    Raises CodegenError: E006 an item of another target, several items or exchanges between
    items (not generated yet), E001/E002 an instruction this generator cannot implement.
    """
    others = [f"{i.name} ({i.target})" for i in deployment.items if i.target != "cuda"]
    if others or len(deployment.items) != 1:
        raise CodegenError("CODEGEN-E006", "the CUDA generator handles deployments of one cuda item today; "
                           f"items: {', '.join(f'{i.name} ({i.target})' for i in deployment.items)}",
                           Location.in_file(deployment.plan_rel))
    item = deployment.items[0]
    folder = Path(out_dir)
    code = CudaItemEmitter(deployment, item).generate()
    for name in RUNTIME_FILES:
        write_text(folder / name, (RUNTIME_DIR / name).read_text(encoding="utf-8"))
    write_text(folder / "nnef_cuda_math.h", math_header())
    item_dir = confined(folder, item.name)
    write_text(item_dir / item_file(item.name), code["source"])
    if code["blob"] is not None:
        write_bytes(item_dir / weights_blob_file(item.name), code["blob"])
    write_text(folder / "nnef_cuda_main.cu", _main(item.name, code["inputs"], code["outputs"]))
    rel = project_relative(folder, deployment.root)
    entries = [{**e, "code_file": f"{rel}/{item.name}/{e['code_file']}"} for e in code["entries"]]
    write_json(item_dir / "trace.json", {
        "schema_version": 1, "item": item.name, "target": "cuda", "nnef_file": item.nnef_rel,
        "nnef_sha256": item.nnef_sha256, "entries": entries})
    write_json(item_dir / "memory_map.json", code["memory_map"])
    manifest = {"schema_version": 1, "generator": GENERATOR, "model": deployment.model,
                "deployment": deployment.deployment, "threads": THREADS,
                **({"architectures": list(architectures)} if architectures else {}),
                "items": [{"name": item.name, "source": f"{item.name}/{item_file(item.name)}",
                           "kernels": code["kernels"]}],
                "main": "nnef_cuda_main.cu", "inputs": code["inputs"], "outputs": code["outputs"]}
    write_json(folder / "build.json", manifest)
    return manifest
