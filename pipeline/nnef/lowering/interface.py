"""Whole-graph rules, once the body is lowered: the interface and unused values.

Every parameter declared by external (or, in a graphitem, a sync variable the item reads),
every result assigned (and, for a sync variable, sent); values computed but never used.
Findings: NNEF-E040, E041, E043, E080, W050.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from pipeline.nnef.graph import Ref, refs_in
from pipeline.nnef.lowering.values import TYPE_DECLARATIONS


def _names(values: Iterable[Any]) -> Iterator[str]:
    """The tensor names in operand values, in order (a plain Ref without a generator)."""
    for value in values:
        if type(value) is Ref:
            yield value.name
        else:
            for ref in refs_in(value):
                yield ref.name


class GraphRules:
    """Mixed into GraphBuilder (lowering/builder.py), whose state it reads and updates."""

    def _check_interface(self) -> None:
        self._check_header_names()
        assigned = set(self.graph.tensors)
        externals = {r.name for op in self.graph.operations if op.name == "external" for r in op.output_refs()}
        syncs = self.sync_names
        for name in self.definition.params:
            if name.value in externals:
                continue
            if self.graph.item is not None and name.value in syncs:
                continue
            if self.graph.item is not None:
                self.report("NNEF-E080", f"graphitem parameter '{name.value}' is neither declared by external nor a "
                            "sync variable the item reads", name.span)
            else:
                self.report("NNEF-E040", f"graph parameter '{name.value}' is not declared by external", name.span)
        for name in self.definition.results:
            if name.value in self.poisoned:
                continue
            if name.value not in assigned:
                self.report("NNEF-E041", f"graph result '{name.value}' is never assigned", name.span)
            elif name.value in self.sync_pending:
                self.report("NNEF-E080", f"graphitem result '{name.value}' is a sync variable this item never "
                            "sends (send_var)", name.span)

    def _check_header_names(self) -> None:
        """Each parameter and result once, and no name both a parameter and a result (as Khronos)."""
        seen: dict[str, str] = {}
        for kind, names in (("parameter", self.definition.params), ("result", self.definition.results)):
            for name in names:
                first = seen.get(name.value)
                if first is not None:
                    what = f"listed twice as a {kind}" if first == kind else f"both a {first} and a {kind}"
                    self.report("NNEF-E043", f"'{name.value}' is {what} of graph '{self.graph.name}'", name.span)
                else:
                    seen[name.value] = kind

    def _check_unused(self) -> None:
        # plain Refs (nearly every operand and result) are read without a generator
        used: set[str] = set()
        for op in self.graph.operations:
            for value in op.inputs.values():
                if type(value) is Ref:
                    used.add(value.name)
                else:
                    used.update(_names((value,)))
        used.update(self.graph.outputs)
        used.update(self.referenced)
        for op in self.graph.operations:
            if op.name in ("send_var", "variablesync"):
                continue
            values = tuple(op.outputs.values())
            names = (values[0].name,) if len(values) == 1 and type(values[0]) is Ref else _names(values)
            for name in names:
                if name not in used:
                    verb = "declared" if op.name in TYPE_DECLARATIONS else "computed"
                    self.report("NNEF-W050", f"'{name}' is {verb} but never used", op.span)
