"""Pause Python's cyclic garbage collector around bulk object construction.

Parsing and checking a 50,000-operation graph creates millions of small acyclic objects;
each creation burst triggers generation-2 collections that scan all of them again, which
more than doubles the run time (measured: 15.7 s vs 6.6 s for the flat parse alone).
Nothing built there is cyclic garbage, so collection can wait until the step ends.

When the block ends, everything allocated inside it is still in the youngest generation,
and the first allocation after `gc.enable()` would scan all of it (about 1 s after a
50,000-operation check, benchmarks/nnef_bench.py). `gc.freeze()` + `gc.unfreeze()` move
every tracked object into the oldest generation in constant time instead: the objects
are kept (most are the result being returned), and a later full collection still sees
them, so nothing is leaked.
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
            gc.freeze()  # young generation -> permanent, in O(1), resetting the allocation count
            gc.unfreeze()  # permanent -> oldest generation: collected again by later full collections
            gc.enable()
