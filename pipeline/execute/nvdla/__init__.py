"""Emulation of NVDLA loadables (emulator.py): verdicts from it are `emulated`, never `pass`."""
