"""Writes the NVDLA layout golden cases of this folder (issue 35): `python tests/data/nvdla-layout/generate.py`.

Each case is a triple like ONNC's (tests/data/nvdla-golden): `<id>_<Op>.onnx` (batch 1, input
IMAGE [1, 1, H, W]), `<id>_<Op>.pgm` (its 8-bit pixels) and `<id>_<Op>.dimg` (the expected output,
channel, row, column order, each value the float of an FP16). The first layer is a 3 x 3
convolution of the one image channel into many channels, so every case after it reads a
multi-channel surface whose weights are stored in the hardware's order (with one input channel
and a 3 x 3 kernel that order already differs from K x C x R x S).

The expected outputs are onnxruntime's float32 run of the model rounded to FP16: nothing of
the project's writer or emulator. Weights, biases and pixels are small integers (quarters for
the lookup-table cases), so every convolution's sums are exact in float32 and the one FP16
rounding at the end is the only rounding: any correct FP16 implementation reproduces the
convolution cases bit for bit. `<case>.tolerance.json` states the bound of a case that cannot
be exact (the SDP's lookup table approximates sigmoid and tanh).

Deterministic: fixed seeds; running it again writes the same bytes (tests/execute/test_nvdla_layout.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OPSET = 13


def _image(rng: np.random.Generator, h: int, w: int, top: int) -> np.ndarray:
    return rng.integers(0, top + 1, size=(h, w)).astype(np.uint8)


def _ints(rng: np.random.Generator, shape: tuple[int, ...], low: int, high: int, scale: float = 1.0) -> np.ndarray:
    return (rng.integers(low, high + 1, size=shape) * scale).astype(np.float32)


def _conv(helper, numpy_helper, name: str, x: str, weight: np.ndarray, bias: np.ndarray, **attrs):
    inits = [numpy_helper.from_array(weight, f"{name}_w"), numpy_helper.from_array(bias, f"{name}_b")]
    node = helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], name=name,
                            kernel_shape=list(weight.shape[2:]), **attrs)
    return node, inits


def cases() -> dict[str, dict]:
    """Case name -> {'image': (H, W) uint8, 'nodes', 'inits', 'output': (name, shape), 'why', 'tolerance'}."""
    from onnx import helper, numpy_helper

    found: dict[str, dict] = {}

    def stem(rng, h, w, channels, top=3, low=-2, high=2, scale=1.0):
        """IMAGE -> 3 x 3 convolution (pad 1) into `channels` channels: every later layer reads many channels."""
        node, inits = _conv(helper, numpy_helper, "stem", "IMAGE", _ints(rng, (channels, 1, 3, 3), low, high, scale),
                            _ints(rng, (channels,), low, high, scale), pads=[1, 1, 1, 1])
        return _image(rng, h, w, top), [node], inits

    rng = np.random.default_rng(3501)
    image, nodes, inits = stem(rng, 8, 8, 80)
    node, more = _conv(helper, numpy_helper, "y", "stem", _ints(rng, (20, 80, 3, 3), -1, 1), _ints(rng, (20,), -3, 3),
                       pads=[1, 1, 1, 1])
    found["3501_Conv"] = dict(image=image, nodes=nodes + [node], inits=inits + more, output=("y", [1, 20, 8, 8]),
                              why="3 x 3, 80 input channels (a full block of 64 and a partial one of 16), 20 kernels "
                                  "(a full group of 16 and a partial one of 4)")

    rng = np.random.default_rng(3502)
    image, nodes, inits = stem(rng, 13, 13, 70)
    node, more = _conv(helper, numpy_helper, "y", "stem", _ints(rng, (18, 70, 5, 5), -1, 1), _ints(rng, (18,), -3, 3),
                       pads=[2, 2, 2, 2], strides=[2, 2])
    found["3502_Conv"] = dict(image=image, nodes=nodes + [node], inits=inits + more, output=("y", [1, 18, 7, 7]),
                              why="5 x 5 at stride 2, 70 input channels (64 + 6), 18 kernels (16 + 2)")

    rng = np.random.default_rng(3503)
    image, nodes, inits = stem(rng, 10, 10, 130, top=2, low=-1, high=1)
    node, more = _conv(helper, numpy_helper, "y", "stem", _ints(rng, (33, 130, 3, 3), -1, 1), _ints(rng, (33,), -3, 3),
                       pads=[2, 2, 2, 2], dilations=[2, 2])
    found["3503_Conv"] = dict(image=image, nodes=nodes + [node], inits=inits + more, output=("y", [1, 33, 10, 10]),
                              why="3 x 3 dilated by 2, 130 input channels (64 + 64 + 2), 33 kernels (16 + 16 + 1)")

    rng = np.random.default_rng(3504)
    image, nodes, inits = stem(rng, 8, 8, 32)
    node, more = _conv(helper, numpy_helper, "y", "stem", _ints(rng, (48, 8, 3, 3), -2, 2), _ints(rng, (48,), -3, 3),
                       pads=[1, 1, 1, 1], group=4)
    found["3504_Conv"] = dict(image=image, nodes=nodes + [node], inits=inits + more, output=("y", [1, 48, 8, 8]),
                              why="grouped (4 groups of 8 input channels, 12 kernels each), 3 x 3")

    rng = np.random.default_rng(3505)
    image, nodes, inits = stem(rng, 9, 9, 24)
    node, more = _conv(helper, numpy_helper, "y", "stem", _ints(rng, (24, 1, 3, 3), -2, 2), _ints(rng, (24,), -3, 3),
                       pads=[1, 1, 1, 1], strides=[2, 2], group=24)
    found["3505_Conv"] = dict(image=image, nodes=nodes + [node], inits=inits + more, output=("y", [1, 24, 5, 5]),
                              why="depthwise (24 groups of one channel), 3 x 3 at stride 2")

    rng = np.random.default_rng(3506)
    image, nodes, inits = stem(rng, 4, 4, 20)
    weight = _ints(rng, (24, 320), -1, 1)
    flatten = helper.make_node("Flatten", ["stem"], ["flat"], name="flat", axis=1)
    gemm = helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="y", transB=1)
    found["3506_Gemm"] = dict(image=image, nodes=nodes + [flatten, gemm],
                              inits=inits + [numpy_helper.from_array(weight, "fc_w"),
                                             numpy_helper.from_array(_ints(rng, (24,), -3, 3), "fc_b")],
                              output=("y", [1, 24]),
                              why="fully connected after a flatten of 20 x 4 x 4, folded into one 4 x 4 convolution "
                                  "of 20 channels and 24 kernels (16 + 8)")

    for number, fn, scale, tolerance in (("3507", "Sigmoid", 0.25, 1.0e-3), ("3508", "Tanh", 0.125, 1.0e-3)):
        rng = np.random.default_rng(int(number))
        image, nodes, inits = stem(rng, 6, 6, 20, top=4, low=-3, high=3, scale=scale)
        act = helper.make_node(fn, ["stem"], ["y"], name="y")
        found[f"{number}_{fn}"] = dict(image=image, nodes=nodes + [act], inits=inits, output=("y", [1, 20, 6, 6]),
                                       why=f"{fn.lower()} on the SDP's lookup table after a 3 x 3 convolution of "
                                           "20 kernels (16 + 4)",
                                       tolerance={"max_abs_error": tolerance, "why": (
                                           "the SDP's linear-only lookup table (257 samples, rounded to FP16) "
                                           "interpolates the function: half an ulp of a sample, the linear "
                                           "interpolation's error and half an ulp of the output, measured below "
                                           "7.0e-4 over [-20, 20] (docs/codegen-nvdla.md)")})

    for number, kernel, stride, pads in (("3509", 3, 2, [1, 1, 1, 1]), ("3510", 5, 1, [2, 1, 2, 1])):
        rng = np.random.default_rng(int(number))
        image, nodes, inits = stem(rng, 9, 9, 20, scale=0.25)
        pool = helper.make_node("AveragePool", ["stem"], ["y"], name="y", kernel_shape=[kernel, kernel],
                                strides=[stride, stride], pads=pads, count_include_pad=1)
        oh = (9 + pads[0] + pads[2] - kernel) // stride + 1
        ow = (9 + pads[1] + pads[3] - kernel) // stride + 1
        found[f"{number}_AveragePool"] = dict(
            image=image, nodes=nodes + [pool], inits=inits, output=("y", [1, 20, oh, ow]),
            why=f"PDP average {kernel} x {kernel} at stride {stride} with padding {pads} (counted: the PDP divides "
                "by the whole window) over 20 channels (two 16-channel surfaces)",
            tolerance={"max_abs_error": 1.0e-2, "why": (
                "the PDP sums each window in FP17 (10-bit fraction) and multiplies by the reciprocals of its width "
                "and height, each 1/k rounded to FP17 (1/3 = 0.33325, 1/5 = 0.19995: cmod "
                "hls_wrapper/pdp_hls_wrapper.cpp, the firmware's recip_kernel_size): a relative error up to about "
                "1e-3, which no exact average shows; the values here stay below 8, so within 1e-2")})
    return found


def model_bytes(case: dict) -> bytes:
    from onnx import TensorProto, helper

    h, w = case["image"].shape
    graph = helper.make_graph(case["nodes"], "layout",
                              [helper.make_tensor_value_info("IMAGE", TensorProto.FLOAT, [1, 1, h, w])],
                              [helper.make_tensor_value_info(case["output"][0], TensorProto.FLOAT, case["output"][1])],
                              initializer=case["inits"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nvdla-layout")
    model.ir_version = 8
    return model.SerializeToString()


def expected(onnx_bytes: bytes, image: np.ndarray) -> np.ndarray:
    """onnxruntime's float32 output, rounded to FP16 (the reference nothing of the project computes)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    x = image.astype(np.float32).reshape(1, 1, *image.shape)
    (y,) = session.run(None, {"IMAGE": x})
    return np.asarray(y, dtype=np.float32).reshape(-1).astype(np.float16)


def pgm_bytes(image: np.ndarray) -> bytes:
    h, w = image.shape
    return f"P5\n{w} {h}\n255\n".encode() + image.astype(np.uint8).tobytes()


def dimg_text(values: np.ndarray) -> str:
    """As nvdla/sw's runtime prints a raw dump: each half through float, 6 significant digits, spaces."""
    return " ".join(f"{float(v):g}" for v in values) + "\n"


def files() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name, case in cases().items():
        onnx_bytes = model_bytes(case)
        out[f"{name}.onnx"] = onnx_bytes
        out[f"{name}.pgm"] = pgm_bytes(case["image"])
        out[f"{name}.dimg"] = dimg_text(expected(onnx_bytes, case["image"])).encode()
        if "tolerance" in case:
            out[f"{name}.tolerance.json"] = (json.dumps({"schema_version": 1, **case["tolerance"]}, indent=2,
                                                        sort_keys=True) + "\n").encode()
    return out


def main() -> int:
    for name, data in files().items():
        (HERE / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
