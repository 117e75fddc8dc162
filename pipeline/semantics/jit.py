"""Whether the interpreter runs its compiled loops (pipeline/semantics/compiled.py, numba).

The compiled loops compute the same bits as the NumPy code beside them, faster; the NumPy code
stays the fallback when numba cannot be imported, and `NNCERT_NO_JIT=1` selects it on purpose
(tests compare the two; benchmarks time both). numba is imported on first use, never with the
package: listing doit tasks must not load it.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

log = logging.getLogger(__name__)

_COMPILED: list[ModuleType | None] = []  # the import's outcome, once per process


def compiled_loops() -> ModuleType | None:
    """pipeline.semantics.compiled, or None when NNCERT_NO_JIT is set (not 0) or numba cannot be imported."""
    if os.environ.get("NNCERT_NO_JIT", "") not in ("", "0"):
        return None
    if not _COMPILED:
        try:
            from pipeline.semantics import compiled
        except ImportError as exc:  # numba missing or broken: the NumPy code, same bits, slower
            log.info("numba not importable (%s): the interpreter runs its NumPy loops", exc)
            compiled = None
        _COMPILED.append(compiled)
    return _COMPILED[0]
