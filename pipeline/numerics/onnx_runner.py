"""Running the ONNX model itself: the independent side of export validation and comparison.

Shared by the export step (validation) and the compare step (executed code against
onnxruntime), so it lives below both.

onnxruntime (one thread, so its results do not depend on the machine's core count) is
the reference for what the ONNX model computes. Where onnxruntime is missing or refuses
the model (an opset newer than it knows), onnx's own reference evaluator
(`onnx.reference.ReferenceEvaluator`) runs it instead, except for BatchNormalization
at opsets 9 to 13, which onnx.reference computes with batch statistics (onnx pull
request 8442; models/resnet8/README.md): such a model needs onnxruntime.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import onnx

from pipeline.diagnostics import PipelineError

log = logging.getLogger(__name__)


@dataclass
class ReferenceRunner:
    """Runs the ONNX model: `run({input: array}) -> {output: array}`."""

    runtime: str
    version: str
    settings: dict[str, Any]
    run: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]] = field(repr=False)

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "version": self.version, "settings": self.settings}


def _onnxruntime(model: onnx.ModelProto) -> ReferenceRunner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, dict(inputs))))

    settings = {"provider": "CPUExecutionProvider", "intra_op_num_threads": 1, "inter_op_num_threads": 1,
                "graph_optimization_level": "default (ORT_ENABLE_ALL)"}
    return ReferenceRunner("onnxruntime", ort.__version__, settings, run)


def _batchnorm_9_to_13(model: onnx.ModelProto) -> bool:
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    return 9 <= opset <= 13 and any(n.op_type == "BatchNormalization" for n in model.graph.node)


def _onnx_reference(model: onnx.ModelProto) -> ReferenceRunner:
    from onnx.reference import ReferenceEvaluator

    if _batchnorm_9_to_13(model):
        raise PipelineError("EXPORT-E012", "onnxruntime cannot run this model and onnx.reference computes "
                            "BatchNormalization at opsets 9-13 with batch statistics (onnx PR 8442): "
                            "no trustworthy reference; install onnxruntime")
    evaluator = ReferenceEvaluator(model)
    names = list(evaluator.output_names)

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, evaluator.run(None, dict(inputs))))

    return ReferenceRunner("onnx.reference", onnx.__version__, {}, run)


def reference_runner(model: onnx.ModelProto) -> ReferenceRunner:
    """onnxruntime if it is installed and runs the model, else onnx.reference (see above).

    onnxruntime can accept a model and still refuse it at the first run (e.g. a Conv with
    dilations and SAME padding): the first run decides, once, and the runner's `runtime`
    says which one produced the numbers.
    """
    try:
        primary = _onnxruntime(model)
    except ImportError:
        log.warning("onnxruntime is not installed; validating against onnx.reference")
        return _fallback(model)
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        log.warning("onnxruntime cannot load the model (%s); validating against onnx.reference", exc)
        return _fallback(model)
    state: dict[str, Any] = {"decided": False}
    runner = ReferenceRunner(primary.runtime, primary.version, primary.settings, primary.run)

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if state["decided"]:
            return state["run"](inputs)
        state["decided"] = True
        try:
            result = primary.run(inputs)
            state["run"] = primary.run
            return result
        except Exception as exc:  # noqa: BLE001
            log.warning("onnxruntime cannot run the model (%s); validating against onnx.reference", exc)
            fallback = _fallback(model)
            runner.runtime, runner.version, runner.settings = fallback.runtime, fallback.version, fallback.settings
            state["run"] = fallback.run
            return fallback.run(inputs)

    runner.run = run
    return runner


def _fallback(model: onnx.ModelProto) -> ReferenceRunner:
    try:
        return _onnx_reference(model)
    except PipelineError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise PipelineError("EXPORT-E012", f"neither onnxruntime nor onnx.reference can run the model: {exc}") from None
