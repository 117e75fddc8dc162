"""The NVDLA golden cases (tests/data/nvdla-golden, ONNC single_layer_test, BSD-3) and their loadables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "nvdla-golden"


def golden_cases() -> list[Path]:
    return sorted(GOLDEN.glob("*/*.onnx"))


@lru_cache(maxsize=None)
def loadable_of(onnx_path: Path):
    """(bytes, intended content, debug table, legalized) of the case's loadable."""
    from pipeline.codegen.nvdla.mapping import map_program
    from pipeline.codegen.nvdla.writer import write_loadable
    from pipeline.export import convert
    from pipeline.split.nvdla_legalize import legalize

    exported = convert(onnx_path)
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, content, debug = write_loadable(map_program(legal))
    return data, content, debug, legal
