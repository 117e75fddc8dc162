"""Pause Python's cyclic garbage collector around bulk object construction.

Parsing and checking a 50,000-operation graph creates millions of small acyclic objects;
each creation burst triggers generation-2 collections that scan all of them again, which
more than doubles the run time (measured: 15.7 s vs 6.6 s for the flat parse alone).
Nothing built there is cyclic garbage, so collection can wait until the step ends.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC inside the block; re-entrant (restores the state it found)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
