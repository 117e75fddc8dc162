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

The item's kernels, weights and device memory are cuda/emitter.py's; this program adds the host
side: init allocates device memory and copies the weights, once; an inference copies its inputs
in, launches the kernels in schedule order on the item's one stream, and copies its outputs out.

A cuda item exchanging values with other items (send_var/get_var, barriers) is a .cu item of the
deployment's C program instead (pipeline/codegen/cuda/linked.py, the same emitter with
`linked=True`); here, in a one-item deployment, such steps stop at CODEGEN-E006.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_bytes, write_json, write_text
from pipeline.files.names import confined
from pipeline.codegen.cuda import RUNTIME_DIR, RUNTIME_FILES
from pipeline.codegen.cuda.emitter import GENERATOR, THREADS, CudaItemEmitter, DeviceCode, item_file
from pipeline.codegen.cuda.linked import declaration_entries
from pipeline.codegen.cuda.programs import math_header
from pipeline.codegen.shared.deployment import DeploymentInput
from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.shared.contract import weights_blob_file
from pipeline.codegen.shared.parts import deployment_parts
from pipeline.codegen.shared.writer import CodeWriter
from pipeline.diagnostics import Location
from pipeline.project.layout import project_relative


# The deployment-level files a one-item program compiles besides its item (each a part of the trace).
SOURCES = RUNTIME_FILES + ("nnef_cuda_math.h", "nnef_cuda_main.cu")


def _host(e: CudaItemEmitter, device_code: DeviceCode) -> dict[str, Any]:
    """The host side of a one-item program's item (init, infer) after its kernels; the item's code."""
    item, d = e.item, e.d
    w, launches, plan, blob = device_code.writer, device_code.launches, device_code.plan, device_code.blob
    # init
    w.comment("Allocate device memory and copy the weights, once; nothing is allocated or copied later but "
              "inputs and outputs.")
    w.line(f'extern "C" int nnef_cuda_{item.name}_init(void)')
    w.line("{")
    w.line("    NNEF_CUDA_CHECK(cudaStreamCreate(&nnef_stream));")
    w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&nnef_dev_arena, {max(plan.arena_bytes, 4)}u));")
    for device, (host, values, _) in e.host_arrays.items():
        w.line(f"    NNEF_CUDA_CHECK(cudaMalloc((void **)&{device}, {values.size * 4}u));")
        w.line(f"    NNEF_CUDA_CHECK(cudaMemcpy({device}, {host}, {values.size * 4}u, cudaMemcpyHostToDevice));")
    w.line("    return 0;")
    w.line("}")
    w.line("")
    inputs = [op.output_refs()[0].name for op in e.graph.operations if op.name == "external"]
    outputs = sorted(d.outputs)
    w.comment(f"One inference: inputs ({', '.join(inputs)}) in, the steps of {d.schedule_rel} in order on the "
              f"item's stream,\noutputs ({', '.join(outputs)}) out.")
    w.line(f'extern "C" int nnef_cuda_{item.name}_infer(const float *const *inputs, float *const *outputs)')
    w.line("{")
    input_lines = {}
    externals = {op.output_refs()[0].name: op for op in e.graph.operations if op.name == "external"}
    for n, name in enumerate(inputs):
        size = math.prod(e._shape(name)) * 4
        line, text = e._line(externals[name])
        w.line(f"    /* input {n}: {item.nnef_rel}:{line}: {text.replace('*/', '* /')} */")
        input_lines[name] = w.line(f"    NNEF_CUDA_CHECK(cudaMemcpyAsync({e.storage[name].c}, inputs[{n}], {size}u, "
                                   f"cudaMemcpyHostToDevice, nnef_stream));")
    aliases = []      # steps without a kernel (a reshape shares its operand's storage): their step line is their code
    for index, op in enumerate(item.step_ops):
        assert op is not None
        line, text = e._line(op)
        step_line = w.line(f"    /* step {index}: {item.nnef_rel}:{line}: {text.replace('*/', '* /')} */")
        if index in launches:
            w.line("    " + launches[index])
        else:
            aliases.append({"nnef_line": line, "instruction": text, "code_file": item_file(item.name),
                            "code_lines": [step_line, step_line]})
    for n, name in enumerate(outputs):
        size = math.prod(e._shape(name)) * 4
        w.line(f"    NNEF_CUDA_CHECK(cudaMemcpyAsync(outputs[{n}], {e.storage[name].c}, {size}u, "
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
                  "weights": [{"array": k, "bytes": int(v[1].size) * 4} for k, v in e.host_arrays.items()]}
    source = w.text()
    copies = set(input_lines.values())
    declared = [{"nnef_line": t.nnef_line, "instruction": t.instruction, "code_file": t.code_file,
                 "code_lines": [t.first - 1 if t.first in copies else t.first, t.last]}   # an input: comment and copy
                for t in declaration_entries(e, source, input_lines)] + aliases
    return {"source": source, "blob": blob, "entries": device_code.entries + declared, "kernels": device_code.kernels,
            "memory_map": memory_map,
            "inputs": [{"name": n, "shape": list(e._shape(n))} for n in inputs],
            "outputs": [{"name": n, "shape": list(e._shape(n))} for n in outputs]}


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
    emitter = CudaItemEmitter(deployment, item)
    code = _host(emitter, emitter.generate())
    for name in RUNTIME_FILES:
        write_text(folder / name, (RUNTIME_DIR / name).read_text(encoding="utf-8"))
    write_text(folder / "nnef_cuda_math.h", math_header())
    item_dir = confined(folder, item.name)
    write_text(item_dir / item_file(item.name), code["source"])
    if code["blob"] is not None:
        write_bytes(item_dir / weights_blob_file(item.name), code["blob"])
    write_text(folder / "nnef_cuda_main.cu", _main(item.name, code["inputs"], code["outputs"]))
    rel = project_relative(folder, deployment.root)
    entries = sorted(({**e, "code_file": f"{rel}/{item.name}/{e['code_file']}"} for e in code["entries"]),
                     key=lambda e: (e["nnef_line"], e["code_file"], e["code_lines"][0]))
    covered: dict[str, set[int]] = {}
    for e in entries:
        covered.setdefault(e["code_file"], set()).update(range(e["code_lines"][0], e["code_lines"][1] + 1))
    texts = {f"{rel}/{name}": (folder / name).read_text(encoding="utf-8") for name in SOURCES + (f"{item.name}/"
                                                                                            f"{item_file(item.name)}",)}
    parts = [p.to_json() for p in deployment_parts(texts, covered)]
    write_json(item_dir / "trace.json", {
        "schema_version": 1, "item": item.name, "target": "cuda", "nnef_file": item.nnef_rel,
        "nnef_sha256": item.nnef_sha256, "entries": entries, "parts": parts})
    write_json(item_dir / "memory_map.json", code["memory_map"])
    manifest = {"schema_version": 1, "generator": GENERATOR, "model": deployment.model,
                "deployment": deployment.deployment, "threads": THREADS,
                **({"architectures": list(architectures)} if architectures else {}),
                "items": [{"name": item.name, "source": f"{item.name}/{item_file(item.name)}",
                           "kernels": code["kernels"]}],
                "main": "nnef_cuda_main.cu", "inputs": code["inputs"], "outputs": code["outputs"]}
    write_json(folder / "build.json", manifest)
    return manifest
