"""Emulation of NVDLA loadables (emulator.py; run.py runs a deployment's loadable for the execute step): verdicts
from it are `emulated`, never `pass`.

The emulator is judged against NVIDIA's hardware-model dumps here too: golden.py runs one golden case
through the whole NVDLA path (export, legalization, mapping, loadable, validator, emulator) and command.py is
`python -m pipeline nvdla golden DIR...`. docs/codegen-nvdla.md maps every NVDLA module of the pipeline."""
