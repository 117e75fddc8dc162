"""Code generation for the items of a split deployment (C for `cpu` items).

The generators are transformations, not trusted: what they preserve is established by
validators that live elsewhere and work from the generated files and the executables only
(pipeline/codegen/checks.py for the static properties of the code and its trace,
pipeline/compare for bit-exactness against the reference semantics, trace conformance on
the Petri net and the measured execution time). docs/codegen.md describes the code.
"""
