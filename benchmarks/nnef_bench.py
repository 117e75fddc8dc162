"""Speed and memory of `python -m pipeline check` on large flat NNEF graphs.

    python benchmarks/nnef_bench.py [--sizes 5000 50000] [--repeat 3] [--lark] [--no-khronos]

Generates flat graphs of N operations (conv / relu / add / max_pool chains, every
attribute explicit, as the exporter writes them; N=5000 gives 6,252 operations with the
variables) and measures, each run in a fresh process:
  check:   pipeline.nnef.checker.check_paths (parse + full static semantics + shapes: the
           front end's whole work on the file), wall and CPU time, peak resident memory.
           The goal: under 1 s (wall) at 5,000 operations (docs/nnef.md, "Speed and memory").
  command: `python -m pipeline check --no-tensors FILE`, the whole command (interpreter
           start, the CLI and the check command's module, the grammar, the standard
           library's catalogue, the check, the report), wall time.
  lark:    (--lark) the same check with the fast parser switched off, so the lark parser
           reads the text: why flatparse.py exists.
  khronos: nnef.load_graph + nnef.infer_shapes (the official C++ parser), a peer for scale;
           there is no goal against it any more.
Best of `repeat` runs (lark: one run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 1.0  # the check at 5,000 operations

CHECK = textwrap.dedent("""
    import json, resource, sys, time
    from unittest import mock
    from pipeline.nnef.catalogue import standard_catalogue
    from pipeline.nnef.checker import check_paths
    if sys.argv[2] == "lark":
        mock.patch("pipeline.nnef.parser.parse_flat", return_value=None).start()
    standard_catalogue()
    start, cpu = time.perf_counter(), time.process_time()
    report = check_paths([sys.argv[1]], tensors=False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert report.ok, report.findings[:3]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "rss_mib": rss,
                      "operations": sum(len(g.operations) for g in report.graphs)}))
""")

KHRONOS = textwrap.dedent("""
    import json, resource, sys, time
    import nnef
    start, cpu = time.perf_counter(), time.process_time()
    graph = nnef.load_graph(sys.argv[1], load_variables=False)
    nnef.infer_shapes(graph)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "rss_mib": rss, "operations": len(graph.operations)}))
""")


def generate(operations: int) -> str:
    """A flat graph of `operations` instructions (plus the variables they need)."""
    lines = ["version 1.0;", "", "graph Big( input ) -> ( output )", "{",
             "    input = external<scalar>(shape = [1, 8, 16, 16]);"]
    previous = "input"
    for index in range(operations):
        kind = index % 4
        if kind == 0:
            lines.append(f"    w{index} = variable<scalar>(shape = [8, 8, 3, 3], label = 'w{index}');")
            lines.append(f"    c{index} = conv({previous}, w{index}, 0.0, border = 'constant', padding = [(1, 1), (1, 1)], "
                         "stride = [1, 1], dilation = [1, 1], groups = 1);")
            previous = f"c{index}"
        elif kind == 1:
            lines.append(f"    r{index} = relu({previous});")
            previous = f"r{index}"
        elif kind == 2:
            lines.append(f"    a{index} = add({previous}, {previous});")
            previous = f"a{index}"
        else:
            lines.append(f"    m{index} = max_pool({previous}, size = [1, 1, 3, 3], border = 'ignore', "
                         "padding = [(0, 0), (0, 0), (1, 1), (1, 1)], stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]);")
            previous = f"m{index}"
    lines += [f"    output = copy({previous});", "}"]
    return "\n".join(lines) + "\n"


def run_script(script: str, *args: str) -> dict:
    """Run `script` with `args` in a fresh interpreter and return what it measured."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def run_command(path: Path) -> float:
    """Wall time of the whole `python -m pipeline check` on `path` (it must find no error)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "check", "--no-tensors", str(path)], capture_output=True,
                   check=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lark", action="store_true", help="also time the check with the lark parser alone")
    parser.add_argument("--no-khronos", action="store_true", help="skip the Khronos parser")
    args = parser.parse_args()
    print(f"{'operations':>10} {'file MiB':>8} {'check s':>8} {'cpu s':>6} {'goal':>5} {'MiB':>5} {'command s':>9} "
          f"{'lark s':>7} {'khronos s':>9} {'ratio':>6} {'khronos MiB':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"graph{size}.nnef"
            path.write_text(generate(size))
            command = min(run_command(path) for _ in range(args.repeat))
            ours = [run_script(CHECK, str(path), "flat") for _ in range(args.repeat)]
            lark = run_script(CHECK, str(path), "lark")["seconds"] if args.lark else None
            theirs = [] if args.no_khronos else [run_script(KHRONOS, str(path)) for _ in range(args.repeat)]
            best = min(r["seconds"] for r in ours)
            goal = ("met" if best < GOAL_SECONDS else "NOT") if size <= 5000 else "-"
            khronos = min(r["seconds"] for r in theirs) if theirs else None
            print(f"{ours[0]['operations']:>10} {path.stat().st_size / 2**20:>8.1f} {best:>8.2f} "
                  f"{min(r['cpu_seconds'] for r in ours):>6.2f} {goal:>5} {max(r['rss_mib'] for r in ours):>5.0f} "
                  f"{command:>9.2f} " + (f"{lark:>7.2f} " if lark is not None else f"{'-':>7} ")
                  + (f"{khronos:>9.2f} {best / khronos:>6.2f} {max(r['rss_mib'] for r in theirs):>11.0f}"
                     if khronos is not None else f"{'-':>9} {'-':>6} {'-':>11}"))
    print(f"\ncheck: check_paths (wall, CPU, peak RSS); goal: wall under {GOAL_SECONDS:.0f} s at 5,000 operations;")
    print("command: the whole `python -m pipeline check --no-tensors`, wall; lark: the check with the fast parser off;")
    print("khronos: load_graph + infer_shapes, ratio = check / khronos (a peer for scale, no goal); best of --repeat.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
