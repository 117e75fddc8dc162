"""The semantic kernels: NNEF operation name -> the kernel that defines its meaning.

A kernel is a plain function

    kernel(inputs, attribs, dtype) -> tuple of results in the fragment's result order

where `inputs` maps the fragment's tensor parameters (NNEF names) to NumPy arrays, lists
of arrays, or Python literals (a literal tensor argument such as `bias = 0.0`), `attribs`
maps the other parameters (defaults already filled in by the checker) to Python values,
and `dtype` is the generic type argument (`scalar`, `integer`, `logical`) where the
operation has one. Kernels are registered with `@kernel("name", ...)` in the modules of
KERNEL_MODULES; the registry imports them on first use.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

from pipeline.diagnostics import Location, PipelineError, Span

Kernel = Callable[[Mapping[str, Any], Mapping[str, Any], "str | None"], tuple[Any, ...]]

# Modules defining kernels, one operation family each.
KERNEL_MODULES: tuple[str, ...] = (
    "pipeline.semantics.declarations",
    "pipeline.semantics.elementwise",
    "pipeline.semantics.activation",
    "pipeline.semantics.sliding_window",
    "pipeline.semantics.linear_algebra",
    "pipeline.semantics.reduce",
    "pipeline.semantics.normalization",
    "pipeline.semantics.shape_ops",
)

# Operations whose value comes from outside the graph (inputs, tensor files): the
# interpreter binds them itself; they are listed here so that the registry is complete.
BINDING_OPERATIONS: frozenset[str] = frozenset({"external", "variable"})

_KERNELS: dict[str, Kernel] = {}
_loaded = False


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the kernel of each NNEF operation in `names`."""

    def register(fn: Kernel) -> Kernel:
        for name in names:
            if name in _KERNELS:
                raise ValueError(f"operation {name!r} registered twice")
            _KERNELS[name] = fn
        return fn

    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in KERNEL_MODULES:
            importlib.import_module(module)
        _loaded = True


def lookup(name: str, span: Span | None = None) -> Kernel:
    """The kernel of operation `name`; SEM-E001 naming the operation and where it is used."""
    _load()
    fn = _KERNELS.get(name)
    if fn is None:
        raise PipelineError(
            "SEM-E001",
            f"operation '{name}' has no reference semantics; supported: {', '.join(supported_operations())}",
            Location.of_span(span),
        )
    return fn


def supported_operations() -> list[str]:
    """Every operation the reference semantics defines, sorted."""
    _load()
    return sorted(set(_KERNELS) | BINDING_OPERATIONS)
