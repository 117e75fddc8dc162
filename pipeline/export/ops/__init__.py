"""The converters, one module per ONNX operator family (see pipeline.export.converters)."""
