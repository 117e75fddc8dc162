"""What the item emitters share, and the only way they share anything (docs/codegen.md "Layout").

The C, CUDA and NVDLA emitters (pipeline/codegen/c, cuda, nvdla) do not import each other;
what more than one of them needs lives here, owned by none of them: the line-numbered writer,
the static buffer plan, the item contract of the deployment program (ItemCode, TraceEntry, the
file and symbol names), the C spelling of numbers and names, the window geometry read from
the NNEF attributes, and the C-family spelling of the reference's transcendental programs (one table of primitive spellings),
the split deployment every part reads (deployment.py) and the CODEGEN-Ennn codes (errors.py).
Nothing here imports a target package or the deployment program (tests/test_import_directions.py).
"""
