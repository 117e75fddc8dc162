"""Drivers of the external compilers the steps share, below every step.

The codegen step compiles the generated code once as a check (no diagnostic under the
qualified flags) and the execute step builds the executables it runs; both must use the same
flags, so the driver lives here rather than in either step (`cc.py`: the C compiler).
"""
