"""Issue 42: the trace matrix's status rules (pipeline/evidence/matrix.py) on in-memory verdicts, light per mutant."""

from __future__ import annotations
