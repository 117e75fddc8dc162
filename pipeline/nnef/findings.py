"""The stable finding codes of the NNEF front end, one line of documentation each.

docs/nnef-findings.md is generated from this table (tests check it is up to date), so
the codes an auditor reads and the codes the checker emits cannot drift apart.
"""

from __future__ import annotations

CODES: dict[str, str] = {
    "NNEF-E001": "syntax error (unexpected character, token or end of file)",
    "NNEF-E002": "unsupported version (only 1.0 is defined)",
    "NNEF-E003": "file cannot be read",
    "NNEF-E004": "document has no graph definition, or more than one graph",
    "NNEF-E005": "operator expression or nested invocation without extension KHR_enable_operator_expressions",
    "NNEF-E006": "fragment definition without extension KHR_enable_fragment_definitions",
    "NNEF-E007": "unknown extension",
    "NNEF-E008": "unsupported construct (shape_of is deprecated and not supported)",
    "NNEF-E009": "expression cannot be evaluated (index out of range, division by zero, recursion too deep)",
    "NNEF-E010": "undeclared identifier",
    "NNEF-E011": "identifier assigned twice (SSA violation)",
    "NNEF-E012": "unknown operation",
    "NNEF-E013": "wrong number of arguments (too many, or a parameter without default not given)",
    "NNEF-E014": "no parameter of that name",
    "NNEF-E015": "type mismatch",
    "NNEF-E016": "parameter given twice",
    "NNEF-E017": "left-hand side does not match the results of the operation",
    "NNEF-E018": "attribute given positionally, or a positional argument after a named one",
    "NNEF-E019": "invalid fragment declaration",
    "NNEF-E020": "shape mismatch or invalid attribute value for the operation's shape rule",
    "NNEF-E021": "invalid value for an enumerated attribute (e.g. border)",
    "NNEF-E022": "input beyond the front end's limits: brackets or expression nested too deep, integer literal outside 64 bits, tensor extent or element count too large (docs/nnef.md, Limits)",
    "NNEF-E030": "tensor file of a variable is missing",
    "NNEF-E031": "tensor file shape or item type differs from the declaration",
    "NNEF-E032": ("tensor file cannot be read (a symbolic link, not a regular file, bad magic, version other than "
                  "1.0, truncated, rank > 8, length mismatch); the file is named, its bytes never shown"),
    "NNEF-E033": ("variable label is not a path inside the tensor folder (`..`, empty segment, characters other than "
                  "letters, digits, `_`, `.`, `-`); judged before any file is opened, by the checker, the interpreter "
                  "and the C generator alike (`tensorfile.label_path`), with or without `--no-tensors`"),
    "NNEF-E034": "tensor file holds a NaN or an infinity that is not an attention mask ahead of a softmax, or a mask that masks a whole softmax row (the first index and value, or the row, are named; pipeline/nnef/masks.py)",
    "NNEF-E040": "graph parameter not declared by external",
    "NNEF-E041": "graph result never assigned",
    "NNEF-E042": "external declares a tensor that is not a graph parameter",
    "NNEF-E043": "graph parameter or result listed twice, or a result that is also a parameter",
    "NNEF-W050": "variable computed but never used",
    "NNEF-W051": "operation without shape rule (custom primitive fragment): shapes unknown, not executable",
    "NNEF-E060": "explicitness: a parameter relies on its default value",
    "NNEF-E061": "explicitness: empty padding, stride or dilation (automatic value)",
    "NNEF-E062": "explicitness: generic type relies on its default (write e.g. external<scalar>)",
    "NNEF-E070": "get_var with no matching send_var naming this item",
    "NNEF-E071": "sync variable written by more than one item, or sent twice",
    "NNEF-E072": "sync variable shapes or types disagree between items, or the value sent (a tensor or a literal) has another shape",
    "NNEF-E073": "send_var or get_var on a name not declared by variablesync",
    "NNEF-N074": "item referenced but not among the descriptions checked (cross-item checks not run for it)",
    "NNEF-E075": "tensor shared by several items declared differently",
    "NNEF-E076": "item id defined more than once",
    "NNEF-E077": "item sends to or reads from itself",
    "NNEF-E078": "sync variable used directly instead of through send_var/get_var",
    "NNEF-W079": "send_var names a reader that never reads the variable",
    "NNEF-E080": "graphitem parameter or result is neither declared nor a sync variable it reads or writes",
    "NNEF-E081": "variablesync, send_var or get_var in a plain graph (they belong to graphitems)",
}

# Codes reported as warnings (not errors) under the `standard` profile; under the
# `certification` profile (the default) they are errors.
PROFILE_DEPENDENT: frozenset[str] = frozenset({"NNEF-E060", "NNEF-E061", "NNEF-E062"})


def describe(code: str) -> str:
    return CODES[code]


def findings_markdown() -> str:
    """docs/nnef-findings.md, generated from CODES (tests check the file is current)."""
    lines = [
        "# NNEF checker findings",
        "",
        "Every finding of `python -m pipeline check` carries one of these stable codes. `E` codes are",
        "errors, `W` warnings, `N` notes. The explicitness codes (E060-E062) are errors in the",
        "`certification` profile (the default) and warnings in the `standard` profile.",
        "",
        "Generated from `pipeline/nnef/findings.py`.",
        "",
        "| code | meaning |",
        "|------|---------|",
    ]
    lines += [f"| {code} | {text} |" for code, text in CODES.items()]
    return "\n".join(lines) + "\n"
