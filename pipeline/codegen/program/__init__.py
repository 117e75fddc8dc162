"""The deployment program, above its targets (docs/codegen.md "Layout").

generate.py writes a deployment's C program (the item table, the sync variables, the runtime, the
harness, build.json, each item's trace); items.py says which emitter writes an item of each target
into it (c/item.py, cuda/linked.py, nvdla/proxy.py). The emitters know nothing of the program but
the item contract they return (pipeline/codegen/shared/contract.py).
"""
