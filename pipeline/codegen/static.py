"""Static analysis of generated C code (HLR-COD-001), from the files alone.

A validator of the generator, not part of it: it reads the sources and the compiled objects
and checks, independently of how they were produced,
  * no dynamic allocation and no non-local jumps: no call of malloc, calloc, realloc, free,
    alloca, setjmp, longjmp, no goto, no variable-length array;
  * no recursion: the call graph of the functions defined in the sources is acyclic;
  * no libm: no object references a symbol libm exports (nm), and the link uses no -lm;
  * numeric kernels (every nnef_op_* function) contain no branch at all (no if, else, ?:,
    switch, while, &&, ||): selections are bitwise, so no branch can depend on tensor data;
    their loops are `for (int v = A; v < B; ...)` with A and B integer constants, enclosing
    loop variables or reads of generation-time index tables (IX_*), so every bound is fixed;
  * the runtime's selection primitives compile to code without conditional jumps (assembly);
  * no fused multiply-add instruction in any object (disassembly): -ffp-contract=off is the
    only guard on AArch64, where FMA is part of the base instruction set;
  * the buffer plan: no two buffers live at the same step share a byte, and the arena the C
    code declares is as large as memory_map.json says;
  * segregation: an item's code names only its own arena and the sync variables the plan
    gives it.

The two instruction-level scans (conditional jumps, fused multiply-adds) read the mnemonics of
an architecture they know (ARCHITECTURES: x86-64, AArch64), taken from the object's own ELF
header, never from what a platform declares; for any other architecture they return None and
the check says `not run` (an unknown instruction set is never judged clean).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pipeline.toolchain import process

TOOL_TIMEOUT_S = 600.0                   # one nm or objdump run
MAX_DISASSEMBLY = 1024 * 1024 * 1024     # bytes of objdump -d one object may print

# The programs it runs, the platforms' compilers, binutils (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("${CC:-gcc}", "aarch64-linux-gnu-gcc", "@platforms", "nm", "objdump",
                           "aarch64-linux-gnu-nm", "aarch64-linux-gnu-objdump")

FORBIDDEN_CALLS = ("malloc", "calloc", "realloc", "free", "alloca", "setjmp", "longjmp", "sbrk", "mmap")
BRANCH_TOKENS = re.compile(r"\b(if|else|switch|while|goto|case)\b|\?|&&|\|\|")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')
FUNCTION = re.compile(r"^(?:static\s+)?(?:inline\s+)?(?:__attribute__\(\(\w+\)\)\s*)?[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)"
                      r"\s*\(([^;{}]*)\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
FOR = re.compile(r"\bfor\s*\(([^;]*);([^;]*);([^)]*)\)")
FOR_INIT = re.compile(r"^\s*int\s+([A-Za-z_]\w*)\s*=\s*(.+?)\s*$")
FOR_COND = re.compile(r"^\s*([A-Za-z_]\w*)\s*<\s*(.+?)\s*$")
FOR_STEP = re.compile(r"^\s*(?:\+\+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*\+=\s*(\d+))\s*$")
BOUND_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|[-+*/%()\[\]\s]")
ARRAY_DECL = re.compile(r"\b(?:float|int|int32_t|uint32_t|nnef_vf)\s+[A-Za-z_]\w*((?:\s*\[[^\]]*\])+)")
SELECT_PRIMITIVES = ("nnef_select", "nnef_max", "nnef_min", "nnef_relu", "nnef_max_update", "nnef_min_update",
                     "nnef_rint", "nnef_floor", "nnef_ceil", "nnef_vmax", "nnef_vrelu", "nnef_vmax_update",
                     "nnef_vselect", "nnef_sign")
LIBM_FALLBACK = ("exp", "expf", "log", "logf", "pow", "powf", "sqrt", "sqrtf", "tanh", "tanhf", "floor", "floorf",
                 "ceil", "ceilf", "rint", "rintf", "fabs", "fabsf", "sin", "cos", "lrint", "nearbyintf", "fmaf", "fma")


def strip(text: str) -> str:
    """Source without comments and string literals (so that neither is analysed as code)."""
    return STRING.sub('""', COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text))


def functions(text: str) -> dict[str, str]:
    """Name -> body of every function defined in `text` (comments and strings stripped)."""
    code = strip(text)
    result = {}
    for match in FUNCTION.finditer(code):
        name = match.group(1)
        if name in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        start = match.end() - 1
        depth, end = 0, start
        for end in range(start, len(code)):
            if code[end] == "{":
                depth += 1
            elif code[end] == "}":
                depth -= 1
                if depth == 0:
                    break
        result[name] = code[start + 1:end]
    return result


@dataclass
class StaticReport:
    problems: list[str] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)


# The one piece of assembly generated code may hold: a weights header linking its binary file.
LINKED_WEIGHTS = re.compile(r'__asm__\("\.pushsection \.rodata\\n\\t\.balign \d+\\n\w+:\\n\\t\.incbin '
                            r'\\"[\w/.]+\\"\\n\\t\.popsection"\);')


ASM = re.compile(r"\b(?:__asm__|__asm|asm)\b")


def forbidden_constructs(files: dict[str, str]) -> list[str]:
    """Calls of allocation/jump functions, goto, array declarators of non-constant size, and
    inline assembly other than a weights header's `.incbin` of its binary file."""
    problems = []
    for name, text in files.items():
        for match in ASM.finditer(text):      # over the whole text, then the match's line (weights files are long)
            begin = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.start())
            line = text[begin:len(text) if end < 0 else end].rstrip("\r")
            if not (match.start() == begin and line.startswith("__asm__") and LINKED_WEIGHTS.fullmatch(line)):
                problems.append(f"{name}:{text.count(chr(10), 0, begin) + 1}: inline assembly")
        code = strip(text)
        for call in CALL.finditer(code):
            if call.group(1) in FORBIDDEN_CALLS:
                line = code[:call.start()].count("\n") + 1
                problems.append(f"{name}:{line}: call of {call.group(1)} (dynamic allocation or non-local jump)")
        for match in re.finditer(r"\bgoto\b", code):
            problems.append(f"{name}:{code[:match.start()].count(chr(10)) + 1}: goto")
        for decl in ARRAY_DECL.finditer(code):
            for size in re.findall(r"\[([^\]]*)\]", decl.group(1)):
                if size.strip() and not re.fullmatch(r"[\d\s*+()A-Z_]*", size.strip()):
                    line = code[:decl.start()].count("\n") + 1
                    problems.append(f"{name}:{line}: array of non-constant size [{size.strip()}] (a VLA)")
    return problems


def call_graph_cycles(files: dict[str, str]) -> tuple[int, list[list[str]]]:
    """(number of functions, cycles) of the call graph of every function defined in `files`."""
    bodies: dict[str, str] = {}
    for text in files.values():
        bodies.update(functions(text))
    graph = {f: sorted({c for c in CALL.findall(body) if c in bodies}) for f, body in bodies.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return len(graph), cycles


def kernel_problems(item_file: str, text: str) -> tuple[int, int, list[str]]:
    """(kernels, loops, problems) of the nnef_op_* functions: branches and loop bounds."""
    problems = []
    loops = 0
    kernels = {n: b for n, b in functions(text).items() if n.startswith("nnef_op_")}
    for name, body in kernels.items():
        for match in BRANCH_TOKENS.finditer(body):
            problems.append(f"{item_file}: {name}: branch construct '{match.group(0)}' in a numeric kernel")
        bound_vars: set[str] = set()
        for loop in FOR.finditer(body):
            loops += 1
            init, cond, step = loop.groups()
            mi, mc, ms = FOR_INIT.match(init), FOR_COND.match(cond), FOR_STEP.match(step)
            var = mi.group(1) if mi else None
            if not (mi and mc and ms) or mc.group(1) != var or (ms.group(1) or ms.group(2)) != var:
                problems.append(f"{item_file}: {name}: loop 'for ({init};{cond};{step})' is not of the form "
                                "for (int v = A; v < B; ++v / v += C)")
                continue
            for bound in (mi.group(2), mc.group(2)):
                names = [t for t in BOUND_TOKEN.findall(bound) if re.fullmatch(r"[A-Za-z_]\w*", t)]
                bad = [t for t in names if t not in bound_vars and not t.startswith("IX_")]
                leftover = BOUND_TOKEN.sub("", bound)
                if bad or leftover.strip():
                    problems.append(f"{item_file}: {name}: loop bound '{bound.strip()}' depends on {bad or leftover}, "
                                    "not only on constants, loop variables and index tables")
            bound_vars.add(var)
    return len(kernels), loops, problems


def libm_symbols(cc: str = "gcc", nm: str = "nm") -> set[str]:
    """The symbols the libm of compiler `cc` exports (from the library itself, read by `nm`, the
    compiler's own for a cross compiler; a fixed list if it cannot be read)."""
    path = process.text([cc, "-print-file-name=libm.so.6"]).strip()
    if path and Path(path).is_file():
        out = process.text([nm, "-D", "--defined-only", path])
        names = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
        if names:
            return names
    return set(LIBM_FALLBACK)


def undefined_symbols(objects: Iterable[Path], nm: str = "nm") -> dict[str, list[str]]:
    """Object -> the symbols it references but does not define (`nm -u`; the compiler's own nm)."""
    result = {}
    for obj in objects:
        out = process.run([nm, "-u", str(obj)], timeout=TOOL_TIMEOUT_S).out
        result[obj.name] = sorted(line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip())
    return result


# Per architecture: the mnemonics of a conditional branch and of a fused multiply-add.
# x86-64: every Jcc (j* but jmp), loop/loope/loopne, jrcxz; FMA3/FMA4/AVX-512 vfmadd*, vfmsub*,
# vfnmadd*, vfnmsub*, vfmaddsub*, vfmsubadd* (Intel SDM vol. 2; AMD APM vol. 4).
# AArch64: b.<cond> (b<cond> in GNU assembler source), cbz, cbnz, tbz, tbnz; fmadd, fmsub, fnmadd, fnmsub (scalar), fmla, fmls,
# fmlal(2), fmlsl(2), bfmlal[bt] (Advanced SIMD), fmad, fmsb, fnmad, fnmsb, fnmla, fnmls (SVE)
# (Arm Architecture Reference Manual for A-profile, C3 and C7).
ARCHITECTURES: dict[str, dict[str, re.Pattern[str]]] = {
    "x86_64": {"branch": re.compile(r"j(?!mp)[a-z]+|loop[a-z]*"),
               "fma": re.compile(r"vf(?:n?m(?:add|sub)|maddsub|msubadd)[0-9a-z]*")},
    "aarch64": {"branch": re.compile(r"b\.?(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|nv)|cbn?z|tbn?z"),
                "fma": re.compile(r"fn?m(?:add|sub)|fn?ml[as](?:l2?)?|bfml[as]l[bt]?|fn?m(?:ad|sb)")},
}
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 3: "i386", 40: "arm", 243: "riscv", 8: "mips", 20: "ppc", 21: "ppc64"}


def elf_architecture(path: Path) -> str | None:
    """The architecture an ELF object or executable is for (its header's e_machine), None if not ELF."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    return ELF_MACHINES.get(machine, f"elf-machine-{machine}")


def disassemble(objdump: str, path: Path) -> str:
    """`objdump -d --no-show-raw-insn` of an object (the platform's objdump: it reads its architecture)."""
    proc = process.run([objdump, "-d", "--no-show-raw-insn", str(path)], timeout=TOOL_TIMEOUT_S,
                       max_output=MAX_DISASSEMBLY)
    if proc.returncode != 0:
        raise RuntimeError(f"{objdump} -d {path.name}: {proc.err.strip()[:300]}")
    return proc.out


def fused_multiply_adds(disassembly: str, architecture: str) -> dict[str, list[str]] | None:
    """Function -> its fused multiply-add instructions in an objdump disassembly; None for an
    architecture whose mnemonics this module does not know."""
    known = ARCHITECTURES.get(architecture)
    if known is None:
        return None
    found: dict[str, list[str]] = {}
    function = "?"
    for line in disassembly.splitlines():
        label = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if label:
            function = label.group(1)
            continue
        parts = line.split("\t")
        if len(parts) >= 2 and re.match(r"^\s*[0-9a-f]+:$", parts[0]):
            mnemonic = parts[1].strip().split()[0] if parts[1].strip() else ""
            if known["fma"].fullmatch(mnemonic):
                found.setdefault(function, []).append(" ".join(p.strip() for p in parts[1:]))
    return found


def conditional_jumps(assembly: str, names: Iterable[str], architecture: str = "x86_64") -> dict[str, list[str]] | None:
    """For each function of `names` present in the assembly (`cc -S`): its conditional branches in
    `architecture`'s mnemonics (x86-64: j* but jmp; AArch64: b.<cond>, cbz, tbz, ...); None for an
    architecture this module does not know."""
    known = ARCHITECTURES.get(architecture)
    if known is None:
        return None
    result: dict[str, list[str]] = {}
    current = None
    for line in assembly.splitlines():
        label = re.match(r"^([A-Za-z_][\w.]*):", line)
        if label:
            base = label.group(1).split(".")[0]
            current = base if base in names else (current if label.group(1).startswith(".L") else None)
            if current and current == base:
                result.setdefault(current, [])
            continue
        if current:
            ins = line.strip().split()
            if ins and known["branch"].fullmatch(ins[0]):
                result[current].append(line.strip())
    return result


def probe_source() -> str:
    """A translation unit that instantiates every selection primitive as an external function."""
    lines = ['#include "nnef_runtime.h"']
    scalar = {"nnef_select": "int c, float a, float b", "nnef_max": "float a, float b", "nnef_min": "float a, float b",
              "nnef_relu": "float a", "nnef_max_update": "float a, float b", "nnef_min_update": "float a, float b",
              "nnef_rint": "float a", "nnef_floor": "float a", "nnef_ceil": "float a", "nnef_sign": "float a"}
    for name, params in scalar.items():
        args = ", ".join(p.split()[-1] for p in params.split(", "))
        lines.append(f"float probe_{name}({params});")
        lines.append(f"float probe_{name}({params}) {{ return {name}({args}); }}")
    vector = {"nnef_vmax": "a, b", "nnef_vrelu": "a", "nnef_vmax_update": "a, b"}
    for name, args in vector.items():
        lines.append(f"void probe_{name}(const float *pa, const float *pb, float *out);")
        lines.append(f"void probe_{name}(const float *pa, const float *pb, float *out) "
                     f"{{ nnef_vf a = nnef_vload(pa), b = nnef_vload(pb); (void)b; nnef_vstore(out, {name}({args})); }}")
    return "\n".join(lines) + "\n"


def plan_problems(memory_map: dict[str, Any], item_source: str) -> list[str]:
    """Overlapping live buffers, buffers outside the arena, and an arena declared smaller than planned."""
    problems = []
    arena = memory_map["arena"]
    size = int(memory_map["arena_bytes"])
    buffers = memory_map["buffers"]
    for b in buffers:
        if b["offset"] < 0 or b["offset"] + b["size"] > size or b["offset"] % memory_map["alignment"]:
            problems.append(f"buffer {b['tensor']} [{b['offset']}, +{b['size']}) misaligned or outside the arena")
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            live = a["first"] <= b["last"] and b["first"] <= a["last"]
            shared = a["offset"] < b["offset"] + b["size"] and b["offset"] < a["offset"] + a["size"]
            if live and shared:
                problems.append(f"{a['tensor']} (steps {a['first']}..{a['last']}) and {b['tensor']} "
                                f"(steps {b['first']}..{b['last']}) are live together and share bytes")
    match = re.search(rf"\bfloat\s+{re.escape(arena)}\s*\[(\d+)\]", item_source)
    if not match or int(match.group(1)) * 4 < size:
        problems.append(f"the item declares {arena} with {match.group(1) if match else 'no'} floats, "
                        f"the plan needs {size} bytes")
    return problems


def segregation_problems(item: str, text: str, allowed_sync: set[str]) -> list[str]:
    """Names of other items' arenas, or of sync variables the plan does not give this item."""
    code = strip(text)
    problems = []
    for arena in sorted(set(re.findall(r"\bnnef_arena_(\w+)", code))):
        if arena != item:
            problems.append(f"item {item} names the arena of item {arena}")
    for var in sorted(set(re.findall(r"\bnnef_sync(?:buf)?_(\w+)", code))):
        if var not in allowed_sync and var not in ("wait", "races"):
            problems.append(f"item {item} names sync variable {var}, which the plan does not give it")
    return problems
