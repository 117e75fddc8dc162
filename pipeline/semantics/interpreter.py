"""The reference interpreter: runs a checked flat graph with the kernels of the registry.

Operations execute in program order (the graph is SSA and topologically ordered by the
checker). Each operation's inputs are resolved (tensor references to arrays, literals
passed as they are), its kernel runs with floating-point exceptions silenced (inf and
NaN are defined results here, not errors), and its results are checked against the
element type and shape the checker declared: the interpreter and the checker's shape
rules are two independent readings of the spec, and a disagreement is reported
(SEM-E006) rather than trusted.

`external` tensors come from `inputs` (by tensor name), `variable` tensors from
`variables` (by label, or by tensor name); `load_variables` reads them from the `.dat`
files of an NNEF directory (`<dir>/<label>.dat`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.diagnostics import Location, PipelineError
from pipeline.nnef.graph import Graph, Operation, Ref
from pipeline.semantics.kernels import lookup
from pipeline.semantics.tensors import DTYPES

log = logging.getLogger(__name__)


def _where(op: Operation) -> Location:
    return Location.of_span(op.span)


def _declared_dtype(op: Operation) -> np.dtype:
    return DTYPES.get(op.dtype or "scalar", DTYPES["scalar"])


def _bind(op: Operation, value: np.ndarray | None, what: str, key: str) -> np.ndarray:
    """Check an externally supplied tensor against its declaration (no conversion)."""
    if value is None:
        raise PipelineError("SEM-E002", f"no value given for {what} '{key}'", _where(op))
    value = np.asarray(value)
    expected = _declared_dtype(op)
    if value.dtype != expected:
        raise PipelineError(
            "SEM-E003", f"{what} '{key}' has element type {value.dtype}, expected {expected} "
            f"(convert explicitly; the interpreter never rounds its inputs)", _where(op))
    shape = [int(s) for s in op.attribs.get("shape", [])]
    if list(value.shape) != shape:
        raise PipelineError("SEM-E003", f"{what} '{key}' has shape {list(value.shape)}, declared {shape}", _where(op))
    return value


def _resolve(value: Any, env: Mapping[str, np.ndarray], op: Operation) -> Any:
    if isinstance(value, Ref):
        if value.name not in env:
            raise PipelineError("SEM-E008", f"tensor '{value.name}' is used before it is defined", _where(op))
        return env[value.name]
    if isinstance(value, (list, tuple)):
        return [_resolve(v, env, op) for v in value]
    return value


def _check_result(graph: Graph, op: Operation, ref: Ref, value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    info = graph.tensors.get(ref.name)
    if info is not None:
        expected = DTYPES.get(info.dtype)
        if expected is not None and value.dtype != expected:
            raise PipelineError("SEM-E006", f"'{op.name}' produced {ref.name} as {value.dtype}, declared {info.dtype}", _where(op))
        if info.shape is not None and list(value.shape) != list(info.shape):
            raise PipelineError(
                "SEM-E006", f"'{op.name}' produced {ref.name} with shape {list(value.shape)}, "
                f"the checker inferred {list(info.shape)}", _where(op))
    return value


def _last_uses(graph: Graph) -> dict[int, list[str]]:
    """Operation index -> tensors whose last reader it is (to free them when not kept)."""
    last: dict[str, int] = {}
    for index, op in enumerate(graph.operations):
        for ref in op.input_refs():
            last[ref.name] = index
    keep = set(graph.outputs)
    freed: dict[int, list[str]] = {}
    for name, index in last.items():
        if name not in keep:
            freed.setdefault(index, []).append(name)
    return freed


def bind_declaration(op: Operation, inputs: Mapping[str, np.ndarray], variables: Mapping[str, np.ndarray],
                     env: dict[str, np.ndarray]) -> None:
    """Put the value of an `external` (from `inputs`) or `variable` (from `variables`, by label,
    else by name) into `env`, checked against its declaration (type and shape, no conversion)."""
    name = op.output_refs()[0].name
    if op.name == "external":
        env[name] = _bind(op, inputs.get(name), "input", name)
        return
    label = str(op.attribs.get("label", ""))
    env[name] = _bind(op, variables.get(label, variables.get(name)), "variable", label or name)


def run_operation(graph: Graph, op: Operation, env: dict[str, np.ndarray]) -> None:
    """Run one computing instruction of `graph` with its kernel; its results go into `env`.

    The unit both the interpreter and the split executor (one worker per item) use, so
    the two can only differ in the order of instructions, never in what one computes.
    """
    with np.errstate(all="ignore"):
        _run_quiet(graph, op, env)


def _run_quiet(graph: Graph, op: Operation, env: dict[str, np.ndarray]) -> None:
    """run_operation with floating-point exceptions already silenced by the caller (once per run)."""
    args = {key: _resolve(value, env, op) for key, value in op.inputs.items()}
    _store(graph, op, _call(op, args), env)


def _call(op: Operation, args: Mapping[str, Any]) -> tuple[Any, ...]:
    """The kernel of `op` on resolved arguments (floating-point exceptions silenced by the caller)."""
    fn = lookup(op.name, op.span)
    try:
        return tuple(fn(args, op.attribs, op.dtype))
    except PipelineError as exc:
        if exc.location:
            raise
        raise PipelineError(exc.code, f"{op.name}: {exc.message}", _where(op)) from exc


def _store(graph: Graph, op: Operation, results: tuple[Any, ...], env: dict[str, np.ndarray]) -> None:
    """The results of `op` into `env`, each checked against the checker's type and shape."""
    outputs = list(op.outputs.values())
    if len(results) != len(outputs):
        raise PipelineError("SEM-E006", f"'{op.name}' gave {len(results)} results for {len(outputs)} outputs", _where(op))
    for target, value in zip(outputs, results):
        if isinstance(target, (list, tuple)):
            if len(target) != len(value):
                raise PipelineError("SEM-E006", f"'{op.name}' gave {len(value)} tensors for {len(target)} names", _where(op))
            for ref, item in zip(target, value):
                env[ref.name] = _check_result(graph, op, ref, item)
        else:
            env[target.name] = _check_result(graph, op, target, value)


DECLARATIONS = frozenset({"external", "variable"})


def interpret(
    graph: Graph,
    inputs: Mapping[str, np.ndarray],
    variables: Mapping[str, np.ndarray] | None = None,
    *,
    keep: bool = False,
) -> dict[str, np.ndarray]:
    """Run `graph`; return its outputs by name, or with `keep` every tensor by name.

    Raises PipelineError: SEM-E001 unknown operation, SEM-E002 missing input/variable,
    SEM-E003 input/variable of the wrong type or shape, SEM-E004/E005 invalid attributes
    or operands, SEM-E006 result disagreeing with the declared type/shape, SEM-E008
    use before definition. Every error names the operation's source location.
    """
    variables = variables or {}
    env: dict[str, np.ndarray] = {}
    freed = {} if keep else _last_uses(graph)
    with np.errstate(all="ignore"):  # inf and NaN are results here, not errors
        for index, op in enumerate(graph.operations):
            if op.name in DECLARATIONS:
                bind_declaration(op, inputs, variables, env)
            else:
                _run_quiet(graph, op, env)
            for name in freed.get(index, ()):
                env.pop(name, None)
    missing = [name for name in graph.outputs if name not in env]
    if missing:
        raise PipelineError("SEM-E008", f"graph outputs never defined: {', '.join(missing)}",
                            Location(element=f"graph '{graph.name}'"))
    if keep:
        return env
    return {name: env[name] for name in graph.outputs}


# Kernels that treat the vectors stacked along axis 0 of one operand (named here) independently:
# each output element of vector v is computed from vector v alone, in its documented order.
STACKABLE = {"conv": "input", "linear": "input", "batch_normalization": "input", "relu": "x"}
# ...provided their other operands are the same for every vector and have a leading extent of 1
# (or rank 0), so that they broadcast alike over one vector and over the stack.
LEADING_ONE = frozenset({"batch_normalization"})


def _run_stacked(graph: Graph, op: Operation, envs: list[dict[str, np.ndarray]]) -> bool:
    """Run a STACKABLE `op` once for every vector (its stacked operand along axis 0, results
    split); False (nothing done) unless every other operand is the same array for all vectors."""
    stacked = STACKABLE[op.name]
    args = [{key: _resolve(value, env, op) for key, value in op.inputs.items()} for env in envs]
    first = args[0]
    if not isinstance(first.get(stacked), np.ndarray) or first[stacked].ndim == 0 or len(op.outputs) != 1:
        return False
    if any(a[key] is not first[key] for a in args[1:] for key in first if key != stacked):
        return False
    if op.name in LEADING_ONE and any(np.ndim(v) and np.shape(v)[0] != 1 for k, v in first.items() if k != stacked):
        return False
    sizes = [a[stacked].shape[0] for a in args]
    (result,) = _call(op, {**first, stacked: np.concatenate([a[stacked] for a in args])})
    start = 0
    for env, size in zip(envs, sizes):
        _store(graph, op, (result[start:start + size],), env)
        start += size
    return True


def interpret_batch(
    graph: Graph,
    vectors: Sequence[Mapping[str, np.ndarray]],
    variables: Mapping[str, np.ndarray] | None = None,
) -> list[dict[str, np.ndarray]]:
    """[interpret(graph, v, variables) for v in vectors], bit for bit, faster.

    The operations run in program order for all vectors together; a STACKABLE operation whose
    weights are shared (variables) runs once on the vectors stacked along the batch axis, so
    its NumPy operations cover every vector. Each output element is computed exactly as
    interpret computes it (same terms, same order): only the grouping of independent outputs
    into array operations differs. Same errors as interpret.
    """
    variables = variables or {}
    envs: list[dict[str, np.ndarray]] = [{} for _ in vectors]
    freed = _last_uses(graph)
    with np.errstate(all="ignore"):  # inf and NaN are results here, not errors
        for index, op in enumerate(graph.operations):
            if op.name in DECLARATIONS:
                for env, vector in zip(envs, vectors):
                    bind_declaration(op, vector, variables, env)
            elif not (len(envs) > 1 and op.name in STACKABLE and _run_stacked(graph, op, envs)):
                for env in envs:
                    _run_quiet(graph, op, env)
            for name in freed.get(index, ()):
                for env in envs:
                    env.pop(name, None)
    missing = [name for name in graph.outputs if envs and name not in envs[0]]
    if missing:
        raise PipelineError("SEM-E008", f"graph outputs never defined: {', '.join(missing)}",
                            Location(element=f"graph '{graph.name}'"))
    return [{name: env[name] for name in graph.outputs} for env in envs]


def load_variables(graph: Graph, directory: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Every `variable` of `graph` read from `<directory>/<label>.dat`, keyed by label (read-only)."""
    from pipeline.nnef.tensorfile import LABEL_CODE, TensorFileError, read_variable_file

    base = Path(directory)
    values: dict[str, np.ndarray] = {}
    for op in graph.operations:
        if op.name != "variable":
            continue
        label = str(op.attribs.get("label", ""))
        if label in values:
            continue
        try:  # read below `base` without following a link (pipeline.files.readguard)
            values[label] = read_variable_file(base, label).data
        except TensorFileError as error:
            if error.missing:
                raise PipelineError("SEM-E007", f"tensor file for variable '{label}' not found: "
                                    f"{error.location.file}", _where(op)) from None
            raise
        except PipelineError as error:
            if error.code != LABEL_CODE:
                raise
            raise PipelineError(LABEL_CODE, error.message, _where(op)) from None
        values[label].setflags(write=False)  # constants of the graph (kernels may keep rearranged copies)
        log.debug("loaded %s %s from %s", label, values[label].shape, base)
    return values
