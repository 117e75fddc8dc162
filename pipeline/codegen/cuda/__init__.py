"""The CUDA generator of GPU items (docs/codegen-cuda.md)."""
