"""The execute step (the execute step of the chain): build the generated code, run it on the model's input vectors, capture
traces (with and without temporal noise), execution times and instruction counts.

The step measures; it judges nothing. Its measurements are compared and judged by
pipeline/compare (numbers against the reference and onnxruntime, traces against the Petri
net, times against the budget and the accepted baseline). docs/execute.md.
"""
