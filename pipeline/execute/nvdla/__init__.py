"""Emulation of NVDLA loadables (emulator.py; run.py runs a deployment's loadable for the execute step): verdicts
from it are `emulated`, never `pass`."""
