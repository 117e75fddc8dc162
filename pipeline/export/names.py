"""NNEF identifiers from ONNX tensor names: sanitised, unique, deterministic.

An NNEF variable keeps the name of the ONNX tensor it represents, so that deployment
specs (allocations name ONNX tensors), provenance and generated code all speak of the
same `conv1`. ONNX names are free text (`/conv1/Conv_output_0`, `X`, `1`); NNEF
identifiers are `[a-zA-Z_][a-zA-Z0-9_]*` minus keywords. The rule:

1. lower-case; every run of characters outside [a-z0-9_] becomes one '_'; leading and
   trailing '_' are stripped (an empty result becomes 't');
2. a name starting with a digit gets the prefix 't_';
3. an NNEF keyword gets the suffix '_';
4. collisions are resolved in *graph order* (graph inputs, then each node's initializer
   inputs at their first use and its outputs, node by node): the first holder keeps the
   name, later ones get '_1', '_2', ... (the first suffix not already taken).

Names the exporter invents (intermediate results of a node that becomes several NNEF
operations) are `<output>_<what>` and resolved the same way, after every ONNX name has
been reserved, so an invented name never takes an ONNX tensor's name.
"""

from __future__ import annotations

import re

# Reserved words of the NNEF grammar (NNEF 1.0.5, section 3.1) and of the multi-item
# extension; operation names are not reserved (`relu = relu(x);` is valid NNEF).
KEYWORDS: frozenset[str] = frozenset(
    "version extension fragment graph graphitem tensor integer scalar logical string true false "
    "for in if else yield length_of shape_of range_of".split()
)

_INVALID = re.compile(r"[^a-z0-9_]+")


def sanitize(name: str) -> str:
    """The NNEF identifier for ONNX name `name`, before collision resolution."""
    text = _INVALID.sub("_", name.lower()).strip("_")
    if not text:
        text = "t"
    if text[0].isdigit():
        text = "t_" + text
    if text in KEYWORDS:
        text += "_"
    return text


class NameTable:
    """Assigns each ONNX name one NNEF identifier, and invents fresh ones, without collisions."""

    def __init__(self) -> None:
        self._by_onnx: dict[str, str] = {}
        self._taken: set[str] = set()

    def _unique(self, base: str) -> str:
        if base not in self._taken:
            candidate = base
        else:
            suffix = 1
            while f"{base}_{suffix}" in self._taken:
                suffix += 1
            candidate = f"{base}_{suffix}"
        self._taken.add(candidate)
        return candidate

    def reserve(self, onnx_name: str) -> str:
        """The identifier of `onnx_name`, assigned on the first call (graph order matters)."""
        if onnx_name not in self._by_onnx:
            self._by_onnx[onnx_name] = self._unique(sanitize(onnx_name))
        return self._by_onnx[onnx_name]

    def get(self, onnx_name: str) -> str:
        return self._by_onnx[onnx_name]

    def fresh(self, hint: str) -> str:
        """A new identifier derived from `hint` (already an identifier or not), never taken before."""
        return self._unique(sanitize(hint))

    def mapping(self) -> dict[str, str]:
        """ONNX name -> NNEF identifier, for every reserved name."""
        return dict(self._by_onnx)
