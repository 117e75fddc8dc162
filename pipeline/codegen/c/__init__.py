"""The C99 generator for `cpu` items: one source file per item, a small runtime for sync
and instrumentation, and a test harness (docs/codegen.md).

Entry point: `pipeline.codegen.c.generate.generate_deployment`.
"""
