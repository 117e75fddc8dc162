"""Certification pipeline for trained neural networks.

ONNX -> NNEF (formal description) -> split per item -> Petri-net verification ->
code per item -> on-target execution -> numeric and timing comparison -> evidence.
See docs/ and ../shared/DESIGN.md for the method.
"""

__version__ = "0.1.0"
