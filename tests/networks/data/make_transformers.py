"""Writes the transformer encoder layers of tests/networks/test_transformer.py (needs torch, which is no
dependency of the project: run it by hand, `pip install torch` in a scratch venv; the suite only reads
the .onnx files it wrote, which are committed).

torch.nn.TransformerEncoderLayer(d_model = 32, nhead = 2, dim_feedforward = 64, dropout = 0, batch_first),
random weights from seed 29, input [1, 8, 32], exported with the TorchScript exporter (dynamo = False):

    transformer_relu_opset17.onnx   ReLU feed-forward, opset 17: LayerNormalization nodes
    transformer_gelu_opset14.onnx   exact GELU, opset 14: layer norm as ReduceMean/Sub/Pow/Sqrt/Div, GELU as Erf
    transformer_gelu_tanh_opset20.onnx  tanh GELU, opset 20: Gelu(approximate = 'tanh'), LayerNormalization

Attention is written by torch as MatMul + Add (input projection), Reshape/Transpose, three Gathers of
q, k, v, a scale computed from Shape by Slice/Cast/Sqrt/Div (folded at export), batched MatMul, Softmax
on the last axis.
"""

import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


class Layer(torch.nn.Module):
    def __init__(self, activation: str) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, dropout=0.0,
                                                      batch_first=True, activation=activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x, src_mask=None, is_causal=False)


def write(name: str, activation, opset: int) -> None:
    torch.manual_seed(29)
    model = Layer(activation).eval()
    torch.onnx.export(model, (torch.randn(1, 8, 32),), str(HERE / name), opset_version=opset, dynamo=False,
                      input_names=["x"], output_names=["y"])


if __name__ == "__main__":
    write("transformer_relu_opset17.onnx", "relu", 17)
    write("transformer_gelu_opset14.onnx", "gelu", 14)
    write("transformer_gelu_tanh_opset20.onnx", lambda x: torch.nn.functional.gelu(x, approximate="tanh"), 20)
    sys.stdout.write("written\n")
