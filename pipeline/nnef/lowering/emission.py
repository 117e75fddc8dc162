"""Emission: an operation appended to the flat graph, with its result tensors and shapes.

Result names (the assigned identifiers or generated ones), array results, element types,
and the output shapes from the catalogue's shape rules (pipeline/nnef/shapes.py).
Findings: NNEF-E015, E017, E020, E022, W051.
"""

from __future__ import annotations

import pickle
from typing import Any

from pipeline.diagnostics import Span
from pipeline.nnef import ast
from pipeline.nnef import types as T
from pipeline.nnef.catalogue import FragmentSig
from pipeline.nnef.graph import Operation, Ref, TensorInfo
from pipeline.nnef import limits
from pipeline.nnef.lowering.values import POISON, element_type
from pipeline.nnef.shapes import SHAPE_RULES, ShapeError


def _memo_key(name: str, shapes: dict[str, Any], attribs: dict[str, Any]) -> tuple[str, bytes] | None:
    """The shape memo's key. A rule is a pure function of the shapes and attributes, and a
    large graph repeats the same few combinations, so successful inferences are remembered.
    The key is their pickle (built in C, three times faster than repr): equal bytes mean
    equal values of the same types (1, 1.0 and True differ); equal values may still give
    different bytes (shared lists are pickled once), which only costs a miss. None (no
    memo) for a value pickle refuses."""
    try:
        return name, pickle.dumps((shapes, attribs), pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def _copied(value: Any) -> Any:
    """A copy of nested lists (shapes end up in TensorInfo, which callers may change)."""
    if type(value) is not list:
        return value
    return [_copied(v) if type(v) is list else v for v in value]


class Emission:
    """Mixed into GraphBuilder (lowering/builder.py), whose state it reads and updates."""

    def _emit_operator(self, sig: FragmentSig, inputs: dict[str, Any], span: Span) -> Any:
        dtype = None
        if sig.generic:
            dtype = next((d for d in (self._dtype_of(v) for v in inputs.values()) if d), sig.generic_default)
        for name, value in inputs.items():
            param = sig.param(name)
            actual = T.type_of_value(value, self.dtypes)
            if param is not None and not T.castable(actual, T.bind(param.type, dtype)):
                self.report("NNEF-E015", f"operand of type {T.format_type(actual)} is invalid for '{sig.name}'", span)
                return POISON
        self._reject_sync_operands(inputs, span)
        return self._emit(sig, inputs, {}, dtype, span, frozenset(inputs), None)

    def _emit(self, sig: FragmentSig, inputs: dict[str, Any], attribs: dict[str, Any], dtype: str | None,
              span: Span, explicit: frozenset[str], out_names: list[ast.Expr | None] | None,
              declare: bool = True) -> Any:
        shapes = self._infer(sig, inputs, attribs, span)
        outputs: dict[str, Any] = {}
        for index, (result, item, elem) in enumerate(self._result_types(sig, dtype)):
            target = out_names[index] if out_names and index < len(out_names) else None
            shape = shapes[index] if shapes is not None else None
            if isinstance(item, ast.ArrayType):
                count = len(shape) if shape is not None else self._array_count(target)
                names = self._array_targets(target, count, sig, span)
                if names is None:
                    return POISON
                refs = []
                for k, (name, ident_span) in enumerate(names):
                    if declare and ident_span is not None and not self._declare(name, ident_span, sig.name):
                        name = self._fresh(sig.name)
                    self._add_tensor(name, elem, shape[k] if shape is not None else None)
                    refs.append(Ref(name))
                outputs[result.name] = refs
                continue
            if isinstance(target, ast.Identifier):
                name = target.name
                if declare and not self._declare(name, target.span, sig.name):
                    name = self._fresh(sig.name)  # keep the graph well formed after the finding
            else:
                name = self._fresh(sig.name)
            if sig.name == "send_var" and name in self.graph.tensors:
                outputs[result.name] = Ref(name)
                continue
            self._add_tensor(name, elem, shape)
            outputs[result.name] = Ref(name)
        op = Operation(sig.name, inputs, attribs, outputs, dtype, span, explicit)
        self.graph.operations.append(op)
        values = list(outputs.values())
        return values[0] if len(values) == 1 else tuple(values)

    def _result_types(self, sig: FragmentSig, dtype: str | None) -> list[tuple[Any, Any, str]]:
        """(result, bound type, element type) of each result of `sig`, computed once per type."""
        key = (id(sig), dtype)
        found = self._result_cache.get(key)
        if found is None:
            found = []
            for result in sig.results:
                item = T.bind(result.type, dtype)
                found.append((result, item, element_type(item)))
            self._result_cache[key] = found
            self._result_sigs.append(sig)  # keeps id(sig) from being reused while cached
        return found

    def _array_count(self, target: ast.Expr | None) -> int:
        return len(target.items) if isinstance(target, ast.ArrayExpr) else 0

    def _array_targets(self, target: ast.Expr | None, count: int, sig: FragmentSig,
                       span: Span) -> list[tuple[str, Span | None]] | None:
        if target is None:
            return [(self._fresh(sig.name), None) for _ in range(count)]
        if not isinstance(target, ast.ArrayExpr) or not all(isinstance(i, ast.Identifier) for i in target.items):
            self.report("NNEF-E017", f"the result of '{sig.name}' is an array: assign it to [a, b, ...]", target.span)
            return None
        if len(target.items) != count:
            self.report("NNEF-E017", f"'{sig.name}' gives {count} tensors here but the left-hand side has "
                        f"{len(target.items)}", target.span)
            for ident in target.items:
                self._declare_poisoned(ident)  # type: ignore[arg-type]
            return None
        return [(i.name, i.span) for i in target.items]  # type: ignore[union-attr]

    def _add_tensor(self, name: str, dtype: str, shape: list[int] | None) -> None:
        self.graph.tensors[name] = TensorInfo(name, dtype, shape)
        self.dtypes[name] = dtype

    def _infer(self, sig: FragmentSig, inputs: dict[str, Any], attribs: dict[str, Any],
               span: Span | None) -> list[Any] | None:
        """The output shapes by the operation's shape rule, remembered per graph; None (with a
        finding at `span`) when there is no rule, an input shape is unknown, the rule refuses
        the arguments or a shape breaks the limits."""
        rule = SHAPE_RULES.get(sig.name)
        if rule is None:
            self.report("NNEF-W051", f"operation '{sig.name}' has no shape rule (a custom primitive fragment): "
                        "its output shapes are unknown and it cannot be executed", span)
            return None
        shapes = self._input_shapes(inputs)
        if shapes is None:
            return None
        key = _memo_key(sig.name, shapes, attribs)
        known = self._shape_memo.get(key) if key is not None else None
        if known is not None:
            return _copied(known)
        try:
            inferred = rule(shapes, attribs)
            for shape in inferred:
                for one in (shape if shape and isinstance(shape[0], list) else [shape]):
                    problem = limits.shape_problem(one) if isinstance(one, list) else None
                    if problem:
                        self.report(limits.CODE, f"{sig.name}: {problem} (docs/nnef.md, Limits)", span)
                        return None
            if key is not None:
                self._shape_memo[key] = _copied(inferred)
            return inferred
        except ShapeError as error:
            self.report("NNEF-E020", f"{sig.name}: {error}", span)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as error:
            self.report("NNEF-E020", f"{sig.name}: invalid arguments ({error})", span)
        return None

    def _input_shapes(self, inputs: dict[str, Any]) -> dict[str, Any] | None:
        """The shape of every input by parameter name; None when one is unknown (poisoned)."""
        shapes: dict[str, Any] = {}
        tensors = self.graph.tensors
        for name, value in inputs.items():
            if type(value) is Ref:  # _shape_of's commonest case, without the call
                info = tensors.get(value.name)
                if info is None or info.shape is None:
                    return None
                shapes[name] = info.shape
                continue
            shape = self._shape_of(value)
            if shape is POISON:
                return None
            shapes[name] = shape
        return shapes

    def _shape_of(self, value: Any) -> Any:
        if isinstance(value, Ref):
            info = self.graph.tensors.get(value.name)
            if info is None or info.shape is None:
                return POISON
            return info.shape
        if isinstance(value, list):
            shapes = [self._shape_of(v) for v in value]
            return POISON if any(s is POISON for s in shapes) else shapes
        return []
