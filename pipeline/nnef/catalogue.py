"""The operation catalogue: every fragment an NNEF description may invoke.

- the 119 standard fragments of NNEF 1.0.5 (73 primitive, 46 compound), read from
  stdlib.nnef with our own parser: typed signature, defaults, compound definition;
- the multi-item extension (docs/design.md, "The multi-item extension"): `variablesync`, `send_var`,
  `get_var`, and the `graphitem` declaration form;
- the operations the pipeline adds to NNEF 1.0.5 (OPERATION_EXTENSIONS: `erf`), primitive
  fragments whose declaration an exported document carries (KHR_enable_fragment_definitions),
  so that the file stays standard NNEF for any parser; known here with or without it;
- per operation: the spec section it belongs to, whether the reference semantics
  executes it, and the allowed values of its enumerated string attributes.

Shape rules live in pipeline.nnef.shapes, keyed by the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Mapping

from pipeline.nnef import ast
from pipeline.nnef import types as T

STDLIB_PATH = Path(__file__).with_name("stdlib.nnef")

# Operations the reference semantics (pipeline.semantics) defines and code is generated for.
EXECUTABLE: frozenset[str] = frozenset({
    "external", "variable", "constant", "conv", "deconv", "box", "max_pool", "avg_pool",
    "argmax_pool", "linear", "matmul", "relu", "sigmoid", "tanh", "softmax", "elu",
    "leaky_relu", "prelu", "add", "sub", "mul", "div", "min", "max", "clamp", "exp", "log",
    "concat", "split", "reshape", "transpose", "squeeze", "unsqueeze", "pad", "slice",
    "batch_normalization", "local_response_normalization", "sum_reduce", "mean_reduce",
    "max_reduce", "copy", "nearest_upsample", "multilinear_upsample",
    "sqrt", "pow", "erf", "select",
})

# Operations beyond NNEF 1.0.5: name -> the primitive fragment declaration an exported document
# writes before its graph (docs/semantics/index.md lists their definitions).
OPERATION_EXTENSIONS: dict[str, str] = {
    "erf": "fragment erf( x: tensor<scalar> ) -> ( y: tensor<scalar> );",
}
FRAGMENT_DEFINITIONS = "KHR_enable_fragment_definitions"

BORDER_MODES = ("constant", "ignore", "replicate", "reflect", "reflect-even")
RESAMPLE_METHODS = ("symmetric", "asymmetric", "aligned")

# (operation, parameter) -> allowed string values. Operations not listed here that have
# a `border` parameter use BORDER_MODES.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("pad", "border"): ("constant", "replicate", "reflect", "reflect-even"),
    ("multilinear_upsample", "method"): RESAMPLE_METHODS,
    ("multilinear_upsample", "border"): ("constant", "replicate", "reflect", "reflect-even"),
    ("roi_resample", "method"): RESAMPLE_METHODS,
    ("avg_roi_align", "resize_method"): RESAMPLE_METHODS,
    ("max_roi_align", "resize_method"): RESAMPLE_METHODS,
}

# The extension's declaration form, counted with its three fragments in the catalogue.
EXTENSION_CONSTRUCTS = ("graphitem", "variablesync", "send_var", "get_var")


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class ParamSig:
    name: str
    type: ast.TypeSpec
    default: Any = NO_DEFAULT
    span: ast.Span = ast.NO_SPAN

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @cached_property
    def is_attribute(self) -> bool:
        return T.is_attribute(self.type)

    @cached_property
    def is_item(self) -> bool:
        """send_var's `dest` and get_var's `source`: item identifiers, not values."""
        return self.type == T.GRAPHITEM or (isinstance(self.type, ast.ArrayType) and self.type.item == T.GRAPHITEM)


@dataclass(frozen=True)
class ResultSig:
    name: str
    type: ast.TypeSpec


@dataclass(frozen=True)
class FragmentSig:
    """A fragment's typed signature; `body` is the compound definition (None if primitive)."""

    name: str
    generic: bool
    generic_default: str | None
    params: tuple[ParamSig, ...]
    results: tuple[ResultSig, ...]
    body: tuple[ast.Assignment, ...] | None
    origin: str  # "standard", "extension" or "user"
    section: str = ""
    span: ast.Span = ast.NO_SPAN

    @property
    def is_primitive(self) -> bool:
        return self.body is None

    @property
    def executable(self) -> bool:
        return self.name in EXECUTABLE

    @cached_property
    def params_by_name(self) -> dict[str, ParamSig]:
        return {p.name: p for p in self.params}

    @cached_property
    def tensor_params(self) -> tuple[ParamSig, ...]:
        return tuple(p for p in self.params if not p.is_attribute)

    @cached_property
    def attribute_params(self) -> tuple[ParamSig, ...]:
        return tuple(p for p in self.params if p.is_attribute)

    def param(self, name: str) -> ParamSig | None:
        return self.params_by_name.get(name)

    def enum_values(self, param: str) -> tuple[str, ...] | None:
        if (self.name, param) in ENUMS:
            return ENUMS[(self.name, param)]
        if param == "border" and self.origin == "standard":
            return BORDER_MODES
        return None


def literal_value(expr: ast.Expr) -> Any:
    """The value of a literal expression (parameter defaults): literals, '-' numbers, arrays, tuples."""
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Unary) and expr.op == "-":
        return -literal_value(expr.operand)
    if isinstance(expr, ast.ArrayExpr):
        return [literal_value(e) for e in expr.items]
    if isinstance(expr, ast.TupleExpr):
        return tuple(literal_value(e) for e in expr.items)
    raise ValueError(f"not a literal expression: {expr!r}")


def signature_of(fragment: ast.Fragment, origin: str, section: str = "") -> FragmentSig:
    """The signature of a parsed fragment (defaults evaluated)."""
    params = tuple(
        ParamSig(
            p.name.value,
            p.type,
            literal_value(p.default) if p.default is not None else NO_DEFAULT,
            p.span,
        )
        for p in fragment.params
    )
    results = tuple(ResultSig(r.name.value, r.type) for r in fragment.results)
    return FragmentSig(
        fragment.name.value, fragment.generic, fragment.generic_default, params, results,
        fragment.body, origin, section, fragment.span,
    )


def _sections(text: str) -> dict[str, str]:
    """Fragment name -> the `# ---- section` heading it appears under in stdlib.nnef."""
    result: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        heading = re.match(r"# ---- (.+)", line)
        if heading:
            section = heading.group(1).strip()
            continue
        declared = re.match(r"fragment ([A-Za-z_][A-Za-z0-9_]*)", line)
        if declared:
            result[declared.group(1)] = section
    return result


def _extension_fragments() -> dict[str, FragmentSig]:
    """The three fragments of the multi-item extension (docs/design.md, "The multi-item extension")."""
    generic_tensor = T.tensor("?")
    section = "multi-item extension"
    return {
        "variablesync": FragmentSig(
            "variablesync", True, "scalar",
            (ParamSig("shape", T.array(T.INTEGER)),),
            (ResultSig("output", generic_tensor),), None, "extension", section,
        ),
        "send_var": FragmentSig(
            "send_var", True, "scalar",
            (ParamSig("dest", T.array(T.GRAPHITEM)), ParamSig("data", generic_tensor)),
            (ResultSig("output", generic_tensor),), None, "extension", section,
        ),
        "get_var": FragmentSig(
            "get_var", True, "scalar",
            (ParamSig("source", T.GRAPHITEM), ParamSig("data", generic_tensor)),
            (ResultSig("output", generic_tensor),), None, "extension", section,
        ),
    }


@lru_cache(maxsize=1)
def operation_extension_declarations() -> tuple[ast.Fragment, ...]:
    """The parsed declarations of OPERATION_EXTENSIONS, in name order (what an export prints)."""
    from pipeline.nnef.parser import parse_text  # the parser imports nothing from here

    text = (f"version 1.0;\nextension {FRAGMENT_DEFINITIONS};\n"
            + "\n".join(OPERATION_EXTENSIONS[name] for name in sorted(OPERATION_EXTENSIONS)) + "\n")
    parsed = parse_text(text, "<operation extensions>")
    if parsed.document is None:
        raise RuntimeError(f"an operation extension does not parse: {parsed.findings[0].message}")
    return tuple(parsed.document.fragments)


def operation_extension_fragments() -> dict[str, FragmentSig]:
    """The signatures of OPERATION_EXTENSIONS (origin 'extension')."""
    return {f.name.value: signature_of(f, "extension", "operation extensions")
            for f in operation_extension_declarations()}


@lru_cache(maxsize=1)
def standard_catalogue() -> Mapping[str, FragmentSig]:
    """Every standard fragment and the extension's fragments, by name."""
    from pipeline.nnef.parser import parse_text  # the parser imports nothing from here

    text = STDLIB_PATH.read_text(encoding="utf-8")
    parsed = parse_text(text, str(STDLIB_PATH))
    if parsed.document is None:
        raise RuntimeError(f"stdlib.nnef does not parse: {parsed.findings[0].message}")
    sections = _sections(text)
    catalogue = {
        f.name.value: signature_of(f, "standard", sections.get(f.name.value, ""))
        for f in parsed.document.fragments
    }
    catalogue.update(_extension_fragments())
    catalogue.update(operation_extension_fragments())
    return catalogue
