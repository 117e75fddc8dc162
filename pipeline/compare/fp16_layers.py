"""Where the FP16 error of a DLA deployment comes from, and which layers to move off the DLA.

When an FP16 deployment misses its tolerance, its verdict alone does not tell the user what to
change. This module answers with the network itself: each layer (NNEF operation) that an FP16 item
runs is evaluated in FP16 alone, every other layer in float32, on the validation vectors, and its
*contribution* is the largest distance of the outputs to the float32 reference semantics. The
layers are ranked by it. Then the smallest set to move to another (float32) item is sought: layers
are moved in rank order until the FP16 evaluation of the rest meets the tolerance, and a moved layer
that can go back without missing it again is put back (so no single layer of the set can stay on the
DLA; greedy, not a proof of the global minimum, and said so in the report).

The FP16 evaluation is the reference semantics with the storage of NVDLA's FP16 mode (the assumption
of pipeline.numerics.arithmetic's nvdla_fp16 arithmetic): a layer on the DLA reads its operands
(activations, weights) rounded to IEEE binary16, computes in float32, and writes its result rounded to
binary16 (round to nearest even; a value beyond 65504 becomes infinite, as the hardware's would
saturate or overflow). It is not the NVDLA emulator, which judged the deployment: it is the means to
tell the layers apart, and the report names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from pipeline.nnef.graph import Graph, Operation
from pipeline.semantics.interpreter import DECLARATIONS, bind_declaration, run_operation

# Vectors the ranking evaluates (each layer re-runs the rest of the network once per vector).
MAX_VECTORS = 8
# Layers listed in the report (the whole ranking is in the JSON document).
SHOWN = 5
STORAGE_ONLY = frozenset({"reshape", "squeeze", "unsqueeze", "copy"})
METHOD = ("reference semantics with FP16 storage on the layers named: operands and result rounded to IEEE "
          "binary16, arithmetic in float32 (the NVDLA FP16 arithmetic's assumption); the other layers float32")


@dataclass
class LayerRanking:
    """The ranking of one deployment's FP16 layers and the set to move."""

    tolerance: float
    vectors: int
    all_fp16: float
    layers: list[dict[str, Any]] = field(default_factory=list)
    move: list[str] = field(default_factory=list)
    remaining: float = 0.0
    met: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"method": METHOD, "search": "greedy by contribution, then each moved layer put back where the "
                                            "tolerance still holds (no single layer of the set can stay; not a "
                                            "proof of the global minimum)",
                "tolerance_max_abs_error": self.tolerance, "vectors": self.vectors,
                "max_abs_error_all_fp16": self.all_fp16, "layers": self.layers, "move": self.move,
                "max_abs_error_after_move": self.remaining, "tolerance_met_after_move": self.met}

    def describe(self) -> str:
        """One clause for a check's reason."""
        top = ", ".join(f"{entry['layer']} ({entry['max_abs_error']:.3g})" for entry in self.layers[:SHOWN])
        head = (f"FP16 error by layer (alone in FP16, against the float32 reference, {self.vectors} vectors): {top}"
                if top else "no layer runs in FP16")
        if not self.move:
            return (f"{head}; with every layer in FP16 this evaluation's max |error| is {self.all_fp16:.3g} <= "
                    f"{self.tolerance:g}: no layer to move (the deployment's own FP16 arithmetic misses it)")
        if self.met:
            return (f"{head}; move {len(self.move)} layer(s) to a CPU or GPU item: {', '.join(self.move)} (then "
                    f"max |error| {self.remaining:.3g} <= {self.tolerance:g})")
        return (f"{head}; even with every layer moved the FP16 evaluation errs by {self.remaining:.3g} > "
                f"{self.tolerance:g}: the inputs' FP16 rounding alone misses the tolerance")


def _half(value: Any) -> Any:
    """An operand as FP16 storage holds it (float arrays only; logical and literals unchanged)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        with np.errstate(over="ignore"):
            return value.astype(np.float16).astype(np.float32)
    return value


def _run(graph: Graph, start: int, env: dict[str, np.ndarray], fp16: Collection[int]) -> dict[str, np.ndarray]:
    """Run the computing operations from index `start` on `env` (a copy is taken); those in `fp16` with
    FP16 storage. Returns the graph outputs."""
    env = dict(env)
    for index in range(start, len(graph.operations)):
        op = graph.operations[index]
        if op.name in DECLARATIONS:
            continue
        if index in fp16:
            local = {ref.name: _half(env[ref.name]) for ref in op.input_refs()}
            run_operation(graph, op, local)
            for ref in op.output_refs():
                env[ref.name] = _half(local[ref.name])
        else:
            run_operation(graph, op, env)
    return {name: env[name] for name in graph.outputs}


def _error(got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> float:
    worst = 0.0
    for name, value in expected.items():
        a, b = np.asarray(got[name], np.float64), np.asarray(value, np.float64)
        diff = np.where(np.isnan(a) | np.isnan(b), np.inf, np.abs(a - b))
        worst = max(worst, float(diff.max(initial=0.0)))
    return worst


def _name(op: Operation) -> str:
    return op.output_refs()[0].name


def rank(graph: Graph, variables: Mapping[str, np.ndarray], vectors: Sequence[Mapping[str, np.ndarray]],
         on_fp16: Collection[str], tolerance: float) -> LayerRanking:
    """Rank the layers of `graph` whose result is in `on_fp16` (the FP16 items' operations, by result name)
    and find the set to move so that the rest in FP16 is within `tolerance` of the float32 reference."""
    vectors = list(vectors)[:MAX_VECTORS]
    bases: list[dict[str, np.ndarray]] = []
    for vector in vectors:
        env: dict[str, np.ndarray] = {}
        with np.errstate(all="ignore"):
            for op in graph.operations:
                if op.name in DECLARATIONS:
                    bind_declaration(op, vector, variables, env)
        bases.append(env)
    references = [_run(graph, 0, env, ()) for env in bases]
    layers = [i for i, op in enumerate(graph.operations)
              if op.name not in DECLARATIONS and op.name not in STORAGE_ONLY and op.output_refs()
              and _name(op) in on_fp16]

    def error(fp16: Collection[int], start: int = 0) -> float:
        return max((_error(_run(graph, start, env, fp16), ref) for env, ref in zip(bases, references)), default=0.0)

    kept = [_kept(graph, env) for env in bases]
    contributions = []
    for index in layers:  # each alone in FP16: the network before it is the float32 one, kept once
        worst = max((_error(_run(graph, index, env, (index,)), ref) for env, ref in zip(kept, references)),
                    default=0.0)
        op = graph.operations[index]
        line = op.span.line if op.span else None
        contributions.append({"layer": _name(op), "operation": op.name, "line": line, "max_abs_error": worst})
    order = sorted(range(len(layers)), key=lambda k: (-contributions[k]["max_abs_error"], layers[k]))
    ranking = LayerRanking(tolerance, len(vectors), error(set(layers)),
                           [contributions[k] for k in order])
    if ranking.all_fp16 <= tolerance:
        ranking.remaining, ranking.met = ranking.all_fp16, True
        return ranking
    moved: list[int] = []
    remaining = ranking.all_fp16
    for k in order:
        if remaining <= tolerance:
            break
        moved.append(layers[k])
        remaining = error(set(layers) - set(moved))
    if remaining <= tolerance:
        for index in list(reversed(moved)):  # put back what the tolerance does not need moved
            trial = [m for m in moved if m != index]
            trial_error = error(set(layers) - set(trial))
            if trial_error <= tolerance:
                moved, remaining = trial, trial_error
    ranking.move = [_name(graph.operations[i]) for i in sorted(moved)]
    ranking.remaining, ranking.met = remaining, remaining <= tolerance
    return ranking


def _kept(graph: Graph, env: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor of the float32 evaluation of one vector (the start of each layer's FP16 re-run)."""
    full = dict(env)
    with np.errstate(all="ignore"):
        for op in graph.operations:
            if op.name not in DECLARATIONS:
                run_operation(graph, op, full)
    return full
