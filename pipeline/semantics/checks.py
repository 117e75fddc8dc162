"""Checks of the reference semantics itself, run on every model's exported graph.

`semantics.order`: for every operation of the graph the scalar oracle covers, a few output
elements are recomputed one float32 operation at a time in the documented order
(pipeline/semantics/oracle.py) and compared bit for bit with the interpreter's result on
the model's first validation vector. The interpreter is the meaning of the model for every
later 0-ULP comparison; this check is what ties that meaning to the written documentation.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from pipeline.ledger.checks import CheckResult, Verdict, register_check
from pipeline.nnef.graph import Graph
from pipeline.semantics import oracle, transcendental
from pipeline.semantics.interpreter import interpret, load_variables

ORDER = "semantics.order"
SAMPLES_PER_OPERATION = 8

register_check(ORDER, "The interpreter sums in the documented order (scalar oracle, bit for bit)",
               "check", ["HLR-SEM-001", "LLR-SEM-001"],
               "Samples output elements of every conv, linear, matmul, pool, reduction, softmax and "
               "batch_normalization of the model and recomputes them with plain scalar loops in the order "
               "docs/semantics/ states; any bit difference fails.")


def _positions(shape: list[int], count: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """First and last element, then seeded random ones (distinct)."""
    total = math.prod(shape)
    flat = {0, total - 1}
    while len(flat) < min(count, total):
        flat.add(int(rng.integers(total)))
    return [tuple(int(i) for i in np.unravel_index(f, shape)) for f in sorted(flat)]


def _same_bits(a: np.float32, b: np.float32) -> bool:
    if a != a and b != b:
        return True  # NaN payloads are not specified
    return np.float32(a).view(np.uint32) == np.float32(b).view(np.uint32)


def order_check(graph: Graph, variables: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                subject: str, read: list[str], seed: int = 0) -> CheckResult:
    """Sample every covered operation of `graph` and compare the oracle with the interpreter."""
    env = interpret(graph, dict(inputs), dict(variables), keep=True)
    rng = np.random.default_rng(seed)
    sampled = 0
    operations = 0
    skipped: dict[str, int] = {}
    for op in graph.operations:
        if op.name in ("external", "variable", "constant"):
            continue
        if op.name not in oracle.COVERED:
            skipped[op.name] = skipped.get(op.name, 0) + 1
            continue
        result = op.output_refs()[0].name
        actual = env[result]
        operations += 1
        for index in _positions(list(actual.shape), SAMPLES_PER_OPERATION, rng):
            expected = oracle.element(op, env, index, transcendental.exp)
            if expected is None:
                skipped[op.name] = skipped.get(op.name, 0) + 1
                break
            sampled += 1
            if not _same_bits(actual[index], expected):
                where = f"{op.span}: " if op.span else ""
                reason = (f"{where}{op.name} -> {result}{list(index)}: interpreter {float(actual[index])!r} "
                          f"(0x{np.float32(actual[index]).view(np.uint32):08x}), documented order "
                          f"{float(expected)!r} (0x{np.float32(expected).view(np.uint32):08x})")
                return CheckResult(ORDER, subject, Verdict.FAIL, reason,
                                   {"elements_sampled": sampled, "operations_sampled": operations}, read, [])
    measured: dict[str, Any] = {"elements_sampled": sampled, "operations_sampled": operations,
                                "not_sampled": dict(sorted(skipped.items()))}
    if sampled == 0:
        return CheckResult(ORDER, subject, Verdict.NOT_RUN, "the graph has no operation the scalar oracle covers",
                           measured, read, [])
    return CheckResult(ORDER, subject, Verdict.PASS, "", measured, read, [])


def first_vector(export_dir: Path, deploy_file: Path, graph: Graph) -> dict[str, np.ndarray]:
    """The model's first validation vector, keyed by NNEF input name."""
    from pipeline.project.deploy import load_deploy
    from pipeline.numerics.vectors import draw_vectors

    spec = load_deploy(deploy_file)
    vector = draw_vectors(spec.inputs, 1, spec.validation.seed)[0]
    provenance = json.loads((export_dir / "provenance.json").read_text(encoding="utf-8"))
    names = {item["onnx"]: item["nnef"] for item in provenance["inputs"]}
    return {names[name]: value for name, value in vector.items()}


def model_order_check(graph: Graph, export_dir: Path, deploy_file: Path, subject: str,
                      read: list[str]) -> CheckResult:
    """`semantics.order` for an exported model (variables from export_dir, vector from deploy.yaml)."""
    variables = load_variables(graph, export_dir)
    return order_check(graph, variables, first_vector(export_dir, deploy_file, graph), subject, read)
