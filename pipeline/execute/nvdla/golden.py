"""NVDLA golden cases: export -> legalize -> map -> loadable -> validator -> emulator, against hardware-model dumps.

A case is a triple `<id>_<Op>.onnx/.pgm/.dimg` (the layout of tests/data/nvdla-golden/<Op>/,
from ONNC's single_layer_test). The .pgm input is mapped to FP16 as nvdla/sw's runtime does
((p - mean) / normalize, defaults 0 and 1: the identity); the .dimg is the runtime's
`--rawdump`: values printed through float in channel, row, column order, with its stable-hash
quirks (a half equal to 32768 prints 0, a NaN prints 31744), which `dump_view` applies to
our outputs before comparing. Verdicts: `exact` (every FP16 equal), `within <bound>` (at most
BOUND_ULP FP16 ulps from the hardware model, and within HLR-NUM-004's tolerance of the
float32 reference), `fail` with the first differing element. A case may state its own bound
beside it, `<id>_<Op>.tolerance.json` (`max_abs_error` from the expected values and `why`): a
case no FP16 implementation reproduces bit for bit (a lookup-table sigmoid against onnxruntime's
function, tests/data/nvdla-layout) is `within` that absolute distance instead of one ulp.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BOUND_ULP = 1  # measured in both emulator modes: BatchNormalization and LRN, docs/codegen-nvdla.md
FP16_TOLERANCE = 1.0e-2  # HLR-NUM-004 fp16_max_abs_error
TOLERANCE_FILE_LIMIT = 1 << 16  # bytes of a case's tolerance.json


@dataclass
class CaseResult:
    case: str
    operator: str
    verdict: str  # exact, within, fail
    line: str
    max_ulp: int = 0
    max_abs_reference: float = 0.0
    findings: list[str] = field(default_factory=list)


def read_pgm(path: Path, mean: float = 0.0, normalize: float = 1.0) -> np.ndarray:
    """(H, W) float32 of a binary 8-bit PGM, mapped as nvdla/sw TestUtils does, then to FP16."""
    data = path.read_bytes()
    fields: list[bytes] = []
    pos = 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) > 255:
        raise ValueError(f"{path}: not an 8-bit binary PGM")
    w, h = int(fields[1]), int(fields[2])
    pixels = np.frombuffer(data, dtype=np.uint8, count=w * h, offset=pos + 1).astype(np.float32)
    return ((pixels - np.float32(mean)) / np.float32(normalize)).astype(np.float16).astype(np.float32).reshape(h, w)


def read_dimg(path: Path) -> np.ndarray:
    """The FP16 values of a raw dump (each printed value is the float of a half; 6 digits identify it)."""
    values = np.array(path.read_text().split(), dtype=np.float64)
    halves = values.astype(np.float16)
    if not np.array_equal(halves.astype(np.float64), values) and not np.allclose(halves, values, rtol=1e-5, atol=0):
        raise ValueError(f"{path}: values that are not printed halves")
    return halves


def dump_view(values: np.ndarray) -> np.ndarray:
    """What the runtime's raw dump prints for these halves (DlaImage::packData stable-hash quirks)."""
    out = values.astype(np.float16).copy()
    out[out == np.float16(32768.0)] = np.float16(0.0)
    out[np.isnan(out)] = np.float16(31744.0)
    out[out == 0] = np.float16(0.0)  # -0 prints as 0
    return out


def read_tolerance(onnx_path: Path) -> float | None:
    """The case's own absolute bound (`<case>.tolerance.json`, a positive `max_abs_error` below HLR-NUM-004's
    tolerance, with the reason in `why`), or None when the case has none (the one-ulp bound applies)."""
    path = onnx_path.with_name(onnx_path.stem + ".tolerance.json")
    if not path.is_file():
        return None
    if path.stat().st_size > TOLERANCE_FILE_LIMIT:
        raise ValueError(f"{path.name}: larger than {TOLERANCE_FILE_LIMIT} bytes")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path.name}: not JSON ({error})") from None
    if not isinstance(doc, dict):
        doc = {}
    bound = doc.get("max_abs_error")
    if doc.get("schema_version") != 1 or not isinstance(doc.get("why"), str) or \
            isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound <= FP16_TOLERANCE:
        raise ValueError(f"{path.name}: needs schema_version 1, a max_abs_error in (0, {FP16_TOLERANCE}] and a why")
    return float(bound)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in FP16 ulps (ordered bit patterns)."""
    def ordered(x: np.ndarray) -> np.ndarray:
        bits = x.astype(np.float16).view(np.uint16).astype(np.int32)
        return np.where(bits & 0x8000, 0x8000 - bits, bits)
    return np.abs(ordered(a) - ordered(b))


def run_case(onnx_path: Path, mode: str = "ideal", out: Path | None = None) -> CaseResult:
    """One case through the whole path, emulated in `mode` (pipeline.execute.nvdla.emulator.MODES); with `out`,
    its loadable and debug table are written there."""
    from pipeline.codegen.nvdla.mapping import map_program
    from pipeline.codegen.nvdla.validate import validate_loadable
    from pipeline.codegen.nvdla.writer import write_loadable
    from pipeline.execute.nvdla.emulator import emulate
    from pipeline.export import convert
    from pipeline.semantics.interpreter import interpret
    from pipeline.split.nvdla_legalize import check_legalized, legalize

    case = onnx_path.stem
    operator = case.split("_", 1)[-1]
    exported = convert(onnx_path)
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, _content, debug = write_loadable(map_program(legal))
    if out is not None:
        from pipeline.codegen.nvdla.artifacts import write_loadable_files

        write_loadable_files(out, case, data, debug, legal.rewrites, legal.config)
    findings = [str(f) for f in validate_loadable(data)]
    if findings:
        return CaseResult(case, operator, "fail", f"{case} fail: validator: {findings[0]}", findings=findings)
    (name, shape), = legal.inputs.items()
    image = read_pgm(onnx_path.with_suffix(".pgm"))
    if int(np.prod(shape)) != image.size:
        raise ValueError(f"{case}: input {shape} does not match the {image.shape} PGM")
    x = image.reshape(shape)
    check_legalized(legal, interpret(exported.graph, {name: x}, exported.variables, keep=True))
    outputs = emulate(data, {name: x}, mode)
    out_name = legal.outputs[0]
    emulated = dump_view(outputs[out_name].reshape(-1))
    reference = interpret(exported.graph, {name: x}, exported.variables)[out_name].reshape(-1).astype(np.float32)
    golden = read_dimg(onnx_path.with_suffix(".dimg"))
    if golden.size != emulated.size:
        return CaseResult(case, operator, "fail", f"{case} fail: {emulated.size} values emulated, "
                          f"{golden.size} in the hardware-model dump")
    ulps = ulp_distance(emulated, golden)
    max_abs_ref = float(np.max(np.abs(emulated.astype(np.float32) - reference))) if reference.size else 0.0
    worst = int(ulps.max()) if ulps.size else 0
    if worst == 0 and np.array_equal(emulated.view(np.uint16), golden.view(np.uint16)):
        return CaseResult(case, operator, "exact", f"{case} exact", 0, max_abs_ref)
    tolerance = read_tolerance(onnx_path)
    if tolerance is not None:
        distance = np.abs(emulated.astype(np.float64) - golden.astype(np.float64))
        worst_abs = float(distance.max()) if distance.size else 0.0
        if worst_abs <= tolerance and max_abs_ref <= FP16_TOLERANCE:
            return CaseResult(case, operator, "within", f"{case} within {tolerance:g} (the case's bound; "
                              f"{int(np.count_nonzero(ulps))} of {ulps.size} values differ, max |difference| "
                              f"{worst_abs:.3g}; max |error| vs float32 reference {max_abs_ref:.3g})", worst, max_abs_ref)
        first = int(np.argmax(distance))
        return CaseResult(case, operator, "fail", f"{case} fail: element {first}: emulated {float(emulated[first])!r}, "
                          f"expected {float(golden[first])!r} (|difference| {worst_abs:.3g} > the case's bound "
                          f"{tolerance:g})", worst, max_abs_ref)
    if worst <= BOUND_ULP and max_abs_ref <= FP16_TOLERANCE:
        count = int(np.count_nonzero(ulps))
        return CaseResult(case, operator, "within", f"{case} within {BOUND_ULP} ulp ({count} of {ulps.size} "
                          f"values differ by 1 FP16 ulp from the hardware model; max |error| vs float32 "
                          f"reference {max_abs_ref:.3g} <= {FP16_TOLERANCE})", worst, max_abs_ref)
    first = int(np.flatnonzero(ulps > BOUND_ULP)[0]) if worst > BOUND_ULP else int(np.flatnonzero(ulps)[0])
    return CaseResult(case, operator, "fail", f"{case} fail: element {first}: emulated {float(emulated[first])!r}, "
                      f"hardware model {float(golden[first])!r} ({int(ulps[first])} ulp; max |error| vs float32 "
                      f"reference {max_abs_ref:.3g})", worst, max_abs_ref)


def case_files(folders: list[Path]) -> list[Path]:
    """The .onnx of every complete triple in the folders (or in their sub-folders, one level)."""
    found: list[Path] = []
    for folder in folders:
        paths = sorted(folder.glob("*.onnx")) or sorted(folder.glob("*/*.onnx"))
        found += [p for p in paths if p.with_suffix(".pgm").is_file() and p.with_suffix(".dimg").is_file()]
    return found
