"""Build CUDA items: nvcc for the device with pinned floating-point flags, g++ for the host emulation.

DEVICE_FLAGS fix the floating-point contract of the device build (docs/codegen-cuda.md "Flags"):
    --fmad=false          no contraction of a*b+c into a fused multiply-add (the generated code
                          also uses the __fmul_rn/__fadd_rn intrinsics, which nvcc never fuses)
    -ftz=false            subnormals are kept, as in IEEE and the reference
    -prec-div=true        '/' is the correctly rounded division
    -prec-sqrt=true       sqrtf is the correctly rounded square root
    -Werror all-warnings  every warning an error
    -lineinfo             SASS carries the .cu line of each instruction (profilers, the trace)
Never --use_fast_math. The architectures come from the deployment (ARCHITECTURES by default:
sm_87, Jetson Orin; sm_90, Hopper); nvcc 13 has dropped sm_72 (Jetson Xavier).
EMULATION_FLAGS build the same source for the host (NNEF_CUDA_EMULATE): C++17, -O2, every
warning an error, -ffp-contract=off (no FMA contraction), -fno-math-errno (sqrt is the IEEE
instruction, no libm call).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process

# The programs it runs, nvcc, the host emulation's g++, the GPU query (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("nvcc", "g++", "nvidia-smi")

DEVICE_FLAGS: tuple[str, ...] = ("--fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
                                 "-Werror", "all-warnings", "-lineinfo", "-O3", "-std=c++17")
BUILD_TIMEOUT_S = 1800.0     # one nvcc or g++ run (the largest shipped model's CUDA: under a minute)
FORBIDDEN_DEVICE_FLAGS = ("--use_fast_math", "-use_fast_math", "--fmad=true", "-fmad=true", "-ftz=true",
                          "-prec-div=false", "-prec-sqrt=false")
EMULATION_FLAGS: tuple[str, ...] = ("-x", "c++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror",
                                    "-ffp-contract=off", "-fno-math-errno", "-DNNEF_CUDA_EMULATE")
ARCHITECTURES: tuple[str, ...] = ("sm_87", "sm_90")
UNSUPPORTED_ARCHITECTURES = {"sm_72": "Jetson Xavier (Volta, sm_72): nvcc 13 cannot target it (dropped in CUDA 13; "
                                      "use a CUDA 12 toolchain)"}


@dataclass
class CudaBuild:
    """What a build produced and how."""

    binary: Path
    commands: list[list[str]]
    compiler: str
    version: str
    outputs: dict[str, Path] = field(default_factory=dict)   # "<arch>.cubin" / "<arch>.ptx" / "<arch>.ptxas" -> file


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def nvcc_version() -> str:
    """The release line of `nvcc --version` (recorded with every build)."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise PipelineError("RUN-E001", "nvcc not found (install the CUDA toolkit)")
    text = process.text([nvcc, "--version"])
    lines = [line for line in text.splitlines() if "release" in line]
    return lines[0].strip() if lines else (text.strip().splitlines() or ["unknown"])[-1]


def check_architectures(archs: Sequence[str]) -> list[str]:
    """The architectures to build for; RUN-E002 for one nvcc 13 cannot target or a malformed name."""
    result = []
    for arch in archs:
        if arch in UNSUPPORTED_ARCHITECTURES:
            raise PipelineError("RUN-E002", f"architecture {arch}: {UNSUPPORTED_ARCHITECTURES[arch]}")
        if not (arch.startswith("sm_") and arch[3:].rstrip("af").isdigit()):
            raise PipelineError("RUN-E002", f"architecture '{arch}' is not of the form sm_<NN>")
        result.append(arch)
    return result


def _run(command: list[str], cwd: Path, timeout: float = BUILD_TIMEOUT_S) -> str:
    """A build command, bounded (pipeline/toolchain/process.py); RUN-E003 when it fails."""
    proc = process.run(command, cwd=cwd, timeout=timeout)
    if proc.returncode != 0:
        raise PipelineError("RUN-E003", f"build failed (exit {proc.returncode}): {' '.join(command)}\n"
                            f"{(proc.err or proc.out)[-4000:]}")
    return proc.err + proc.out


def device_build(code_dir: Path, source: Path, out_dir: Path, archs: Sequence[str] = ARCHITECTURES,
                 extra: Sequence[str] = (), link: bool = True) -> CudaBuild:
    """Compile `source` for every architecture: cubin (-cubin, `ptxas -v` report kept) and the PTX
    it was assembled from (-keep: the very PTX ptxas read, byte-identical to what -ptx writes, in one
    nvcc run instead of two), and one executable embedding SASS for each plus the PTX of the newest.
    RUN-E003 on a warning.

    `extra` flags are appended after the pinned ones (the gate's tests plant --fmad=true this
    way to see the gate catch it); `link=False` stops after the per-architecture PTX and cubin.
    """
    nvcc = nvcc_path()
    if nvcc is None:
        raise PipelineError("RUN-E001", "nvcc not found (install the CUDA toolkit)")
    archs = check_architectures(archs)
    code_dir, source, out_dir = Path(code_dir).resolve(), Path(source).resolve(), Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = [*DEVICE_FLAGS, *extra, "-I", str(code_dir)]
    build = CudaBuild(out_dir / "nnef_cuda_run", [], nvcc, nvcc_version())
    for arch in archs:
        ptx = out_dir / f"{arch}.ptx"
        cubin = out_dir / f"{arch}.cubin"
        keep = out_dir / f"{arch}.keep"
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir()
        command = [nvcc, *flags, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-keep", "-keep-dir", str(keep),
                   str(source), "-o", str(cubin)]
        text = _run(command, code_dir)
        build.commands.append(command)
        kept = keep / f"{source.stem}.ptx"
        if not kept.is_file():
            raise PipelineError("RUN-E003", f"nvcc -keep left no PTX ({kept.name}): {' '.join(command)}")
        kept.replace(ptx)
        shutil.rmtree(keep)
        (out_dir / f"{arch}.ptxas.txt").write_text(text, encoding="utf-8")
        build.outputs[f"{arch}.ptx"] = ptx
        build.outputs[f"{arch}.cubin"] = cubin
        build.outputs[f"{arch}.ptxas"] = out_dir / f"{arch}.ptxas.txt"
    if not link:
        return build
    gencode = [f"-gencode=arch=compute_{a[3:]},code=sm_{a[3:]}" for a in archs]
    newest = archs[-1][3:]
    gencode.append(f"-gencode=arch=compute_{newest},code=compute_{newest}")
    command = [nvcc, *flags, *gencode, str(source), "-o", str(build.binary)]
    _run(command, code_dir)
    build.commands.append(command)
    return build


def device_program(code_dir: Path, sources: Sequence[str], c_objects: Sequence[Path], binary: Path,
                   archs: Sequence[str] = ARCHITECTURES, defines: Sequence[str] = ()) -> CudaBuild:
    """The GPU build of a mixed deployment's C program: each .cu (`sources`, relative to `code_dir`)
    compiled by nvcc with the pinned flags to an object holding SASS for every architecture and
    the PTX of the newest, then linked by nvcc (which adds the CUDA runtime) with the C program's
    objects `c_objects` (gcc, qualified flags). RUN-E003 on an error or a warning."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise PipelineError("RUN-E001", "nvcc not found (install the CUDA toolkit)")
    archs = check_architectures(archs)
    code_dir, binary = Path(code_dir).resolve(), Path(binary).resolve()
    binary.parent.mkdir(parents=True, exist_ok=True)
    gencode = [f"-gencode=arch=compute_{a[3:]},code=sm_{a[3:]}" for a in archs]
    gencode.append(f"-gencode=arch=compute_{archs[-1][3:]},code=compute_{archs[-1][3:]}")
    build = CudaBuild(binary, [], nvcc, nvcc_version())
    objects = []
    for source in sources:
        obj = binary.parent / (Path(source).name.rsplit(".", 1)[0] + ".o")
        command = [nvcc, *DEVICE_FLAGS, "-I", str(code_dir), *[f"-D{d}" for d in defines], *gencode, "-c", source,
                   "-o", str(obj)]
        if _run(command, code_dir).strip():
            raise PipelineError("RUN-E003", f"nvcc printed a diagnostic: {' '.join(command)}")
        build.commands.append(command)
        build.outputs[source] = obj
        objects.append(obj)
    command = [nvcc, "-o", str(binary), *[str(o) for o in objects], *[str(o) for o in c_objects], "-Xcompiler",
               "-pthread"]
    _run(command, code_dir)
    build.commands.append(command)
    return build


def emulation_build(code_dir: Path, source: Path, binary: Path, cxx: str = "g++") -> CudaBuild:
    """The host emulation of `source` (docs/codegen-cuda.md "Host emulation")."""
    found = shutil.which(cxx)
    if found is None:
        raise PipelineError("RUN-E001", f"C++ compiler '{cxx}' not found (Debian package g++)")
    code_dir, source, binary = Path(code_dir).resolve(), Path(source).resolve(), Path(binary).resolve()
    binary.parent.mkdir(parents=True, exist_ok=True)
    command = [cxx, *EMULATION_FLAGS, "-I", str(code_dir), str(source), "-o", str(binary)]
    _run(command, code_dir)
    version = (process.text([cxx, "--version"]).splitlines() or ["unknown"])[0]
    return CudaBuild(binary, [command], cxx, version)


def emulation_objects(code_dir: Path, sources: Sequence[str], out_dir: Path, defines: Sequence[str] = (),
                      cxx: str = "g++") -> CudaBuild:
    """The host emulation of the CUDA items of a mixed deployment, one object each (`sources` relative
    to `code_dir`), to be linked with the C program by gcc (with -lstdc++: the emulated launcher's
    shuffle uses std::vector). Flags as emulation_build, plus -pthread (the items run in threads)."""
    found = shutil.which(cxx)
    if found is None:
        raise PipelineError("RUN-E001", f"C++ compiler '{cxx}' not found (Debian package g++)")
    code_dir, out_dir = Path(code_dir).resolve(), Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    version = (process.text([cxx, "--version"]).splitlines() or ["unknown"])[0]
    build = CudaBuild(out_dir, [], cxx, version)
    for source in sources:
        obj = out_dir / (Path(source).name.rsplit(".", 1)[0] + ".o")
        command = [cxx, *EMULATION_FLAGS, "-pthread", "-I", str(code_dir), *[f"-D{d}" for d in defines], "-c", source,
                   "-o", str(obj)]
        _run(command, code_dir)
        build.commands.append(command)
        build.outputs[source] = obj
    return build


def gpu_device() -> dict[str, str] | None:
    """The first GPU that answers: {"name", "sm", "driver"} (nvidia-smi, which ships with the driver; the
    toolkit's device query for the architecture where nvidia-smi is absent), or None."""
    found, answer = gpu_query()
    if not found:
        return None
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            proc = process.run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                               timeout=60)
        except PipelineError:
            proc = process.Finished([smi], -1, b"", b"", 0.0)
        first = (proc.out.strip().splitlines() or [""])[0].split(",")
        if proc.returncode == 0 and len(first) == 3 and first[1].strip().replace(".", "").isdigit():
            return {"name": first[0].strip(), "sm": "sm_" + first[1].strip().replace(".", ""),
                    "driver": first[2].strip()}
    arch = answer.replace(",", " ").split()[0] if answer.split() else ""
    return {"name": "CUDA device", "sm": f"sm_{arch}" if arch.isdigit() else "unknown",
            "driver": "unknown (no nvidia-smi)"}


def gpu_label(device: dict[str, str]) -> str:
    """How a result obtained on this GPU is named: `gpu (<device>, sm_XX, driver <version>)`."""
    return f"gpu ({device['name']}, {device['sm']}, driver {device['driver']})"


def gpu_query() -> tuple[bool, str]:
    """Whether a CUDA GPU answers here: (found, what the query said).

    Uses the toolkit's own `__nvcc_device_query` (it loads the driver and lists the devices'
    architectures); its error message is the reason GPU checks give when they do not run.
    """
    nvcc = nvcc_path()
    query = Path(nvcc).resolve().parent / "__nvcc_device_query" if nvcc else None
    if query is None or not query.is_file():
        return False, "no CUDA toolkit device query (__nvcc_device_query) found"
    try:
        proc = process.run([str(query)], timeout=60)
    except PipelineError as error:
        return False, error.message.replace(str(query), "__nvcc_device_query")
    text = proc.said.strip()
    if proc.returncode != 0 or not text:
        return False, text.replace(str(query), "__nvcc_device_query") or f"exit {proc.returncode}"
    return True, text
