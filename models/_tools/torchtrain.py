"""Shared torch code of the training scripts (models/<m>/train.py): deterministic training
on the digits data and the legacy ONNX export. Needs torch; never imported by the
`pipeline` package or the tests (torch is not a project dependency)."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import onnx
import torch
import torch.nn as nn

import onnxtools


def make_deterministic(seed: int) -> None:
    """One thread and deterministic kernels, so a re-run on the same machine reproduces
    the same weights bit for bit."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def train(
    model: nn.Module,
    data: dict[str, np.ndarray],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    shuffle_seed: int = 1,
    log=print,
) -> list[dict]:
    """Adam on the cross-entropy of the logits, mini-batches reshuffled each epoch by a
    seeded torch.Generator, learning rate annealed per epoch by a cosine from `lr` to 0
    (torch.optim.lr_scheduler.CosineAnnealingLR, T_max = epochs). `model(x)` must return
    logits in training mode."""
    x = torch.from_numpy(data["x_train"])
    y = torch.from_numpy(data["y_train"])
    gen = torch.Generator().manual_seed(shuffle_seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x), generator=gen)
        total, t0 = 0.0, time.perf_counter()
        for i in range(0, len(x), batch_size):
            idx = perm[i : i + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        rec = {
            "epoch": epoch + 1,
            "loss": total / len(x),
            "train_acc": accuracy(model, data["x_train"], data["y_train"]),
            "test_acc": accuracy(model, data["x_test"], data["y_test"]),
            "seconds": round(time.perf_counter() - t0, 2),
        }
        history.append(rec)
        log(json.dumps(rec))
    model.eval()
    return history


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray) -> np.ndarray:
    model.eval()
    return model(torch.from_numpy(x)).numpy()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    was = model.training
    out = predict(model, x)
    model.train(was)
    return float((out.argmax(1) == y).mean())


def export_legacy(
    model: nn.Module,
    input_shape: tuple[int, ...],
    *,
    input_name: str,
    output_name: str,
    keep_batchnorm: bool = False,
    opset: int = onnxtools.OPSET,
) -> onnx.ModelProto:
    """torch.onnx.export with the legacy TorchScript exporter (dynamo=False) at `opset`,
    into memory (so no external data file can be written). keep_batchnorm=True exports in
    TrainingMode.PRESERVE with the model in eval mode, which keeps BatchNormalization nodes
    (inference form) instead of folding them into the convolutions."""
    model.eval()
    buf = io.BytesIO()
    kwargs = dict(
        dynamo=False,
        opset_version=opset,
        input_names=[input_name],
        output_names=[output_name],
        do_constant_folding=not keep_batchnorm,
        training=torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL,
    )
    torch.onnx.export(model, (torch.zeros(*input_shape),), buf, **kwargs)
    return onnx.load_from_string(buf.getvalue())


def scope_namer(model: nn.Module):
    """A node namer for onnxtools.finalize: the legacy exporter names a node
    '/<module path>/<OpType>'; when the module path is a leaf module (a Conv2d, a ReLU, ...)
    the tensor is named after the module ('/s1/conv1/Conv' -> 's1_conv1'), otherwise the op
    was written in a forward() and gets its op type appended ('/s1/Add' -> 's1_add')."""
    leaves = {name for name, m in model.named_modules() if name and not list(m.children())}

    def name(node: onnx.NodeProto) -> str:
        parts = [p for p in node.name.split("/") if p]
        scope, op = parts[:-1], parts[-1]
        # Rebuild the module path: '/s1/conv1' -> 's1.conv1'; containers repeat their own
        # name, '/seq/seq.0/conv1' -> 'seq.0.conv1'.
        path = ""
        for comp in scope:
            path = comp if (path and comp.startswith(path + ".")) or not path else f"{path}.{comp}"
        if path in leaves:
            return onnxtools.sanitise(path)
        return onnxtools.sanitise(f"{path}_{op}" if path else op)

    return name


def summary(model: nn.Module, shipped: onnx.ModelProto, path, digest: str,
            data: dict[str, np.ndarray], history: list[dict], input_name: str) -> dict:
    """Accuracy of the shipped file in onnxruntime (image by image, batch 1) and its
    agreement with torch, plus the numbers a README records."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run(x: np.ndarray) -> np.ndarray:
        return np.concatenate([sess.run(None, {input_name: xi[None]})[0] for xi in x])

    ort_test, ort_train = run(data["x_test"]), run(data["x_train"])
    torch_test = predict(model, data["x_test"])
    top2 = np.sort(ort_test, axis=1)[:, -2:]
    return {
        "torch": torch.__version__,
        "epochs": len(history),
        "final_epoch": history[-1] if history else None,
        "train_correct": int((ort_train.argmax(1) == data["y_train"]).sum()),
        "train_total": int(len(data["y_train"])),
        "test_correct": int((ort_test.argmax(1) == data["y_test"]).sum()),
        "test_total": int(len(data["y_test"])),
        "test_min_top1_top2_margin": float((top2[:, 1] - top2[:, 0]).min()),
        "max_abs_diff_torch_vs_onnxruntime": float(np.abs(torch_test - ort_test).max()),
        "x_test_sha256": onnxtools.array_sha256(data["x_test"]),
        "model_sha256": digest,
        "model_bytes": path.stat().st_size,
        "parameters": onnxtools.count_parameters(shipped),
        "ops": sorted({n.op_type for n in shipped.graph.node}),
        "nodes": len(shipped.graph.node),
    }
