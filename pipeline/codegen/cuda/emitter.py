"""A CUDA item's device side: one kernel per NNEF instruction, the weights, the device memory
(docs/codegen-cuda.md). Its host side is written by the program the item belongs to: its own
one-item program (cuda/generate.py) or a mixed deployment's C program (cuda/linked.py).

Each kernel is a `__host__ __device__` body computing whole output elements from (block, thread)
plus a thin `extern "C" __global__` wrapper named `nnef_k_<ITEM>_L<nnef line>_<result>`: the
PTX/SASS gate maps a kernel to its NNEF line from that name alone. Device memory (the arena of
the buffer plan and every weight) is allocated and the weights copied once, in the host side's
init; an inference launches the kernels in schedule order on the item's one stream.

Weights of a small item are hex-float initializers in the .cu; above BLOB_MIN_FLOATS floats (the
item contract's threshold, shared with the C emitter) they are the bytes of
<ITEM>/nnef_weights_<ITEM>.bin (little-endian binary32, each array on a 64-byte boundary), placed
in the host's .rodata by a file-scope `.incbin` that the device passes never see
(`__CUDA_ARCH__`): nvcc and the host compiler parse no float literal, and each host array is a
#define into that symbol. The path is relative to the code folder, the working directory of both
builds. The array comments keep the variable, its tensor file and SHA-256; memory_map.json records
the blob's SHA-256.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline import __version__
from pipeline.codegen.shared import contract
from pipeline.codegen.shared.conditions import is_condition
from pipeline.codegen.shared.contract import weights_blob_file
from pipeline.codegen.shared.planner import Buffer, Plan, checked_plan
from pipeline.codegen.shared.spelling import flit, ident, strides
from pipeline.codegen.shared.writer import CodeWriter
from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.cuda.kernels import EMITTERS, VIEW_OPERATIONS, Arg, Body, Unsupported
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput
from pipeline.diagnostics import Location
from pipeline.nnef.graph import Operation, Ref

GENERATOR = f"pipeline.codegen.cuda {__version__}"
THREADS = 128
ALIGNMENT = 256
F32 = np.float32


def item_file(item: str) -> str:
    return f"nnef_item_{item}.cu"


def kernel_name(item: str, line: int, result: str) -> str:
    """The symbol of an instruction's kernel; the gate reads the NNEF line back from it."""
    return f"nnef_k_{ident(item)}_L{line}_{ident(result)}"


def weights_symbol(item: str) -> str:
    return f"nnef_weights_{ident(item)}"


BLOB_ALIGNMENT = 64


KERNEL_NAME = re.compile(r"^nnef_k_(?P<item>[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*?)_L(?P<line>\d+)_(?P<result>\w+)$")


@dataclass
class DeviceCode:
    """The device side of a CUDA item and what its host side needs: the .cu written so far, the launch
    statement of each compute step's kernel, the kernels' trace entries and records, the buffer plan of
    the device arena and the weights' bytes when they are linked as a binary file."""

    writer: CodeWriter
    launches: dict[int, str]           # step -> NNEF_LAUNCH(...) statement
    entries: list[dict[str, Any]]      # trace entries of the kernels (code lines in the .cu)
    kernels: list[dict[str, Any]]      # kernel, step, nnef_line, operation, elements, blocks, threads
    plan: Plan
    blob: bytes | None


@dataclass
class Storage:
    kind: str                  # "arena" | "weight"
    root: str                  # the tensor owning the storage
    c: str                     # device pointer expression


class CudaItemEmitter:
    """One item of target cuda as a .cu file (see the module docstring)."""

    def __init__(self, d: DeploymentInput, item: ItemInput, index: int = 0, linked: bool = False) -> None:
        """`linked`: the item is one of a mixed deployment's C program (cuda/linked.py writes its host
        side) and exchanges values with the other items; `index` is its place in the program's item table."""
        self.d, self.item, self.graph = d, item, item.graph
        self.index, self.linked = index, linked
        self.storage: dict[str, Storage] = {}
        self.host_arrays: dict[str, tuple[str, np.ndarray, str]] = {}   # device name -> host name, values, note

    def _where(self, op: Operation) -> Location:
        return self.item.where(op)

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.item.shape(name)

    def _line(self, op: Operation) -> tuple[int, str]:
        return self.item.instruction(op)

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

    def generate(self) -> DeviceCode:
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
            if len(op.output_refs()) != 1 and op.name != "split":
                raise CodegenError("CODEGEN-E001", f"{op.name}: one result per kernel", self._where(op))
            for ref in op.output_refs() + op.input_refs():
                info = self.graph.tensors.get(ref.name)
                if info is not None and info.dtype != "scalar" and not is_condition(self.graph, ref.name):
                    raise CodegenError("CODEGEN-E002", f"{op.name}: tensor '{ref.name}' is {info.dtype}; scalar only "
                                       "(and constant logical tensors as select conditions)", self._where(op))
            offset = 0
            for part, ref in enumerate(op.output_refs()):  # one kernel per result (split's parts)
                body = Body(op, {k: self._arg(v, op) for k, v in op.inputs.items()}, self._shape(ref.name), part,
                            offset)
                if op.name == "split":
                    offset += self._shape(ref.name)[int(op.attribs["axis"])]
                try:
                    emit(body)
                except (Unsupported, ValueError) as error:
                    raise CodegenError("CODEGEN-E002", str(error), self._where(op)) from None
                self.storage[ref.name] = Storage("arena", ref.name, "")
                kernels.append((index, op, body))
        plan = self._plan()
        offsets = {b.name: b.offset // 4 for b in plan.buffers}
        for name, storage in self.storage.items():
            if storage.kind == "arena" and storage.root == name:
                storage.c = f"(nnef_dev_arena + {offsets[name]})"
        for name, storage in self.storage.items():
            if storage.root != name:
                storage.c = self.storage[storage.root].c
        return self._device(kernels, plan)

    def own_outputs(self) -> list[str]:
        """The graph outputs this item computes (all of them in a one-item deployment)."""
        return sorted(n for n, owner in self.d.outputs.items() if owner == self.item.name)

    def _plan(self) -> Plan:
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
        return checked_plan(buffers, ALIGNMENT, self.item.name, self.item.nnef_rel)

    def _host_weights(self, w: CodeWriter) -> bytes | None:
        """The host copies of the weights: hex-float initializers, or #defines into the linked blob
        when the item holds more than the C generator's BLOB_MIN_FLOATS floats (returned)."""
        total = sum(int(values.size) for _, values, _ in self.host_arrays.values())
        if total <= contract.BLOB_MIN_FLOATS:
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

    def _device(self, kernels: list[tuple[int, Operation, Body]], plan: Plan) -> DeviceCode:
        """The item's .cu up to its host side: header, weights, device memory, one kernel per instruction."""
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
        blob = self._host_weights(w)
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
            result = op.output_refs()[body.output].name
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
            launch = f"NNEF_LAUNCH({kname}, {bname}, {blocks}u, {', '.join(pointers + [self.storage[result].c])});"
            launches[index] = f"{launches[index]} {launch}" if index in launches else launch
            kernel_records.append({"kernel": kname, "step": index, "nnef_line": line, "operation": op.name,
                                   "elements": count, "blocks": blocks, "threads": THREADS})
        return DeviceCode(w, launches, entries, kernel_records, plan, blob)
