"""Issue 41: how tight the error bounds are, and what they cost, on the shipped models and the held-out networks.

    .venv/bin/python benchmarks/bound_bench.py [--models lenet5 resnet18 ...] [--vectors 3]

Per network, on its first `vectors` seeded vectors: the exact result enclosed (pipeline.numerics.enclosure),
our reference semantics (the NNEF export, pipeline.semantics) and onnxruntime measured against it, and the
bounds of both (pipeline.numerics.sensitivity): the bound over the measured error (the largest of each over
vectors and elements; the discrimination rule asks for at most 100), the worst-case (deterministic) figure over
the measured error, the decisions the estimated spread reaches. Cost, CPU seconds of this process: the
enclosure and the bound per vector, against the peer measured in the same run, the validation's other work:
the reference interpreter and onnxruntime on 100 vectors and the float64 yardstick on 20 (what the export
validation did before issue 41 besides its one-vector bound). The export validation runs the enclosure on 20
vectors and the bounds on 3 (pipeline.export.bounds): the last column is that cost over the peer's.
Prints a table; writes nothing outside a scratch folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.held_out import held_out  # noqa: E402
from pipeline.export import convert  # noqa: E402
from pipeline.export.bounds import BOUND_VECTORS, ENCLOSURE_VECTORS, WIDTH_SHARE  # noqa: E402
from pipeline.export.exporter import publish  # noqa: E402
from pipeline.nnef.checker import check_paths  # noqa: E402
from pipeline.numerics.arithmetic import ONNXRUNTIME, REFERENCE  # noqa: E402
from pipeline.numerics.doubled import exact as exact_ball  # noqa: E402
from pipeline.numerics.enclosure import Enclosure, EnclosureUnavailable  # noqa: E402
from pipeline.numerics.onnx_runner import reference_runner  # noqa: E402
from pipeline.numerics.sensitivity import Sensitivity  # noqa: E402
from pipeline.numerics.yardstick import Yardstick  # noqa: E402
from pipeline.project.deploy import load_deploy  # noqa: E402
from pipeline.project.layout import model_names  # noqa: E402
from pipeline.semantics import interpret_batch, load_variables  # noqa: E402

PEER_VECTORS, YARDSTICK_VECTORS = 100, 20


def _networks() -> dict[str, tuple[onnx.ModelProto, dict[str, tuple[tuple[int, ...], float, float]]]]:
    found = {}
    for name in model_names(ROOT):
        spec = load_deploy(ROOT / "models" / name / "deploy.yaml")
        found[name] = (onnx.load(str(ROOT / "models" / name / "model.onnx")),
                       {k: (tuple(s.shape), s.distribution.low, s.distribution.high) for k, s in spec.inputs.items()})
    found.update(held_out())
    return found


def _vectors(inputs: dict, count: int, seed: int = 1234) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{k: rng.uniform(lo, hi, shape).astype(np.float32) for k, (shape, lo, hi) in sorted(inputs.items())}
            for _ in range(count)]


def _cpu(fn) -> tuple[float, object]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def bench(name: str, model: onnx.ModelProto, inputs: dict, count: int) -> dict[str, object]:
    result = convert(model)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "export"
        publish(result.files, folder)
        graph = check_paths([folder], profile="standard").graphs[0]
        variables = load_variables(graph, folder)
    to_nnef_in, to_nnef_out = result.inputs, result.outputs
    runner = reference_runner(model)
    vectors = _vectors(inputs, PEER_VECTORS)
    t_interp, ours = _cpu(lambda: [r for s in range(0, PEER_VECTORS, 10) for r in interpret_batch(
        graph, [{to_nnef_in[k]: v for k, v in vec.items()} for vec in vectors[s:s + 10]], variables)])
    t_ort, theirs = _cpu(lambda: [runner.run(vec) for vec in vectors])
    yard = Yardstick(model)
    t_yard, _ = _cpu(lambda: [yard.run(vec) for vec in vectors[:YARDSTICK_VECTORS]])
    enclosure = Enclosure(model)
    sensitivity = Sensitivity(model, [REFERENCE, ONNXRUNTIME])
    t_enc = t_bound = 0.0
    worst = {"ref_bound": 0.0, "ref_meas": 0.0, "ort_bound": 0.0, "ort_meas": 0.0, "ort_det": 0.0, "over": 0,
             "near": 0, "decisions": 0, "width": 0.0, "magnitude": 0.0, "fallback": ""}
    for v in range(count):
        start = time.process_time()
        try:
            balls = enclosure.run(vectors[v])
        except EnclosureUnavailable as error:  # too deep for double-word balls: the yardstick measures (marked *)
            balls, worst["fallback"] = None, str(error)
        t_enc += time.process_time() - start
        if balls is not None:
            for out, ball in balls.items():
                width = float(ball.width().max())
                floor = 2.0 ** -24 * float(np.abs(ball.mid()).max())
                distance = max(float(ball.distance(np.asarray(values, np.float64).reshape(ball.shape))[1].max())
                               for values in (ours[v][to_nnef_out[out]], theirs[v][out]))
                if width > WIDTH_SHARE * max(distance, floor):  # as the export validation: the yardstick measures
                    balls, worst["fallback"] = None, f"the enclosure of {out} is {width:.2g} wide"
                    worst["width"] = max(worst["width"], width)
                    break
        if balls is None:
            balls = {out: exact_ball(np.asarray(value, np.float64)) for out, value in yard.run(vectors[v]).items()}
        dt, (bounds, reports) = _cpu(lambda: sensitivity.run(vectors[v]))
        t_bound += dt
        report = reports[ONNXRUNTIME.name]
        worst["near"] += sum(report.undecided.values())
        worst["decisions"] += report.decisions
        for out, ball in balls.items():
            worst["width"] = max(worst["width"], float(ball.width().max()))
            worst["magnitude"] = max(worst["magnitude"], float(np.abs(ball.mid()).max()))
            for side, values, arithmetic in (("ref", ours[v][to_nnef_out[out]], REFERENCE),
                                             ("ort", theirs[v][out], ONNXRUNTIME)):
                lower, upper = ball.distance(np.asarray(values).reshape(ball.shape))
                b = bounds[arithmetic.name][out]
                worst[f"{side}_bound"] = max(worst[f"{side}_bound"], float(b.probabilistic.max()))
                worst[f"{side}_meas"] = max(worst[f"{side}_meas"], float(upper.max()))
                worst["over"] += int((lower > b.probabilistic).sum())
                if side == "ort":
                    worst["ort_det"] = max(worst["ort_det"], float(b.deterministic.max()))
    floor = 2.0 ** -24 * worst["magnitude"]
    peer = t_interp + t_ort + t_yard
    return {"name": name + ("*" if worst["fallback"] else ""), "ref": worst["ref_bound"] / max(worst["ref_meas"], floor),
            "ort": worst["ort_bound"] / max(worst["ort_meas"], floor),
            "det": worst["ort_det"] / max(worst["ort_meas"], floor), "over": worst["over"],
            "near": worst["near"] / count, "decisions": worst["decisions"] / count, "width": worst["width"],
            "ort_meas": worst["ort_meas"], "enc": t_enc / count, "bound": t_bound / count, "peer": peer,
            "cost": (ENCLOSURE_VECTORS * t_enc / count + BOUND_VECTORS * t_bound / count) / peer}


def main(argv: list[str] | None = None) -> int:
    networks = _networks()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(networks))
    parser.add_argument("--vectors", type=int, default=3)
    args = parser.parse_args(argv)
    header = (f"{'network':<16} {'ref b/m':>8} {'ort b/m':>8} {'worst/m':>8} {'beyond':>6} {'near':>6} "
              f"{'width':>8} {'ort err':>9} {'encl s':>7} {'bound s':>7} {'peer s':>7} {'cost/peer':>9}")
    print(header)
    print("-" * len(header))
    for name in args.models:
        model, inputs = networks[name]
        r = bench(name, model, inputs, args.vectors)
        print(f"{r['name']:<16} {r['ref']:>8.1f} {r['ort']:>8.1f} {r['det']:>8.0f} {r['over']:>6} {r['near']:>6.0f} "
              f"{r['width']:>8.1e} {r['ort_meas']:>9.2e} {r['enc']:>7.3f} {r['bound']:>7.3f} {r['peer']:>7.2f} "
              f"{r['cost']:>8.1f}x", flush=True)
    print("* the enclosure is not finite there, or wider than WIDTH_SHARE of the distance it measures (double-word "
          "balls widen by about sqrt(fan-in) per layer): measured against the float64 yardstick (an estimate), as the "
          "export validation does; width: the widest enclosure seen (0: not finite)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
