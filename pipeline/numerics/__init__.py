"""The numerics every step judges with, below every step.

The float64 yardstick of what an ONNX model computes (`yardstick`), the forward error bound
of its float32 or FP16 evaluation (`errorbound`), the one tolerance rule (`tolerance`), the
error measures (`metrics`), the rule that draws validation inputs (`vectors`) and the
onnxruntime run of the model itself (`onnx_runner`). The export validation and the compare
step both use them, so they live below both. They import no step.
"""
