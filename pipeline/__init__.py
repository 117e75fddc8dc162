"""Certification pipeline for trained neural networks.

ONNX -> NNEF (formal description) -> split per item -> Petri-net verification ->
code per item -> on-target execution -> numeric and timing comparison -> evidence.
See docs/design.md for the method and the map of the code.
"""

__version__ = "0.1.0"
