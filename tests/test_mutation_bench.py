"""Issue 42: the mutation run names what exists (benchmarks/mutation_bench.py, docs/mutation.md)."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("mutation_bench", REPO / "benchmarks/mutation_bench.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("mutation_bench", module)     # its dataclasses look their module up there
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_every_verdict_module_and_light_test_exists_and_mutmut_reads_the_same_list() -> None:
    bench = _bench()
    for module, tests in bench.MODULES.items():
        assert (REPO / bench.module_path(module)).is_file(), module
        for test in tests:
            path, _, node = test.partition("::")
            assert (REPO / path).is_file(), test
            assert not node or f"def {node}(" in (REPO / path).read_text(encoding="utf-8"), test
    compare_parts = {p.stem for p in (REPO / "pipeline/compare").glob("*.py")} & {
        "step", "context", "numbers", "timing", "gpu", "nvdla", "platform", "traces"}
    assert {f"compare.{p}" for p in compare_parts} <= set(bench.MODULES)
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    assert sorted(config["only_mutate"]) == sorted(str(bench.module_path(m)) for m in bench.MODULES)
    for (module, _key), reason in bench.EQUIVALENT.items():
        assert module in bench.MODULES and reason
    for module, _what, text, _replacement in bench.HAND:
        assert text in (REPO / bench.module_path(module)).read_text(encoding="utf-8"), _what
