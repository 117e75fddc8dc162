"""Lowering: a graph (or graphitem) definition to a flat graph, with every finding (builder.py)."""

from pipeline.nnef.lowering.builder import GraphBuilder, Options
from pipeline.nnef.lowering.values import POISON, ItemName, lvalue_names

__all__ = ["GraphBuilder", "ItemName", "Options", "POISON", "lvalue_names"]
