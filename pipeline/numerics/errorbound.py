"""The error bounds' public names, in one place (issue 41 replaced the worst-case |W| walk that lived here).

The engine, one idea per module:

* pipeline.numerics.graph: the ONNX model as primitive operations (composites expanded, shape
  arithmetic folded exactly);
* pipeline.numerics.rules (one module per operator family): each operation's enclosure rule and its
  linearization (Jacobian, local rounding per arithmetic, remainder);
* pipeline.numerics.enclosure: the exact real-number result, enclosed in double-word balls;
* pipeline.numerics.sensitivity: the error bound of an arithmetic through the network's Jacobian at
  the vector;
* pipeline.numerics.arithmetic: what each implementation (our reference, onnxruntime, the NVDLA in
  FP16) is assumed to compute.

docs/compare.md ("Error bounds") derives every rule. The codes: BOUND-E001 no rule for an operator or
attribute, E002 a data-dependent refusal, E003 a value reaching the storage format's largest value,
E004 an operator the storage arithmetic has no rule for, E005 a bound that is not finite.
"""

from __future__ import annotations

from pipeline.numerics.arithmetic import FP16, ONNXRUNTIME, REFERENCE, Arithmetic, Storage, Table, nvdla_fp16
from pipeline.numerics.enclosure import Enclosure, EnclosureUnavailable
from pipeline.numerics.graph import COMPOSITE, EXACT_MOVES
from pipeline.numerics.rules import rules as _rules
from pipeline.numerics.sensitivity import LAMBDA, STORAGE_REFUSED, Bound, BoundUnavailable, Sensitivity

NO_RULE, DATA_DEPENDENT, STORAGE_OVERFLOW, NO_STORAGE_RULE, NOT_FINITE = (
    "BOUND-E001", "BOUND-E002", "BOUND-E003", "BOUND-E004", "BOUND-E005")

# Every ONNX operator the enclosure and the bound have a rule for (a composite through its expansion; a
# selection, comparison or generator of constants folded exactly before any vector, pipeline.numerics.graph).
RULES = frozenset(_rules()) | frozenset(COMPOSITE) | EXACT_MOVES
# Operators whose result is an element (or a copy) of a stored input: exact in a storage format.
EXACT_IN_STORAGE = frozenset(op for op, rule in _rules().items() if rule.exact_in_storage)

__all__ = ["FP16", "ONNXRUNTIME", "REFERENCE", "Arithmetic", "Storage", "Table", "nvdla_fp16", "Enclosure",
           "EnclosureUnavailable", "Bound", "BoundUnavailable", "Sensitivity", "LAMBDA", "RULES", "EXACT_IN_STORAGE",
           "STORAGE_REFUSED", "NO_RULE", "DATA_DEPENDENT", "STORAGE_OVERFLOW", "NO_STORAGE_RULE", "NOT_FINITE"]
