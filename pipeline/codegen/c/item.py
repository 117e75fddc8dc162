"""One item's C source: tensors in a static arena, one function per NNEF instruction, and the
run function that executes the item's schedule step by step.

Storage. Inputs and computed tensors live in the item's arena at the offsets of the buffer
plan (planner.py); `variable` and `constant` tensors are `static const float` arrays in the
item's weights header; a value received with get_var is read in place from the sync
variable's own buffer; reshape/squeeze/unsqueeze/copy results share their operand's storage.

Functions. Each instruction becomes `static void nnef_op_<result>(inputs, outputs[, scratch])`
headed by a comment with the NNEF file, line and text; its body comes from the operation's
emitter (kernels/). The run function calls them in schedule order, with send, get and barrier
steps in between; in the instrumented build each step is wrapped by start/end events.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.codegen.c.kernels import VIEW_OPERATIONS, lookup, supported_operations
from pipeline.codegen.c.kernels.common import ConstArray, Kernel, Operand
from pipeline.codegen.shared import contract
from pipeline.codegen.shared.conditions import is_condition
from pipeline.codegen.shared.contract import (ItemCode, TraceEntry, barrier_step, item_file, sync_buffer, sync_object,
                                              weights_blob_file, weights_file)
from pipeline.codegen.shared.planner import Buffer, Plan, checked_plan
from pipeline.codegen.shared.spelling import F32, flits, ident
from pipeline.codegen.c.tidy import tidy_item
from pipeline.codegen.shared.writer import CodeWriter
from pipeline.codegen.shared.errors import CodegenError
from pipeline.diagnostics import Location
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput, Weight
from pipeline.nnef.graph import Operation, Ref

ALIGNMENT = 64
DECLARATIONS = ("external", "variable", "variablesync", "constant")


def c_name(name: str) -> str:
    """The C spelling of an NNEF name or label (always used behind a prefix, which keeps it
    clear of C keywords)."""
    return ident(name)


def weights_symbol(item: str) -> str:
    return f"nnef_weights_{item}"


@dataclass
class Storage:
    """Where a tensor's elements are: an arena buffer, a constant array or a sync buffer."""

    kind: str                  # "arena" | "const" | "sync"
    root: str                  # the tensor (or sync variable) owning the storage
    c: str                     # C expression of the first element


def _literal_f32(value: Any) -> np.float32:
    return F32(float(value))


class ItemEmitter:
    """Generates one item (see the module docstring)."""

    def __init__(self, deployment: DeploymentInput, item: ItemInput, index: int, lanes: int,
                 generator: str) -> None:
        self.d = deployment
        self.item = item
        self.index = index
        self.lanes = lanes
        self.generator = generator
        self.graph = item.graph
        self.arrays: dict[str, ConstArray] = {}
        self.storage: dict[str, Storage] = {}
        self.const_values: dict[str, tuple[np.ndarray, str | None]] = {}
        self.arena = f"nnef_arena_{item.name}"

    # ------------------------------------------------------------------ analysis
    def _where(self, op: Operation) -> Location:
        return self.item.where(op)

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.item.shape(name)

    def _check_scalar(self, op: Operation) -> None:
        for ref in op.output_refs() + op.input_refs():
            info = self.graph.tensors.get(ref.name)
            if info is not None and info.dtype != "scalar" and not is_condition(self.graph, ref.name):
                raise CodegenError("CODEGEN-E002", f"{op.name}: tensor '{ref.name}' has element type {info.dtype}; "
                                   "the C generator supports scalar (float32) tensors only (and constant logical "
                                   "tensors as select conditions)", self._where(op))

    def _declare(self) -> None:
        """Storage of declared tensors (inputs, weights, constants)."""
        for op in self.graph.operations:
            if op.name not in DECLARATIONS:
                continue
            self._check_scalar(op)
            name = op.output_refs()[0].name
            if op.name == "variable":
                label = str(op.attribs.get("label", ""))
                weight = self.d.weights[label]
                self.const_values[name] = (np.asarray(weight.array, F32), label)
                self.storage[name] = Storage("const", name, f"W_{c_name(label)}")
            elif op.name == "constant":
                shape = [int(s) for s in op.attribs["shape"]]
                values = op.attribs["value"]
                values = list(values) if isinstance(values, (list, tuple)) else [values]
                data = np.asarray([_literal_f32(v) for v in values], F32)
                array = np.full(shape, data[0], F32) if data.size == 1 else data.reshape(shape)
                self.const_values[name] = (array, None)
                self.storage[name] = Storage("const", name, f"K_{c_name(name)}")
            elif op.name == "external":
                self.storage[name] = Storage("arena", name, f"T_{c_name(name)}")

    def _storage_of(self, step: int, op: Operation) -> None:
        """Storage of the results of a computing instruction."""
        outputs = op.output_refs()
        if op.name == "get_var":
            var = op.inputs["data"].name if isinstance(op.inputs["data"], Ref) else str(op.inputs["data"])
            self.storage[outputs[0].name] = Storage("sync", var, f"((const float *){sync_buffer(var)})")
            return
        if op.name == "send_var":
            return
        if op.name in VIEW_OPERATIONS:
            source = op.input_refs()[0].name
            self.storage[outputs[0].name] = self.storage[source]
            if source in self.const_values:
                array, label = self.const_values[source]
                self.const_values[outputs[0].name] = (array.reshape(self._shape(outputs[0].name)), label)
            return
        for ref in outputs:
            self.storage[ref.name] = Storage("arena", ref.name, f"T_{c_name(ref.name)}")

    # ------------------------------------------------------------------ operands
    def _operand(self, value: Any, op: Operation, params: dict[str, str], param_kind: str) -> Operand | list[Operand]:
        if isinstance(value, list):
            return [self._operand(v, op, params, param_kind) for v in value]  # type: ignore[misc]
        if isinstance(value, Ref):
            name = value.name
            shape = self._shape(name)
            if name in self.const_values:
                array, label = self.const_values[name]
                storage = self.storage[name]
                return Operand(name, shape, storage.c, array.reshape(shape), None, label)
            if name not in params:
                params[name] = f"x_{c_name(name)}"
            return Operand(name, shape, params[name])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodegenError("CODEGEN-E002", f"{op.name}: operand {value!r} is not a tensor or a numeric literal",
                               self._where(op))
        literal = _literal_f32(value)
        return Operand("", (), "", np.asarray(literal, F32), literal, None)

    def _kernel(self, step: int, op: Operation) -> tuple[Kernel, dict[str, str], list[str]]:
        emit = lookup(op.name)
        if emit is None:
            raise CodegenError("CODEGEN-E001", f"operation '{op.name}' is not supported by the C generator; "
                               f"supported: {', '.join(supported_operations())}", self._where(op))
        self._check_scalar(op)
        params: dict[str, str] = {}
        inputs = {key: self._operand(value, op, params, "in") for key, value in op.inputs.items()}
        outputs = []
        out_params = []
        for ref in op.output_refs():
            pname = f"y_{c_name(ref.name)}"
            out_params.append(pname)
            outputs.append(Operand(ref.name, self._shape(ref.name), pname))
        function = f"nnef_op_{c_name(op.output_refs()[0].name)}"
        kernel = Kernel(op, function, inputs, outputs, self.lanes, self.arrays, self._where(op))
        emit(kernel)
        if op.name in VIEW_OPERATIONS:
            return kernel, {}, []
        return kernel, params, out_params

    # ------------------------------------------------------------------ buffer plan
    def _plan(self, scratch: dict[int, int]) -> Plan:
        steps = self.item.steps
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for name, storage in self.storage.items():
            op = self.item.declaration(name)
            if storage.kind == "arena" and storage.root == name and op is not None and op.name == "external":
                first[name] = last[name] = -1
        for index, op in enumerate(self.item.step_ops):
            if op is None:
                continue
            for ref in op.output_refs():
                storage = self.storage.get(ref.name)
                if storage is not None and storage.kind == "arena" and storage.root == ref.name:
                    first[ref.name] = min(first.get(ref.name, index), index)
                    last[ref.name] = max(last.get(ref.name, index), index)
            for ref in op.input_refs():
                storage = self.storage.get(ref.name)
                if storage is not None and storage.kind == "arena":
                    last[storage.root] = max(last.get(storage.root, index), index)
        outputs = [o for o, owner in self.d.outputs.items() if owner == self.item.name]
        for name in outputs:
            storage = self.storage.get(name)
            if storage is not None and storage.kind == "arena":
                last[storage.root] = len(steps)
        buffers = []
        for name in first:
            size = math.prod(self._shape(name)) * 4
            buffers.append(Buffer(name, size, first[name], max(last[name], first[name])))
        for index, floats in scratch.items():
            if floats:
                buffers.append(Buffer(f"scratch@{index}", floats * 4, index, index))
        return checked_plan(buffers, ALIGNMENT, self.item.name, self.item.nnef_rel)

    # ------------------------------------------------------------------ emission
    def _refuse_unsupported(self) -> None:
        """Every operation of the item without a C kernel, in one CODEGEN-E001 (issue 15)."""
        missing = [(index, op) for index, op in enumerate(self.item.step_ops)
                   if op is not None and self.item.steps[index].kind == "compute" and lookup(op.name) is None]
        if missing:
            listed = "; ".join(f"'{op.name}' at {self._where(op)}" for _, op in missing)
            raise CodegenError("CODEGEN-E001", f"{len(missing)} operation(s) not supported by the C generator: "
                               f"{listed}; supported: {', '.join(supported_operations())}", self._where(missing[0][1]))

    def generate(self) -> ItemCode:
        self._declare()
        self._refuse_unsupported()
        kernels: dict[int, tuple[Kernel, dict[str, str], list[str]]] = {}
        for index, op in enumerate(self.item.step_ops):
            if op is None:
                continue
            step = self.item.steps[index]
            self._storage_of(index, op)
            if step.kind == "compute":
                kernels[index] = self._kernel(index, op)
        plan = self._plan({i: k.scratch_floats for i, (k, _, _) in kernels.items()})
        # identity-layout arrays of constant operands, registered only where a body uses them
        for index, (kernel, _, _) in kernels.items():
            body = "\n".join(kernel.body)
            for values in kernel.inputs.values():
                for operand in values if isinstance(values, list) else [values]:
                    if operand.is_constant and not operand.is_literal and operand.c and \
                            re.search(rf"\b{re.escape(operand.c)}\b", body):
                        self._identity_array(operand, kernel)
        return self._assemble(kernels, plan)

    def _identity_array(self, operand: Operand, kernel: Kernel) -> None:
        name = operand.c
        if name in self.arrays:
            return
        source = operand.label
        what = f"{source} as in its tensor file (row-major)" if source else f"constant {operand.name}"
        self.arrays[name] = ConstArray(name, np.asarray(operand.value, F32).reshape(-1), "float", what, source,
                                       {"kind": "identity"} if source else {})
        kernel.used_arrays.append(name)

    def _instruction(self, op: Operation) -> tuple[int, str]:
        return self.item.instruction(op)

    def _assemble(self, kernels: dict[int, tuple[Kernel, dict[str, str], list[str]]], plan: Plan) -> ItemCode:
        item = self.item
        w = CodeWriter()
        src = item_file(item.name)
        entries: list[TraceEntry] = []
        functions: list[dict[str, Any]] = []
        w.comment(f"{src} -- generated by {self.generator}; do not edit.\n"
                  f"Item {item.name} (target {item.target}) of deployment {self.d.model}/{self.d.deployment}, from\n"
                  f"{item.nnef_rel} (sha256 {item.nnef_sha256}) and {self.d.schedule_rel}.\n"
                  "Each function implements one NNEF instruction (file, line and text in its comment) with the\n"
                  "evaluation order of docs/semantics; nnef_item_" + item.name + "_run follows the schedule.\n"
                  "Static memory only (memory_map.json), no recursion, no libm, no branch on tensor data.")
        w.line("#include <stdint.h>")
        w.line("#include <string.h>")
        w.line('#include "nnef_runtime.h"')
        w.line('#include "nnef_math.h"')
        w.line('#include "nnef_deployment.h"')
        w.line(f'#include "{weights_file(item.name)}"')
        w.line("")
        w.line(f"#if NNEF_VL != {self.lanes}")
        w.line(f'#error "this item was generated for NNEF_VL = {self.lanes} lanes"')
        w.line("#endif")
        w.line("")
        floats = max(1, plan.arena_bytes // 4)
        w.comment(f"The arena of item {item.name}: {plan.arena_bytes} bytes; every computed tensor and input at the "
                  f"offset of the buffer plan\n(memory_map.json), reused once the tensor is dead.")
        w.line(f"float {self.arena}[{floats}] NNEF_ALIGNED({ALIGNMENT});")
        w.line("")
        # tensor pointers
        buffers = {b.name: b for b in plan.buffers}
        declared_lines: dict[str, tuple[int, int]] = {}
        w.comment("Tensors in the arena: offset in floats; byte range; live steps [first, last] of the schedule.")
        inputs: dict[str, str] = {}
        for name, storage in self.storage.items():
            if storage.kind != "arena" or storage.root != name or name not in buffers:
                continue
            b = buffers[name]
            first_line = w.line(f"static float *const T_{c_name(name)} = {self.arena} + {b.offset // 4};  "
                                f"/* {name} {list(self._shape(name))}: bytes {b.offset}..{b.offset + b.size - 1}, "
                                f"steps {b.first}..{b.last} */")
            op = item.declaration(name)
            if op is not None and op.name == "external":
                inputs[name] = f"{self.arena} + {b.offset // 4}" if b.offset else self.arena   # no + 0 (MISRA 2.2)
                declared_lines[name] = (first_line, first_line)
        outputs: dict[str, str] = {}
        for name in sorted(o for o, owner in self.d.outputs.items() if owner == item.name):
            storage = self.storage.get(name)
            if storage is None:
                raise CodegenError("CODEGEN-E008", f"output {name} has no storage in item {item.name}", Location.in_file(item.nnef_rel))
            if storage.kind == "const":
                raise CodegenError("CODEGEN-E002", f"graph output {name} is a constant; nothing to compute",
                                   Location.in_file(item.nnef_rel))
            if storage.kind == "sync":
                outputs[name] = sync_buffer(storage.root)
            else:
                at = buffers[storage.root].offset // 4
                outputs[name] = f"{self.arena} + {at}" if at else self.arena   # no + 0 (MISRA 2.2)
        w.line("")
        # index tables (generation-time constants that are not weights)
        tables = [a for a in self.arrays.values() if a.ctype == "int"]
        if tables:
            w.comment("Index tables computed at generation time from the window geometry (no data).")
            for table in tables:
                w.line(f"/* {table.comment} */")
                w.line(f"static const int {table.name}[{table.values.size}] = {{{', '.join(str(int(v)) for v in table.values)}}};")
            w.line("")
        # functions
        ops_by_step = dict(enumerate(item.step_ops))
        for index in sorted(kernels):
            kernel, params, out_params = kernels[index]
            op = ops_by_step[index]
            assert op is not None
            line, text = self._instruction(op)
            in_shapes = ", ".join(f"{n} {list(self._shape(n))}" for n in params)
            out_shapes = ", ".join(f"{o.name} {list(o.shape)}" for o in kernel.outputs)
            first = w.line_number
            w.comment(f"NNEF {item.nnef_rel}:{line}:\n    {text}\n"
                      f"Step {index} of item {item.name}. In: {in_shapes or 'constants only'}. Out: {out_shapes}.")
            signature = [f"const float *restrict {p}" for p in params.values()]
            signature += [f"float *restrict {p}" for p in out_params]
            if kernel.scratch_floats:
                signature.append("float *restrict scratch")
            w.line(f"static void {kernel.function}({', '.join(signature) or 'void'})")
            w.line("{")
            for body_line in kernel.body:
                w.line(body_line)
            if not kernel.body:
                w.line("    /* nothing to compute */")
            unused = [p for p in list(params.values()) + out_params if not any(p in b for b in kernel.body)]
            for p in unused:
                w.line(f"    (void){p};")
            last = w.line("}")
            w.line("")
            entries.append(TraceEntry(line, text, src, first, last))
            functions.append({"function": kernel.function, "step": index, "nnef_line": line, "lines": [first, last],
                              "operation": op.name})
        # run function
        w.comment(f"One inference of item {item.name}: the steps of {self.d.schedule_rel} in order.")
        run_first = w.line(f"void nnef_item_{item.name}_run(uint32_t epoch)")
        w.line("{")
        w.indent()
        w.line("(void)epoch;")
        sends, gets = [], []
        for index, step in enumerate(item.steps):
            op = ops_by_step[index]
            if step.kind == "barrier":
                for text in barrier_step(self.index, index, step.id):
                    w.line(text)
                continue
            assert op is not None
            line, text = self._instruction(op)
            first = w.line(f"/* step {index}: {item.nnef_rel}:{line}: {text} */")
            if step.kind == "compute":
                kernel, params, out_params = kernels[index]
                args = [self.storage[n].c for n in params]
                if out_params:
                    args += [self.storage[o.name].c for o in kernel.outputs]
                if kernel.scratch_floats:
                    args.append(f"{self.arena} + {buffers[f'scratch@{index}'].offset // 4}")
                last = w.line(f"NNEF_STEP({self.index}, {index}, epoch, {kernel.function}({', '.join(args)}));")
            elif step.kind == "send":
                value = self.storage[op.input_refs()[0].name].c
                last = w.line(f"NNEF_STEP({self.index}, {index}, epoch, nnef_send(&{sync_object(step.var)}, {value}, epoch));")
                sends.append(step.var)
                entries.append(TraceEntry(line, text, src, first, last))
            else:
                get = "nnef_get" if self.d.sync == "event" else "nnef_get_published"
                last = w.line(f"NNEF_STEP({self.index}, {index}, epoch, (void){get}(&{sync_object(step.var)}, epoch));")
                gets.append(step.var)
                entries.append(TraceEntry(line, text, src, first, last))
        w.dedent()
        run_last = w.line("}")
        functions.append({"function": f"nnef_item_{item.name}_run", "step": None, "nnef_line": None,
                          "lines": [run_first, run_last], "operation": "schedule"})
        for name, (first, last) in declared_lines.items():
            op = item.declaration(name)
            assert op is not None
            line, text = self._instruction(op)
            entries.append(TraceEntry(line, text, src, first, last))
        weights_text, weight_entries, records, blob = self._weights()
        entries += weight_entries
        memory_map = self._memory_map(plan)
        code = tidy_item(w.text(), f"{item.name} item", [weights_text])   # MISRA C:2012 2.2, 12.1: same lines, same bits
        return ItemCode(item.name, code, weights_text, sorted(entries, key=lambda e: (e.nnef_line, e.code_file)),
                        memory_map, records, functions, inputs, outputs, sends, gets, weights_blob=blob)

    # ------------------------------------------------------------------ weights header
    def _weights(self) -> tuple[str, list[TraceEntry], list[dict[str, Any]], bytes | None]:
        item = self.item
        w = CodeWriter()
        name = weights_file(item.name)
        float_arrays = [a for a in self.arrays.values() if a.ctype == "float"]
        blob: bytearray | None = None
        if sum(int(a.values.size) for a in float_arrays) > contract.BLOB_MIN_FLOATS:
            blob = bytearray()
        w.comment(f"{name} -- generated by {self.generator}; do not edit.\n"
                  f"The parameters of item {item.name} as constant data. Each array names the NNEF variable,\n"
                  "its tensor file and the SHA-256 of that file; arrays in a kernel layout say how they were\n"
                  "re-arranged (weights.json holds the same in machine-readable form; the codegen.trace check\n"
                  "re-derives every array from the tensor file).")
        w.line(f"#ifndef NNEF_WEIGHTS_{item.name}_H")
        w.line(f"#define NNEF_WEIGHTS_{item.name}_H")
        w.line("")
        if blob is not None:
            self._blob_declaration(w)
        entries: list[TraceEntry] = []
        records: list[dict[str, Any]] = []
        declarations = [op for op in self.graph.operations if op.name in ("variable", "constant")]
        done: set[str] = set()
        for op in declarations:
            tensor = op.output_refs()[0].name
            line, text = self._instruction(op)
            first = w.line_number
            if op.name == "variable":
                label = str(op.attribs.get("label", ""))
                weight: Weight = self.d.weights[label]
                w.comment(f"NNEF {item.nnef_rel}:{line}: {text}\n"
                          f"variable {tensor} (label '{label}') {list(weight.array.shape)}: file {weight.rel},\n"
                          f"sha256 {weight.sha256}")
                mine = [a for a in float_arrays if a.source == label and a.name not in done]
            else:
                w.comment(f"NNEF {item.nnef_rel}:{line}: {text}\nconstant {tensor}: values of the literal(s) "
                          "rounded once to float32")
                mine = [a for a in float_arrays if a.source is None and a.name == f"K_{c_name(tensor)}"]
            for array in mine:
                self._emit_array(w, array, blob)
                done.add(array.name)
                if op.name == "variable":
                    weight = self.d.weights[str(op.attribs.get("label", ""))]
                    records.append({"array": array.name, "variable": tensor, "label": weight.label,
                                    "file": weight.rel, "sha256": weight.sha256, "layout": array.layout,
                                    "floats": int(array.values.size), "shape": list(weight.array.shape)})
            last = w.line_number - 1
            entries.append(TraceEntry(line, text, name, first, last))
        rest = [a for a in float_arrays if a.name not in done]
        if rest:
            w.comment("Derived constants (biases of literal value, divisor tables): generation-time values.")
            for array in rest:
                self._emit_array(w, array, blob)
        w.line(f"#endif /* NNEF_WEIGHTS_{item.name}_H */")
        return w.text(), entries, records, None if blob is None else bytes(blob)

    def _blob_declaration(self, w: CodeWriter) -> None:
        """The binary file, linked into .rodata by the assembler; every array is a #define into it."""
        item = self.item.name
        symbol, blob = weights_symbol(item), weights_blob_file(item)
        w.comment(f"The parameters are the bytes of {blob} (IEEE 754 binary32, little-endian; every array\n"
                  f"starts on a {ALIGNMENT}-byte boundary), placed in .rodata by the assembler's .incbin: the\n"
                  "compiler never parses them. The path is relative to the deployment folder (the build's\n"
                  "working directory, also given as -I, which gcc passes on to the assembler); a build that\n"
                  "cannot find the file fails.")
        w.line(f"extern const float {symbol}[];")
        w.line(f'__asm__(".pushsection .rodata\\n\\t.balign {ALIGNMENT}\\n{symbol}:\\n'
               f'\\t.incbin \\"{item}/{blob}\\"\\n\\t.popsection");')
        w.line("")

    def _emit_array(self, w: CodeWriter, array: ConstArray, blob: bytearray | None) -> None:
        w.comment(array.comment)
        if blob is not None:
            blob.extend(bytes(-len(blob) % ALIGNMENT))
            first = len(blob) // 4
            blob.extend(np.asarray(array.values, F32).reshape(-1).astype("<f4", copy=False).tobytes())
            w.line(f"#define {array.name} ({weights_symbol(self.item.name)} + {first}) "
                   f"/* floats [{first}, {len(blob) // 4}) of {weights_blob_file(self.item.name)} */")
            return
        values = flits(array.values)
        w.line(f"static const float {array.name}[{len(values)}] NNEF_ALIGNED(64) = {{")
        for start in range(0, len(values), 8):
            w.line("    " + ", ".join(values[start:start + 8]) + ",")
        w.line("};")

    # ------------------------------------------------------------------ memory map
    def _memory_map(self, plan: Plan) -> dict[str, Any]:
        buffers = []
        for b in plan.buffers:
            kind = "scratch" if b.name.startswith("scratch@") else "tensor"
            op = self.item.declaration(b.name)
            if op is not None and op.name == "external":
                kind = "input"
            buffers.append({"tensor": b.name, "kind": kind, "offset": b.offset, "size": b.size,
                            "first": b.first, "last": b.last})
        aliases = []
        for name, storage in sorted(self.storage.items()):
            if storage.root != name or storage.kind == "sync":
                if storage.kind == "sync":
                    aliases.append({"tensor": name, "kind": "sync", "of": storage.root, "buffer": sync_buffer(storage.root)})
                else:
                    aliases.append({"tensor": name, "kind": "view", "of": storage.root})
        return {
            "schema_version": 1,
            "item": self.item.name,
            "arena": self.arena,
            "arena_bytes": plan.arena_bytes,
            "alignment": plan.alignment,
            "steps": len(self.item.steps),
            "buffers": buffers,
            "aliases": aliases,
            "constant_arrays": [{"array": a.name, "bytes": int(a.values.size) * 4, "source": a.source}
                                for a in sorted(self.arrays.values(), key=lambda a: a.name)],
        }
