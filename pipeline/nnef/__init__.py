"""The NNEF format: grammar, AST, catalogue, checker, printer, tensor files.

Public entry points:
- `parse_text` / `parse_file` (pipeline.nnef.parser): text -> AST with spans;
- `check_paths` (pipeline.nnef.checker): files -> findings + flat graphs;
- `print_document` (pipeline.nnef.printer): AST -> canonical text;
- `read_tensor` / `write_tensor` (pipeline.nnef.tensorfile): `.dat` files.
"""
