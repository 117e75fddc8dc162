"""The operation catalogue against the Khronos parser's standard library (reference data)."""

from __future__ import annotations

from tests.nnef.nnef_corpus import OPERATION_CASES
from pipeline.nnef import ast
from pipeline.nnef.catalogue import OPERATION_EXTENSIONS, EXECUTABLE, EXTENSION_CONSTRUCTS, NO_DEFAULT, standard_catalogue
from pipeline.nnef.parser import parse_text
from pipeline.nnef.shapes import SHAPE_RULES
from tests.nnef.test_nnef_parser_printer import khronos_stdlib_text


def test_counts() -> None:
    standard = [s for s in standard_catalogue().values() if s.origin == "standard"]
    assert len(standard) == 119
    assert sum(1 for s in standard if s.is_primitive) == 73
    assert sum(1 for s in standard if not s.is_primitive) == 46


def test_signatures_equal_the_khronos_stdlib() -> None:
    khronos = parse_text("version 1.0;\n" + khronos_stdlib_text(), "khronos").document
    theirs = {f.name.value: f for f in khronos.fragments}
    ours = {name: s for name, s in standard_catalogue().items() if s.origin == "standard"}
    assert set(theirs) == set(ours)
    for name, fragment in theirs.items():
        sig = ours[name]
        assert [p.name for p in sig.params] == [p.name.value for p in fragment.params], name
        assert [p.type for p in sig.params] == [p.type for p in fragment.params], name
        assert [r.type for r in sig.results] == [r.type for r in fragment.results], name
        assert (sig.generic, sig.generic_default) == (fragment.generic, fragment.generic_default), name
        assert sig.body == fragment.body, name


def test_defaults_are_evaluated() -> None:
    conv = standard_catalogue()["conv"]
    assert conv.param("border").default == "constant"
    assert conv.param("padding").default == []
    assert conv.param("groups").default == 1
    assert conv.param("input").default is NO_DEFAULT
    assert standard_catalogue()["reshape"].param("axis_count").default == -1
    assert standard_catalogue()["selu"].param("alpha").default == float(__import__("numpy").float32(1.67326319))


def test_every_operation_has_a_shape_rule_and_a_corpus_case() -> None:
    for name, sig in standard_catalogue().items():
        assert name in SHAPE_RULES, name
        if sig.origin == "standard":
            assert name in OPERATION_CASES, name


def test_executable_operations_are_standard() -> None:
    catalogue = standard_catalogue()
    assert EXECUTABLE <= set(catalogue)
    # nearest_upsample, multilinear_upsample added for Resize (issue 15); sqrt, pow, erf (issue 29)
    assert len(EXECUTABLE) == 47
    assert {name for name in EXECUTABLE if catalogue[name].origin != "standard"} == set(OPERATION_EXTENSIONS)


def test_extension_fragments() -> None:
    catalogue = standard_catalogue()
    for name in ("variablesync", "send_var", "get_var"):
        assert catalogue[name].origin == "extension"
    assert catalogue["send_var"].param("dest").type == ast.ArrayType(ast.PrimitiveType("graphitem"))
    assert len(EXTENSION_CONSTRUCTS) == 4


def test_enumerations() -> None:
    catalogue = standard_catalogue()
    assert "ignore" in catalogue["max_pool"].enum_values("border")
    assert "ignore" not in catalogue["pad"].enum_values("border")
    assert catalogue["multilinear_upsample"].enum_values("method") == ("symmetric", "asymmetric", "aligned")
