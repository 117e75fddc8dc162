"""The PTX/SASS gate: an independent look at what nvcc produced for a CUDA item.

It reads only nvcc's outputs -- the PTX text, the cubin disassembled by `cuobjdump -sass`
(PyPI nvidia-cuda-cuobjdump) and the `ptxas -v` report -- and the generated source's header
comment for the NNEF file name; never the generator's Python objects. A kernel is mapped to
the NNEF line it implements by its symbol, `nnef_k_<item>_L<line>_<result>`.

Rules, per kernel (docs/codegen-cuda.md "The gate"):
  PTX   no fused multiply-add (fma.*, mad.* on floats); every f32 mul/add/sub carries the
        explicit round-to-nearest modifier (.rn: ptxas never fuses those); no atomics or
        reductions (atom.*, red.*); nothing approximate (.approx, rcp, ex2, lg2, div.full;
        a division or square root must be div.rn.f32 / sqrt.rn.f32).
  SASS  no atomics or reductions (ATOM*, RED*); no local memory (LDL, STL); FFMA and MUFU
        only in a kernel whose PTX holds a div.rn/sqrt.rn, where they are ptxas's documented
        correctly rounded expansion of that instruction (they are counted and reported).
  ptxas 0 bytes stack frame, 0 bytes spill stores and loads.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.toolchain import process

MAX_SASS = 1024 * 1024 * 1024     # bytes of cuobjdump -sass for one cubin

# The programs it runs, cuobjdump on the PATH (the wheel's: library nvidia) (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("cuobjdump",)

KERNEL = re.compile(r"nnef_k_(?P<item>\w+?)_L(?P<line>\d+)_(?P<result>\w+)")
PTX_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.M)
PTX_OP = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)", re.M)
SASS_FUNCTION = re.compile(r"^\s*Function : (\w+)", re.M)
SASS_OP = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
PTXAS_FUNCTION = re.compile(r"Function properties for (\w+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                            r"(\d+) bytes spill loads")
APPROX = re.compile(r"\.approx|^rcp\.|^ex2\.|^lg2\.|^div\.full|^sin\.|^cos\.|^tanh\.")


@dataclass
class Finding:
    kernel: str
    nnef: str                  # "<nnef file>:<line>" the kernel implements
    where: str                 # "PTX compute_90", "SASS sm_90", "ptxas sm_90"
    instruction: str
    message: str

    def __str__(self) -> str:
        return f"{self.nnef}: kernel {self.kernel} ({self.where}): {self.instruction}: {self.message}"


@dataclass
class GateReport:
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)   # arch -> kernel -> {ptx, sass, ffma}

    @property
    def passed(self) -> bool:
        return not self.findings


def cuobjdump_path() -> str | None:
    """cuobjdump from the nvidia-cuda-cuobjdump wheel, else from PATH."""
    try:
        import nvidia  # type: ignore[import-not-found]
        for base in getattr(nvidia, "__path__", []):
            for found in Path(base).glob("*/bin/cuobjdump"):
                return str(found)
    except ImportError:
        pass
    return shutil.which("cuobjdump")


def nnef_file_of(source_text: str) -> str:
    """The NNEF file named in a generated item's header comment ("from\\n * <file> (sha256 ...")."""
    found = re.search(r"from\s*\n\s*\*\s*(\S+) \(sha256", source_text)
    return found.group(1) if found else "?"


def _split(text: str, header: re.Pattern[str]) -> dict[str, str]:
    marks = [(m.start(), m.group(1)) for m in header.finditer(text)]
    return {name: text[start:(marks[i + 1][0] if i + 1 < len(marks) else len(text))]
            for i, (start, name) in enumerate(marks)}


def _where(kernel: str, nnef_file: str) -> str:
    m = KERNEL.fullmatch(kernel)
    return f"{nnef_file}:{m.group('line')}" if m else f"{nnef_file}:?"


def check_ptx(ptx: str, arch: str, nnef_file: str, report: GateReport) -> dict[str, bool]:
    """PTX rules; returns {kernel: whether it holds a correctly rounded div/sqrt}."""
    exact_div: dict[str, bool] = {}
    for kernel, body in _split(ptx, PTX_ENTRY).items():
        ops = PTX_OP.findall(body)
        exact_div[kernel] = any(o.startswith(("div.rn.f32", "sqrt.rn.f32")) for o in ops)
        report.counts.setdefault(arch, {}).setdefault(kernel, {})["ptx"] = len(ops)

        def bad(op: str, message: str) -> None:
            report.findings.append(Finding(kernel, _where(kernel, nnef_file), f"PTX {arch}", op, message))

        for op in ops:
            parts = op.split(".")
            if parts[0] in ("fma", "mad") and any(p.startswith("f") for p in parts[1:]):
                bad(op, "fused multiply-add")
            elif parts[0] in ("atom", "red"):
                bad(op, "atomic or reduction")
            elif APPROX.search(op):
                bad(op, "approximate instruction")
            elif parts[0] in ("div", "sqrt") and parts[-1] == "f32" and "rn" not in parts:
                bad(op, "division or square root that is not correctly rounded (.rn)")
            elif parts[0] in ("mul", "add", "sub") and parts[-1] == "f32" and "rn" not in parts:
                bad(op, "float operation without .rn (ptxas may contract it into an FFMA)")
    return exact_div


def check_sass(sass: str, arch: str, nnef_file: str, exact_div: dict[str, bool], report: GateReport) -> None:
    for kernel, body in _split(sass, SASS_FUNCTION).items():
        ops = SASS_OP.findall(body)
        counts = report.counts.setdefault(arch, {}).setdefault(kernel, {})
        counts["sass"] = len(ops)
        counts["ffma"] = sum(1 for o in ops if o.startswith("FFMA"))

        def bad(op: str, message: str) -> None:
            report.findings.append(Finding(kernel, _where(kernel, nnef_file), f"SASS {arch}", op, message))

        for op in ops:
            head = op.split(".")[0]
            if head.startswith(("ATOM", "RED")):
                bad(op, "atomic or reduction")
            elif head in ("LDL", "STL"):
                bad(op, "local memory")
            elif head in ("FFMA", "MUFU") and not exact_div.get(kernel, False):
                bad(op, "fused multiply-add or special-function unit in a kernel with no correctly rounded "
                        "division/square root in its PTX")


def check_ptxas(text: str, arch: str, nnef_file: str, report: GateReport) -> None:
    for kernel, stack, stores, loads in PTXAS_FUNCTION.findall(text):
        if int(stack) or int(stores) or int(loads):
            report.findings.append(Finding(kernel, _where(kernel, nnef_file), f"ptxas {arch}", "local memory",
                                           f"{stack} bytes stack frame, {stores} bytes spill stores, {loads} bytes "
                                           "spill loads"))


def gate(build_dir: Path, archs: list[str], source: Path) -> GateReport:
    """Apply every rule to the outputs of pipeline.toolchain.nvcc.device_build in `build_dir`."""
    cuobjdump = cuobjdump_path()
    if cuobjdump is None:
        raise FileNotFoundError("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    nnef_file = nnef_file_of(source.read_text(encoding="utf-8"))
    report = GateReport()
    for arch in archs:
        exact = check_ptx((build_dir / f"{arch}.ptx").read_text(encoding="utf-8"), arch, nnef_file, report)
        dumped = process.run([cuobjdump, "-sass", str(build_dir / f"{arch}.cubin")], timeout=600,
                             max_output=MAX_SASS)
        if dumped.returncode != 0:
            raise RuntimeError(f"cuobjdump -sass {arch}.cubin exited {dumped.returncode}: {dumped.err.strip()[:300]}")
        sass = dumped.out
        check_sass(sass, arch, nnef_file, exact, report)
        check_ptxas((build_dir / f"{arch}.ptxas.txt").read_text(encoding="utf-8"), arch, nnef_file, report)
    return report
