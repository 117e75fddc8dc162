"""NVDLA loadables (nv_full, FP16): unit mapping, the loadable writer and the independent validator.

mapping.py (legalized operations -> units, tasks, memory), firmware.py (packed firmware
descriptors, interface 0.12.x), writer.py (flatbuffer of loadable.fbs, debug table),
artifacts.py (files), reader.py + validate.py (the validator: never imports the writer),
generate.py (a deployment's loadables, debug tables and code traces for the codegen step),
accelerators.py (codegen.accelerators from the written files, through the validator).
proxy.py: an nvdla item of a mixed deployment's C program (its C proxy, an item emitter beside
the C and CUDA ones).
docs/codegen-nvdla.md is the user documentation.
"""
