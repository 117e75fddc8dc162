"""Numeric (and later timing) comparison of computed outputs against a reference.

`metrics` holds the error measures every comparison in the pipeline uses (export
validation, C/CUDA/NVDLA code against the reference semantics), so that a "max ULP" in
one report means the same as in another.
"""
