"""The infrastructure parts of generated code (pipeline/codegen/shared/parts.py): the scanner and its rules."""

from __future__ import annotations

from pipeline.codegen.shared.parts import BLOB, CHANNEL, CUDA_HOST, HEADER, INTERFACE, PLAN, PREAMBLE, RUN, constructs, \
    file_parts, part_of, uncovered

ITEM = """/* nnef_item_X.c -- generated; do not edit.
 * Item X.
 */
#include "nnef_runtime.h"
#if NNEF_VL != 8
#error "8 lanes"
#endif

/* The arena of item X. */
float nnef_arena_X[64] NNEF_ALIGNED(64);
static float *const T_a = nnef_arena_X + 0;  /* a { not a brace */
static float *const T_b = nnef_arena_X + 16;

/* NNEF x.nnef:3: a = relu(b); */
static void nnef_op_a(void)
{
    const char *s = "} { ;";   /* braces in a string and a comment: } */
}

/* One inference of item X. */
void nnef_item_X_run(uint32_t epoch)
{
    (void)epoch;
    NNEF_STEP(0, 0, epoch, nnef_op_a());
}
"""


def test_constructs_read_braces_only_in_code() -> None:
    found = [(c.first, c.last, c.kind, c.names) for c in constructs(ITEM)]
    assert found[0] == (1, 3, "comment", ())
    assert (4, 7, "preprocessor", ()) in found
    assert (9, 10, "declaration", ("nnef_arena_X",)) in found       # the comment goes with what it describes
    assert (11, 11, "declaration", ("T_a",)) in found
    assert (14, 18, "function", ("nnef_op_a",)) in found
    assert (20, 25, "function", ("nnef_item_X_run",)) in found


def test_parts_name_every_line_outside_the_instruction() -> None:
    parts = file_parts("code/X/nnef_item_X.c", ITEM, covered=range(14, 19))
    named = [(p.name, p.first, p.last) for p in parts]
    assert named == [(HEADER[0], 1, 3), (PREAMBLE[0], 4, 7), (PLAN[0], 9, 12), (RUN[0], 20, 25)]
    ranges = [(p.first, p.last) for p in parts] + [(14, 18)]
    assert uncovered(ITEM, ranges) == []
    assert uncovered(ITEM, ranges[:-1]) == [(14, 18)]


def test_the_rules() -> None:
    def part(text: str, name: str = "nnef_item_X.c") -> str | None:
        named = part_of(constructs(text)[0], name)
        return named[0] if named else None

    assert part("static void nnef_dla_fail(const char *c)\n{\n}\n") == CHANNEL[0]
    assert part("[[noreturn]] static void nnef_cuda_fail(const char *w, cudaError_t e)\n{\n    exit(5);\n}\n") == CUDA_HOST[0]
    assert part('extern "C" {\nextern nnef_sync nnef_sync_s1;\nalignas(64) float nnef_arena_G[4];\n}\n') == INTERFACE[0]
    assert part("extern const float nnef_weights_X[];\n") == BLOB[0]
    assert part('__asm__(".incbin \\"X/nnef_weights_X.bin\\"");\n') == BLOB[0]
    assert part("void nnef_item_X_run(uint32_t epoch);\n", "nnef_deployment.h") == INTERFACE[0]
    # a prototype of the run function is not the run function; an unknown definition is no part at all
    assert part("void nnef_item_X_run(uint32_t epoch);\n") == INTERFACE[0]
    assert part("static int nnef_helper(void)\n{\n    return 1;\n}\n") is None
    assert part("int mystery = 3;\n") is None


def test_a_copied_file_is_one_part() -> None:
    parts = file_parts("d/nnef_runtime.c", "int a;\n\nint b;\n")
    assert [(p.first, p.last) for p in parts] == [(1, 3)] and "runtime" in parts[0].name
