"""The named infrastructure parts of generated code: what every line outside an instruction's entry is for.

A trace entry maps an NNEF instruction to the lines implementing it. The rest of a generated
program is infrastructure: the run function that follows the schedule, the buffer plan, the
runtime, the harness... Each part is named here with the requirements it serves, so that every
line of code a deployment compiles lies in an instruction's entry or in a named part, and the
trace is two-way: from an instruction to its lines, and from any line to its instruction or to
its part and requirement (trace.json `parts`, docs/evidence.md "Code trace").

Parts are found in the written files, not announced by the emitters: a light scanner of C and
CUDA (comments, string and character literals, braces, preprocessor lines) cuts a file into its
top-level constructs, and the names each construct defines say which part it is (`part_of`).
So the C, CUDA and NVDLA-proxy items are covered alike, and a construct no rule names stays
outside every part: the trace check (pipeline/codegen/tracecheck.py `uncovered`) reports its
lines, so a new kind of generated code cannot slip out of the trace. Files the program copies
whole (the runtime, the harness, the transcendental programs) are one part each (FILE_PARTS).
Blank lines hold no code: they need no entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

# Parts that are a whole file the program copies or writes from a template.
RUNTIME = ("runtime: vector primitives, sync objects, barriers, trace events and temporal noise",
           ("HLR-EXE-003", "HLR-SPL-002", "LLR-RUN-001"))
HARNESS = ("harness: stages the inputs, runs the inferences, writes the outputs and the timings",
           ("HLR-NUM-001", "LLR-MET-001"))
MATH = ("transcendental programs: the reference's exp, log, tanh, sigmoid, softplus, pow", ("LLR-SEM-002",))
FILE_PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nnef_runtime.h": RUNTIME, "nnef_runtime.c": RUNTIME, "nnef_sync.h": RUNTIME,
    "nnef_harness.h": HARNESS, "nnef_main.c": HARNESS,
    "nnef_math.h": MATH, "nnef_cuda_math.h": MATH,
    "nnef_config.h": ("configuration: item, input and output counts, the vector width", ("HLR-COD-003",)),
    "nnef_cuda.h": ("CUDA runtime: launch macros, error checks", ("LLR-COD-007", "HLR-NUM-003")),
    "nnef_cuda_emulate.h": ("CUDA host emulation: blocks and threads in a seeded order", ("LLR-COD-007", "HLR-NUM-003")),
    "nnef_cuda_main.cu": ("harness: raw float32 vectors in, one inference each, vectors out", ("HLR-NUM-003",)),
}

# Parts of the constructs of an item file or of the deployment's own files.
HEADER = ("file header: generator, item, the NNEF file and its sha256", ("HLR-COD-002",))
PREAMBLE = ("preamble: includes, include guards, configuration and generation-time checks", ("HLR-COD-003",))
RUN = ("run function: the item's static schedule, one step after the other", ("HLR-EXE-003",))
INIT = ("init function: device memory, the weights' copies and the channels, once before the first inference",
        ("HLR-COD-001",))
PLAN = ("buffer plan: the static arena and each tensor's place in it (memory_map.json)", ("HLR-COD-001", "LLR-COD-004"))
CHANNEL = ("accelerator channel: submits the NVDLA loadable and waits for its outputs", ("HLR-SPL-003",))
CUDA_HOST = ("CUDA host side: error stop, kernel completion, gets and sends through the runtime's sync objects",
             ("HLR-SPL-002",))
TABLES = ("deployment tables: items, inputs, outputs and trace buffers the harness reads", ("HLR-SPL-003", "LLR-RUN-001"))
INTERFACE = ("deployment interface: the sync variables, arenas and item functions each item links to", ("HLR-SPL-002",))
BLOB = ("weights blob: the parameters as binary32, linked by the assembler", ("LLR-COD-001",))


@dataclass(frozen=True)
class Part:
    """Lines [first, last] of `code_file` and the infrastructure part they are, with the requirements it serves."""

    name: str
    requirements: tuple[str, ...]
    code_file: str
    first: int
    last: int

    def to_json(self) -> dict[str, object]:
        return {"part": self.name, "requirements": list(self.requirements), "code_file": self.code_file,
                "code_lines": [self.first, self.last]}


@dataclass(frozen=True)
class Construct:
    """A top-level construct of a file: lines [first, last], its kind and the names it defines."""

    first: int
    last: int
    kind: str                   # "comment", "preprocessor", "function" (a definition), "declaration"
    names: tuple[str, ...]
    external: bool = False      # `extern` or a prototype: declared here, defined elsewhere


_IDENT = re.compile(r"[A-Za-z_]\w*")
_SKIPPED_CALLS = {"alignas", "__attribute__", "__declspec", "__align__", "NNEF_ALIGNED", "__launch_bounds__"}
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")


def _strip(text: str) -> list[str]:
    """The lines of `text` with comments and the contents of string and character literals blanked
    (lengths kept), so that braces, parentheses and `#` are read only where they are code."""
    out: list[str] = []
    state = "code"
    for line in text.split("\n"):
        chars = []
        index = 0
        while index < len(line):
            c = line[index]
            pair = line[index:index + 2]
            if state == "block":
                if pair == "*/":
                    state = "code"
                    chars.append("  ")
                    index += 2
                    continue
                chars.append(" ")
            elif state in ("string", "char"):
                quote = '"' if state == "string" else "'"
                if c == "\\":
                    chars.append("  ")
                    index += 2
                    continue
                if c == quote:
                    state = "code"
                    chars.append(c)
                else:
                    chars.append(" ")
            elif pair == "/*":
                state = "block"
                chars.append("  ")
                index += 2
                continue
            elif pair == "//":
                chars.append(" " * (len(line) - index))
                break
            elif c == '"':
                state = "string"
                chars.append(c)
            elif c == "'":
                state = "char"
                chars.append(c)
            else:
                chars.append(c)
            index += 1
        if state in ("string", "char"):      # an unterminated literal ends with its line
            state = "code"
        out.append("".join(chars))
    return out


def constructs(text: str) -> list[Construct]:
    """The top-level constructs of a C or CUDA file, in order (module docstring)."""
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw = raw[:-1]
    code = _strip("\n".join(raw))
    found: list[Construct] = []
    depth = 0
    start: int | None = None
    continued = False
    for number, (line, stripped) in enumerate(zip(raw, code), start=1):
        if start is None:
            if not line.strip():
                continue
            if depth == 0 and (stripped.lstrip().startswith("#") or continued):
                continued = stripped.rstrip().endswith("\\")
                found.append(Construct(number, number, "preprocessor", _pp_names(line)))
                continue
            if depth == 0 and not stripped.strip():
                found.append(Construct(number, number, "comment", ()))
                continue
            start = number
        for c in stripped:
            if c in "{([":
                depth += 1
            elif c in "})]":
                depth -= 1
        tail = stripped.rstrip()
        if depth <= 0 and (tail.endswith(";") or tail.endswith("}")):
            depth = 0
            body = "\n".join(code[start - 1:number])
            function = tail.endswith("}") and _is_function(body)
            external = not function and (re.match(r'\s*extern\s+[^"\s]', body) is not None or _is_prototype(body))
            found.append(Construct(start, number, "function" if function else "declaration", _names(body), external))
            start = None
    if start is not None:
        found.append(Construct(start, len(raw), "declaration", _names("\n".join(code[start - 1:]))))
    return _merge(found)


def _pp_names(line: str) -> tuple[str, ...]:
    match = _DEFINE.match(line)
    return (match.group(1),) if match else ()


def _is_function(body: str) -> bool:
    """A definition `... name(...) {...}` (not an initializer `= {...};` nor an `extern "C" {` block)."""
    head = body.split("{", 1)[0]
    return "(" in head and "=" not in head and re.match(r'\s*extern\s*"\s*"\s*$', head) is None


def _is_prototype(body: str) -> bool:
    """`type name(parameters);`: the name followed by its parameter list (not `float a[4] ALIGNED(64);`)."""
    head = body.strip()
    names = _names(head)
    return (head.endswith(");") and "{" not in head and "=" not in head and bool(names)
            and re.search(rf"\b{re.escape(names[0])}\s*\(", head) is not None)


def _names(body: str) -> tuple[str, ...]:
    """The names a construct defines: each statement's name before its first `(`, `[`, `=`, `;` or `{`
    (qualifier calls such as alignas(64) skipped); an `extern "C" { ... }` block: those of its statements."""
    text = body.strip()
    block = re.match(r'^extern\s*"\s*"\s*\{(.*)\}\s*;?$', text, re.S)   # extern "C" { ... } (literals blanked)
    if block:
        names: list[str] = []
        for statement in block.group(1).split(";"):
            names += _names(statement + ";")
        return tuple(names)
    last = ""
    index = 0
    while index < len(text):
        c = text[index]
        match = _IDENT.match(text, index)
        if match:
            word = match.group(0)
            index = match.end()
            if word in _SKIPPED_CALLS:
                index = _skip_group(text, index)
                continue
            last = word
            continue
        if c in "([={;":
            if last:
                return (last,)
            if c in "([":
                index = _skip_group(text, index)
                continue
        index += 1
    return (last,) if last else ()


def _skip_group(text: str, index: int) -> int:
    """The index after the bracketed group starting at or after `index` (spaces before it skipped)."""
    while index < len(text) and text[index].isspace():
        index += 1
    if index >= len(text) or text[index] not in "([":
        return index
    depth = 0
    while index < len(text):
        if text[index] in "([":
            depth += 1
        elif text[index] in ")]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return index


def _merge(found: list[Construct]) -> list[Construct]:
    """Adjacent preprocessor lines into one construct; each comment onto the construct after it (the
    file's first comment, at line 1, stays alone: the file header), a trailing one onto the one before."""
    merged: list[Construct] = []
    for construct in found:
        previous = merged[-1] if merged else None
        if (previous is not None and previous.kind == construct.kind == "preprocessor"
                and previous.last + 1 == construct.first):
            merged[-1] = Construct(previous.first, construct.last, "preprocessor", previous.names + construct.names)
            continue
        if (previous is not None and previous.kind == construct.kind == "comment"
                and previous.last + 1 == construct.first):
            merged[-1] = Construct(previous.first, construct.last, "comment", ())
            continue
        merged.append(construct)
    result: list[Construct] = []
    pending: Construct | None = None
    for construct in merged:
        if construct.kind == "comment" and construct.first != 1:
            pending = construct if pending is None else Construct(pending.first, construct.last, "comment", ())
            continue
        if pending is not None:
            construct = Construct(pending.first, construct.last, construct.kind, construct.names, construct.external)
            pending = None
        result.append(construct)
    if pending is not None:
        if result:
            last = result[-1]
            result[-1] = Construct(last.first, pending.last, last.kind, last.names, last.external)
        else:
            result.append(pending)
    return result


def part_of(construct: Construct, file_name: str) -> tuple[str, tuple[str, ...]] | None:
    """The part `construct` of `file_name` is, or None when no rule names it (module docstring)."""
    names = construct.names
    if construct.kind == "comment":
        return HEADER if construct.first == 1 else None
    if construct.kind == "preprocessor":
        if any(n in ("NNEF_RUN_CHECK", "NNEF_KERNEL_DONE") for n in names):
            return CUDA_HOST
        if any(n == "NNEF_EVENTS" for n in names):
            return TABLES
        return PREAMBLE
    if not names:
        return None
    if all(re.fullmatch(r"nnef_weights_\w+|__asm__", n) for n in names) and construct.kind != "function":
        return BLOB                    # the blob's symbol, declared, and the assembler statement that defines it
    if construct.external:
        if file_name == "nnef_deployment.h" or all(re.match(r"nnef_(syncbuf|sync|arena|item)_\w+$", n) for n in names):
            return INTERFACE
        return None
    rules: Sequence[tuple[str, tuple[str, tuple[str, ...]], str]] = (
        (r"nnef_item_\w+_run|nnef_cuda_\w+_infer", RUN, "function"),
        (r"nnef_(item|cuda)_\w+_init", INIT, "function"),
        (r"nnef_dla_\w+", CHANNEL, ""),
        (r"nnef_cuda_(fail|send|get)", CUDA_HOST, "function"),
        (r"nnef_arena_\w+|T_\w+|nnef_dev_arena|D_\w+|nnef_stream", PLAN, "declaration"),
        (r"nnef_sync_\w+|nnef_syncbuf_\w+|nnef_arena_\w+", INTERFACE, "declaration"),   # C linkage of a .cu item
        (r"nnef_items|nnef_inputs|nnef_outputs|nnef_deployment_name|nnef_stage_\w+|nnef_events_\w+", TABLES,
         "declaration"),
    )
    for pattern, part, kind in rules:
        if all(re.fullmatch(pattern, n) for n in names) and (not kind or construct.kind == kind):
            return part
    return None


def file_parts(code_file: str, text: str, covered: Iterable[int] = ()) -> list[Part]:
    """The named parts of the generated file `code_file` (a project-relative path) holding `text`:
    the whole file for a copied one (FILE_PARTS), else every top-level construct with a line outside
    `covered` (the lines of instruction entries) that a rule names."""
    name = code_file.rsplit("/", 1)[-1]
    lines = text.split("\n")
    count = len(lines) - (1 if lines and lines[-1] == "" else 0)
    if name in FILE_PARTS:
        part, requirements = FILE_PARTS[name]
        return [Part(part, requirements, code_file, 1, max(1, count))]
    taken = set(covered)
    parts: list[Part] = []
    for construct in constructs(text):
        if all(n in taken or not lines[n - 1].strip() for n in range(construct.first, construct.last + 1)):
            continue
        named = part_of(construct, name)
        if named is None:
            continue
        previous = parts[-1] if parts else None
        between = range(previous.last + 1, construct.first) if previous else range(0)
        if (previous is not None and previous.name == named[0]
                and all(n not in taken and not lines[n - 1].strip() for n in between)):
            parts[-1] = Part(previous.name, previous.requirements, code_file, previous.first, construct.last)
        else:       # one part per run of constructs of the same part (the tensors of the buffer plan, ...)
            parts.append(Part(named[0], named[1], code_file, construct.first, construct.last))
    return parts


def uncovered(text: str, ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs [first, last] of non-blank lines of `text` outside every range."""
    lines = text.split("\n")
    inside = set()
    for first, last in ranges:
        inside.update(range(first, last + 1))
    runs: list[tuple[int, int]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or number in inside:
            continue
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def deployment_parts(files: Mapping[str, str], covered: Mapping[str, Iterable[int]]) -> list[Part]:
    """The parts of every file of a deployment (project-relative path -> text), sorted by file and line."""
    parts = []
    for code_file, text in sorted(files.items()):
        parts += file_parts(code_file, text, covered.get(code_file, ()))
    return parts
