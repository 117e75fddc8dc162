"""Scale of the Petri verification: a generated 10,000-operation network split over 8 items.

    python benchmarks/petri_bench.py [--operations 10000] [--items 8] [--seed 7]
                                     [--explore-states 200000] [--explore-seconds 20]
    python benchmarks/petri_bench.py --scale 10000 100000     time ratio and peak memory
    python benchmarks/petri_bench.py --operations 100000 --step   the whole petri step (JSON)

With --scale, each size runs in its own process (peak memory is per run) without the
explicit-state exploration, and a table gives the Petri time, the ratio to the first size
against the ratio of sizes (linear: equal), and the peak resident memory of the process.
The Petri time is given as wall time and as the process's CPU time (time.process_time):
on a shared machine the CPU ratio is the one that says how the work grows.

The files are generated in a separate process, as a project tree (models/bench/deploy.yaml,
artifacts/bench/export/graph.nnef, artifacts/bench/split/bench8/), so that the peak memory
is that of the verification alone. What is measured is the product's own code, in its
order: the split's verification is `pipeline.petri.step.verify_split` (the item files, the
schedule, the trace and the exported original handed to `verify` as loaders; `verify`
drops each description's graphs once translated), its Petri time the phases of `verify`
without the loading (the NNEF check, timed apart). `front end MB` is the peak resident
memory once the 8 item files are read, `Petri MB` what the rest adds to it. `--step` runs
the whole `run_petri_step` (the original and the split verified, PNML and DOT written) and
gives its time and the peak of its process; `--scale` prints both, one process each.

Generates, as the splitter would write them, the original description, one graphitem file
per item (a send_var right after each value another item reads, a get_var right before
its first use there), plan.json and schedule.json (each item's program order), and a
trace of one execution (per-item clocks). Then verifies it all through the product's
step, printing the time of each phase: NNEF checking of the files, the
translations (with the paper encoding's counts), the analyses of the split net (reachability, deadlock, leftover tokens,
fire-once, valid paths), equivalence with the original, the schedules, the trace replay,
the pipelined net (depth 2). Next to it, an explicit-state exploration of the same split
net, with a state and time limit: all interleavings, and stubborn sets (which reduce a
conflict-free net to a single interleaving, but still pay for every state's successor
computation); both are expected to give up, and we print how far they got.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "petri"))

from petri_helpers import network_text, random_network, split_network  # noqa: E402
from petri_oracle import explore  # noqa: E402

from pipeline.petri import step  # noqa: E402
from pipeline.petri.load import load_graphs  # noqa: E402
from pipeline.petri.schedule import Schedule, default_schedule  # noqa: E402
from pipeline.petri.trace import Event, Trace  # noqa: E402
from pipeline.petri.translate import translate  # noqa: E402
from pipeline.split.plan import TRACE_FILE as SPLIT_TRACE_FILE  # noqa: E402


def run_order(schedule: Schedule) -> list[tuple[str, int]]:
    """One interleaving of the items' steps (gets after their sends), as a run would produce."""
    order: list[tuple[str, int]] = []
    pc = {item: 0 for item in schedule.items}
    sent: set[tuple[str, str]] = set()
    progress = True
    while progress:
        progress = False
        for item, steps in schedule.items.items():
            while pc[item] < len(steps):
                step = steps[pc[item]]
                if step.kind == "get" and (step.source, step.var) not in sent:
                    break
                if step.kind == "send":
                    sent.add((item, step.var))
                order.append((item, pc[item]))
                pc[item] += 1
                progress = True
    assert all(pc[i] == len(s) for i, s in schedule.items.items()), "generated schedule deadlocks"
    return order


MODEL, DEPLOYMENT = "bench", "bench8"


def split_dir(root: Path) -> Path:
    return root / "artifacts" / MODEL / "split" / DEPLOYMENT


def export_file(root: Path) -> Path:
    return root / "artifacts" / MODEL / "export" / "graph.nnef"


def deploy_text(items: list[str]) -> str:
    """A models/bench/deploy.yaml naming the one deployment (the Petri step reads its deployment names)."""
    listed = ", ".join(f"{{name: {item}, target: cpu}}" for item in items)
    return (f"schema_version: 1\nmodel: {MODEL}\ninputs:\n  x0:\n    shape: [1, 4]\n"
            "    distribution: {kind: uniform, low: 0.0, high: 1.0}\n"
            "validation:\n  vectors: 1\n  seed: 1\n  tolerance: {max_abs_error: 1.0e-5, max_rel_error: null}\n"
            f"deployments:\n  {DEPLOYMENT}:\n    items: [{listed}]\n    default_item: {items[0]}\n    sync: event\n"
            "    pipeline_depth: 2\nmet:\n  runs: 1\n  budget_us: 5000\n")


def write_split(root: Path, operations: int, n_items: int, seed: int) -> dict[str, int]:
    """A project tree as export and split leave it: the original, the items, plan, schedule, trace, deploy.yaml."""
    rng = random.Random(seed)
    network = random_network(rng, operations, n_inputs=2, n_params=16, fan=8)
    folder = split_dir(root)
    folder.mkdir(parents=True)
    export_file(root).parent.mkdir(parents=True)
    export_file(root).write_text(network_text(network, "big"))
    items = [f"ITEM{i}" for i in range(n_items)]
    (root / "models" / MODEL).mkdir(parents=True)
    (root / "models" / MODEL / "deploy.yaml").write_text(deploy_text(items))
    # contiguous blocks of 40 instructions per item, round robin: locality, with long edges crossing items
    allocation = {r: items[(i // 40) % n_items] for i, (r, _, _) in enumerate(network.ops)}
    texts = split_network(network, items, rng, allocation)
    for item, text in texts.items():
        (folder / f"{item}.nnef").write_text("version 1.0;\n\n" + text)
    item_graphs, _ = load_graphs([folder / f"{item}.nnef" for item in items])
    net = translate(item_graphs)
    schedule = default_schedule(net)
    (folder / "schedule.json").write_text(json.dumps(schedule.to_json()))
    syncs = [t for t in net.transitions if t.kind.value == "sync"]
    plan = {"schema_version": 1, "model": MODEL, "deployment": DEPLOYMENT, "sync": "event", "pipeline_depth": 2,
            "items": [{"name": item, "target": "cpu", "file": f"{item}.nnef"} for item in items],
            "sync_variables": [{"name": t.name, "writer": t.colour, "readers": list(t.dest), "value": t.inputs[0],
                                "shape": [1, 4], "dtype": "scalar", "bytes": 16} for t in syncs],
            "allocation": dict(allocation), "rewrites": [],
            "outputs": {name: allocation.get(name, items[0]) for name in network.outputs}}
    (folder / "plan.json").write_text(json.dumps(plan))
    events: dict[str, list[Event]] = {item: [] for item in items}
    clock = {item: 0 for item in items}
    for item, k in run_order(schedule):
        events[item] += [Event("start", k, 0, clock[item]), Event("end", k, 0, clock[item] + 500)]
        clock[item] += 1000
    (folder / SPLIT_TRACE_FILE).write_text(json.dumps(Trace(events).to_json()))
    return {"operations": operations, "items": n_items, "sync_variables": len(syncs),
            "steps": sum(len(s) for s in schedule.items.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--explore-states", type=int, default=200_000)
    parser.add_argument("--explore-seconds", type=float, default=20.0)
    parser.add_argument("--scale", type=int, nargs="+", metavar="OPERATIONS", help="sizes to compare (own process each)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--step", action="store_true", help="run the whole petri step (original, split, files) on the "
                        "generated project and print its time and peak memory as JSON")
    parser.add_argument("--generate", metavar="FOLDER", help=argparse.SUPPRESS)   # write the files, print their sizes
    args = parser.parse_args()
    if args.scale:
        scale(args.scale, args.items, args.seed)
        return
    if args.generate:
        print(json.dumps(write_split(Path(args.generate), args.operations, args.items, args.seed)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc = subprocess.run([sys.executable, __file__, "--operations", str(args.operations), "--items", str(args.items),
                               "--seed", str(args.seed), "--generate", tmp], capture_output=True, text=True, check=True)
        sizes = json.loads(proc.stdout.strip().splitlines()[-1])
        if args.step:
            run_step(root, args.operations)
            return
        front: dict[str, float] = {}

        def load_graphs_noting_peak(*given: Any) -> Any:
            loaded = load_graphs(*given)
            front.setdefault("mb", peak_mb())   # the item graphs (read first), the largest front-end state
            return loaded

        step.load_graphs = load_graphs_noting_peak   # instrumentation only: the step's own loaders, in its order
        t0 = time.perf_counter()
        verification, _ = step.verify_split(MODEL, DEPLOYMENT, root, partial(load_graphs, [export_file(root)], root))
        end = time.perf_counter()
        front_end_mb = front["mb"]
        wall, cpu = verification.timings, verification.cpu
        petri = sum(wall.values()) - wall["load"]
        petri_cpu = sum(cpu.values()) - cpu["load"]
        reading = end - t0 - sum(wall.values())   # plan, schedule and trace, read before `verify`
        verdicts = {k: v.verdict.value for k, v in verification.analyses.items()}
        outcomes = verification.analyses
        split_net = verification.net
        if args.json:
            print(json.dumps({"operations": args.operations, "petri_seconds": petri, "petri_cpu_seconds": petri_cpu,
                              "nnef_seconds": wall["load"] + reading, "verdicts": verdicts,
                              "peak_rss_mb": peak_mb(), "front_end_mb": front_end_mb,
                              "phases_cpu": cpu}))
            return
        names = {"translate": "translation (split + its paper counts + original)",
                 "analyse": "analyses (reach, deadlock, leftover, once, paths)",
                 "equivalence": "equivalence (split vs original)", "schedule": "schedule (event sync)",
                 "trace": "trace replay (per-item clocks)", "pipeline": "pipeline (depth 2, dataflow + schedule nets)"}
        times = {names[k]: (wall[k], cpu[k]) for k in names if k in wall}
        times["NNEF check of the 9 files, reading plan/schedule/trace (not Petri)"] = (wall["load"] + reading,
                                                                                      cpu["load"])
        counts = split_net.counts()
        print(f"network: {sizes['operations']} operations over {sizes['items']} items, {sizes['sync_variables']} sync "
              f"variables, {sizes['steps']} schedule steps")
        print(f"split net: {counts['places']} places, {counts['transitions']} transitions, {counts['arcs']} arcs, "
              f"{counts['initial_tokens']} initial tokens")
        print()
        print("| phase | seconds | CPU s |")
        print("|---|---|---|")
        for name, (seconds, cpu_seconds) in times.items():
            print(f"| {name} | {seconds:.3f} | {cpu_seconds:.3f} |")
        print(f"| **Petri verification total** | **{petri:.3f}** (CPU {petri_cpu:.3f}) |")
        print(f"| **total with the NNEF check** | **{end - t0:.3f}** |")
        print()
        print("verdicts:", ", ".join(f"{k} {v}" for k, v in verdicts.items()))
        paths = outcomes["valid_paths"].measured
        if "valid_paths_lower" in paths:
            print(f"valid paths: the dependency order is not series-parallel; bounds {paths['valid_paths_lower']} <= paths "
                  f"<= {paths['valid_paths_upper']}")
        else:
            print(f"valid paths: exact, {paths.get('valid_paths_digits')} digits")
        peak = peak_mb()
        print(f"peak memory: {peak:.0f} MB (whole process); front end (NNEF graphs read) {front_end_mb:.0f} MB, "
              f"Petri phases +{peak - front_end_mb:.0f} MB")
        print(f"under 5 s: {'yes' if petri < 5.0 else 'NO'} (Petri phases), {'yes' if end - t0 < 5.0 else 'no'} (with the NNEF check)")
        print()
        for reduce in (False, True):
            name = "stubborn sets" if reduce else "all interleavings"
            result = explore(split_net, reduce=reduce, max_states=args.explore_states, time_limit=args.explore_seconds)
            fate = f"gave up ({result.reason})" if result.gave_up else "finished"
            print(f"explicit-state exploration, {name}: {fate} after {result.states} states, {result.edges} edges, "
                  f"{result.seconds:.1f} s")


def run_step(root: Path, operations: int) -> None:
    """The product's whole `petri` step on the generated project: verification of the original and of
    the split, PNML and DOT files, report; its time and the peak memory of the process."""
    start, cpu = time.perf_counter(), time.process_time()
    results = step.run_petri_step(MODEL, root)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    failing = sorted(f"{r.subject} {r.check_id}" for r in results if r.verdict.value not in ("pass", "not run"))
    print(json.dumps({"operations": operations, "step_seconds": seconds, "step_cpu_seconds": cpu_seconds,
                      "peak_rss_mb": peak_mb(), "results": len(results), "failing": failing}))


def peak_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(n: int, items: int, seed: int, mode: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--operations", str(n), "--items", str(items), "--seed", str(seed),
                           mode], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scale(sizes: list[int], items: int, seed: int) -> None:
    rows, steps = [], []
    for n in sizes:
        rows.append(_child(n, items, seed, "--json"))
        steps.append(_child(n, items, seed, "--step"))
        print(f"{n} operations done", file=sys.stderr, flush=True)
    first = rows[0]
    print("| operations | Petri s | ratio | Petri CPU s | CPU ratio | size ratio | peak MB (process) | front end MB "
          "| Petri MB | NNEF check s | verdicts |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        failing = sorted(k for k, v in row["verdicts"].items() if v not in ("pass", "not run"))
        unrun = sorted(k for k, v in row["verdicts"].items() if v == "not run")
        print(f"| {row['operations']} | {row['petri_seconds']:.2f} | {row['petri_seconds'] / first['petri_seconds']:.1f} | "
              f"{row['petri_cpu_seconds']:.2f} | {row['petri_cpu_seconds'] / first['petri_cpu_seconds']:.1f} | "
              f"{row['operations'] / first['operations']:.0f} | {row['peak_rss_mb']:.0f} | {row['front_end_mb']:.0f} | "
              f"{row['peak_rss_mb'] - row['front_end_mb']:.0f} | {row['nnef_seconds']:.1f} | "
              f"{'fail: ' + ', '.join(failing) if failing else 'no failure'}{'; not run: ' + ', '.join(unrun) if unrun else ''} |")
    print()
    print("| operations | " + " | ".join(f"{k} CPU s" for k in rows[0]["phases_cpu"]) + " |")
    print("|---|" + "---|" * len(rows[0]["phases_cpu"]))
    for row in rows:
        print(f"| {row['operations']} | " + " | ".join(f"{v:.2f}" for v in row["phases_cpu"].values()) + " |")
    print()
    print("The whole petri step (original and split verified, PNML/DOT written; NNEF checks included):")
    print()
    print("| operations | step s | step CPU s | peak MB (process) | failing checks |")
    print("|---|---|---|---|---|")
    for row in steps:
        print(f"| {row['operations']} | {row['step_seconds']:.1f} | {row['step_cpu_seconds']:.1f} | "
              f"{row['peak_rss_mb']:.0f} | {', '.join(row['failing']) or 'none'} |")
    last, last_step = rows[-1], steps[-1]
    print()
    print(f"goals at {last['operations']} operations: Petri under 10 s: {'yes' if last['petri_seconds'] < 10 else 'NO'} "
          f"({last['petri_seconds']:.1f} s wall, {last['petri_cpu_seconds']:.1f} s CPU); under 1 GB: "
          f"{'yes' if last['peak_rss_mb'] < 1024 else 'NO'} for the split's verification ({last['peak_rss_mb']:.0f} MB), "
          f"{'yes' if last_step['peak_rss_mb'] < 1024 else 'NO'} for the whole step ({last_step['peak_rss_mb']:.0f} MB); "
          f"CPU ratio <= 12: {'yes' if last['petri_cpu_seconds'] / first['petri_cpu_seconds'] <= 12 else 'NO'}")


if __name__ == "__main__":
    main()
