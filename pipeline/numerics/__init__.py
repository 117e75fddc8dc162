"""The numerics every step judges with, below every step.

The exact real-number result of an ONNX model, enclosed (`enclosure`, on `doubled` balls,
`products`, `graph` and the operators' `rules`), the error bound of its float32 or FP16
evaluation through the network's Jacobian (`sensitivity`, with the `arithmetic` each
implementation is assumed to use; `errorbound` their public names), the float64 yardstick that
cross-checks the enclosure (`yardstick`), the one tolerance rule (`tolerance`), the
error measures (`metrics`), the rule that draws validation inputs (`vectors`) and the
onnxruntime run of the model itself (`onnx_runner`). The export validation and the compare
step both use them, so they live below both. They import no step.
"""
