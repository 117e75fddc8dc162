"""Writes the round-4 networks of tests/networks/test_round4.py (issue 38). Needs torch, which is no
dependency of the project: run it by hand (`pip install torch` in a scratch venv, or the CPU wheel
into the worktree's venv); the suite only reads the .onnx files it wrote, which are committed.

Every network is small (a few thousand weights), random weights from a fixed seed, exported with
torch's TorchScript exporter (dynamo = False, opset 17 unless said), weights inside the file:

    encoder_causal.onnx      nn.TransformerEncoderLayer with the causal mask torch writes
                             (generate_square_subsequent_mask: 0 on and below the diagonal, -inf above)
    encoder_padding.onnx     the same layer with src_key_padding_mask (the last two keys padded: -inf)
    nanogpt_block.onnx       a nanoGPT block: LayerNorm, causal self-attention with masked_fill(-inf) on a
                             registered tril buffer (Equal -> Where on the data path), GELU MLP
    sdpa_causal.onnx         F.scaled_dot_product_attention(is_causal=True) (Trilu, Equal, Where of constants)
    swin_block.onnx          a Swin block: window attention with a relative position bias, cyclic shift
                             (torch.roll), the shifted-window mask (-100), padding with computed pads
    lstm_bidirectional.onnx  nn.LSTM(5, 6, num_layers = 2, bidirectional = True), sequence 4
    gru_bidirectional.onnx   nn.GRU(5, 6, num_layers = 2, bidirectional = True), sequence 4
    unet_small.onnx          a two-level U-Net: Conv/BatchNorm/ReLU, MaxPool, ConvTranspose and bilinear
                             upsampling (align_corners = False), skip concatenations
    audio_net.onnx           a 1-D audio net: Conv1d, BatchNorm1d, ReLU, MaxPool1d, mean over time, Linear
    instancenorm.onnx        Conv + InstanceNorm2d (refused: InstanceNormalization has no converter)
    groupnorm.onnx           Conv + GroupNorm (torch writes Reshape, InstanceNormalization, Shape, Reshape, Mul,
                             Add: the refusal names InstanceNormalization only, not the folded Shape)

Alongside each network that exports (not the two refused ones) the framework's own inputs and outputs (the trained model's reference,
docs/trained-reference.md): <name>.reference.npz holding `inputs/<name>` and `outputs/<name>`
arrays and the framework and its version.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent
D_MODEL, HEADS, SEQ = 32, 2, 8


class Encoder(nn.Module):
    def __init__(self, mask: str) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=HEADS, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)
        self.mask = mask
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(SEQ))
        padding = torch.zeros(1, SEQ, dtype=torch.bool)
        padding[0, -2:] = True
        self.register_buffer("padding", padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mask == "causal":
            return self.layer(x, src_mask=self.causal, is_causal=True)
        return self.layer(x, src_key_padding_mask=self.padding)


class NanoGPTBlock(nn.Module):
    """Karpathy's nanoGPT Block (LayerNorm, CausalSelfAttention with the masked_fill path, MLP with GELU)."""

    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.c_attn = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.c_proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.c_fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.mlp_proj = nn.Linear(4 * D_MODEL, D_MODEL)
        self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(D_MODEL, dim=2)
        k = k.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        q = q.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Sdpa(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(b, t, c)


class SwinBlock(nn.Module):
    """A Swin Transformer block (Liu et al. 2021) written from the paper: windows of 4 x 4 tokens on a
    6 x 6 map (padded to 8 x 8 with pads computed from the shape), cyclic shift by 2, relative position
    bias, the shifted-window mask (-100 between regions), MLP with GELU."""

    def __init__(self, dim: int = 16, heads: int = 2, window: int = 4, shift: int = 2) -> None:
        super().__init__()
        self.dim, self.heads, self.window, self.shift = dim, heads, window, shift
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("index", (relative[:, :, 0] * (2 * window - 1) + relative[:, :, 1]).flatten())

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        win, shift = self.window, self.shift
        pad_r = (win - w % win) % win
        pad_b = (win - h % win) % win
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, ph, pw, _ = x.shape
        x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
        nh, nw = ph // win, pw // win
        x = x.view(b, nh, win, nw, win, c).permute(0, 1, 3, 2, 4, 5).reshape(b * nh * nw, win * win, c)
        qkv = self.qkv(x).reshape(x.size(0), win * win, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.index].view(win * win, win * win, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        region = x.new_zeros((ph, pw))
        count = 0
        for hs in (slice(0, -win), slice(-win, -shift), slice(-shift, None)):
            for ws in (slice(0, -win), slice(-win, -shift), slice(-shift, None)):
                region[hs, ws] = count
                count += 1
        region = region.view(nh, win, nw, win).permute(0, 2, 1, 3).reshape(nh * nw, win * win)
        mask = region.unsqueeze(1) - region.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, float(-100.0)).masked_fill(mask == 0, float(0.0))
        attn = attn.view(b, nh * nw, self.heads, win * win, win * win) + mask.unsqueeze(1).unsqueeze(0)
        attn = F.softmax(attn.view(-1, self.heads, win * win, win * win), dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(x.size(0), win * win, c)
        y = self.proj(y)
        y = y.view(b, nh, nw, win, win, c).permute(0, 1, 3, 2, 4, 5).reshape(b, ph, pw, c)
        y = torch.roll(y, shifts=(shift, shift), dims=(1, 2))
        return y[:, :h, :w, :].contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Recurrent(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(5, 6, num_layers=2, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2, self.mid = block(1, 4), block(4, 8), block(8, 16)
        self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec2 = block(16, 8)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = block(12, 4)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class AudioNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(1, 8, 9, stride=2, padding=4), nn.BatchNorm1d(8), nn.ReLU(),
                                      nn.MaxPool1d(2), nn.Conv1d(8, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
                                      nn.MaxPool1d(2))
        self.classifier = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).mean(dim=2))


class InstanceNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.norm = nn.InstanceNorm2d(4, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


class GroupNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.norm = nn.GroupNorm(2, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x))


NETWORKS = {
    "encoder_causal": (lambda: Encoder("causal"), [1, SEQ, D_MODEL], 17),
    "encoder_padding": (lambda: Encoder("padding"), [1, SEQ, D_MODEL], 17),
    "nanogpt_block": (NanoGPTBlock, [1, SEQ, D_MODEL], 17),
    "sdpa_causal": (Sdpa, [1, SEQ, D_MODEL], 17),
    "swin_block": (SwinBlock, [1, 6, 6, 16], 17),
    "lstm_bidirectional": (lambda: Recurrent("LSTM"), [4, 1, 5], 14),
    "gru_bidirectional": (lambda: Recurrent("GRU"), [4, 1, 5], 14),
    "unet_small": (UNet, [1, 1, 16, 16], 17),
    "audio_net": (AudioNet, [1, 1, 128], 17),
    "instancenorm": (InstanceNorm, [1, 2, 8, 8], 17),
    "groupnorm": (GroupNorm, [1, 2, 8, 8], 17),
}


REFUSED = {"instancenorm", "groupnorm"}


def _randomize_statistics(model: nn.Module, generator: torch.Generator) -> None:
    """Give batch norms non-trivial running statistics (a trained network's are not 0 and 1)."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.running_mean.copy_(torch.randn(module.running_mean.shape, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(module.running_var.shape, generator=generator) + 0.5)


def write(name: str, make, shape: list[int], opset: int) -> None:
    torch.manual_seed(38)
    model = make().eval()
    _randomize_statistics(model, torch.Generator().manual_seed(38))
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    torch.onnx.export(model, (x,), str(HERE / f"{name}.onnx"), opset_version=opset, dynamo=False,
                      input_names=["x"], output_names=["y"], external_data=False)
    if name in REFUSED:
        return
    vectors = torch.rand(4, *shape, generator=torch.Generator().manual_seed(2)) * 2 - 1
    with torch.no_grad():
        outputs = torch.stack([model(v) for v in vectors])
    np.savez(HERE / f"{name}.reference.npz", **{"inputs/x": vectors.numpy().astype(np.float32),
                                               "outputs/y": outputs.numpy().astype(np.float32),
                                               "framework": np.array("torch"),
                                               "framework_version": np.array(torch.__version__)})


if __name__ == "__main__":
    wanted = sys.argv[1:] or sorted(NETWORKS)
    for name in wanted:
        write(name, *NETWORKS[name])
    sys.stdout.write("written: " + ", ".join(wanted) + "\n")
