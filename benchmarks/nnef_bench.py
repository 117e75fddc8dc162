"""Parse + check speed and memory of our NNEF front end against the Khronos C++ parser.

    python benchmarks/nnef_bench.py [--sizes 5000 50000] [--repeat 3]

Generates flat graphs of N operations (conv / relu / add / max_pool chains, every
attribute explicit, as the exporter writes them), then times, in fresh processes so that
peak memory is per tool:
  ours:    pipeline.nnef.checker.check_paths (parse + full static semantics + shapes)
  khronos: nnef.load_graph + nnef.infer_shapes (the official parser)
and prints a table with the best of `repeat` runs, the ratio, and the peak RSS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

OURS = textwrap.dedent("""
    import json, resource, sys, time
    from pipeline.nnef.catalogue import standard_catalogue
    from pipeline.nnef.checker import check_paths
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
    parsed = time.perf_counter()
    nnef.infer_shapes(graph)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "parse_seconds": parsed - start, "rss_mib": rss,
                      "operations": len(graph.operations)}))
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


def run(script: str, path: Path) -> dict:
    """Run `script` on `path` in a fresh interpreter and return what it measured."""
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'operations':>10} {'file MiB':>9} {'ours s':>8} {'khronos s':>10} {'ratio':>6} "
          f"{'ours MiB':>9} {'khronos MiB':>12} {'cpu ratio':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"graph{size}.nnef"
            path.write_text(generate(size))
            ours = [run(OURS, path) for _ in range(args.repeat)]
            theirs = [run(KHRONOS, path) for _ in range(args.repeat)]
            best_ours = min(r["seconds"] for r in ours)
            best_theirs = min(r["seconds"] for r in theirs)
            print(f"{size:>10} {path.stat().st_size / 2**20:>9.1f} {best_ours:>8.2f} {best_theirs:>10.2f} "
                  f"{best_ours / best_theirs:>6.2f} {max(r['rss_mib'] for r in ours):>9.0f} "
                  f"{max(r['rss_mib'] for r in theirs):>12.0f} "
                  f"{min(r['cpu_seconds'] for r in ours) / min(r['cpu_seconds'] for r in theirs):>10.2f}")
    print("\nours: parse + complete static check (check_paths); khronos: load_graph + infer_shapes;")
    print("best of --repeat runs, each in a fresh process; peak resident memory of that process;")
    print("cpu ratio: the same with CPU time (process_time), less sensitive to a shared machine's load.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
