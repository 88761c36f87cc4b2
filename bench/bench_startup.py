"""Start-up and report time against the Python floor, `python -c "import numpy"`, measured in the same run.

Run: .venv/bin/python bench/bench_startup.py [--records 5000] [--repeat 9] [--base DIR]
Prints, for `--version`, `--help`, `report` (text and JSON) on a 5,000-record stream (26 buckets, datasource
line: the shape of issue 23) and `report --format openmetrics`, the best wall time and CPU time (user + sys of
the child) over the repeats, and the ratio to the floor. The repeats are rounds: each runs every command once,
in turn, so that load on a shared machine weighs on all of them alike. Each command runs as a fresh process, as a
user runs it, with OpenBLAS on one thread (as the console script sets it). Last, the bare minimum any report on
this stack costs (BARE_MINIMUM: import click, NumPy and orjson, parse every number of the file in one call, write
two matrices of the report's shape), which bounds how near the floor a report can come; with --base, the JSON
report of another checkout in the same rounds. No assertions.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import compile_package, machine
from bench_core import make_stream

#: The least any report on this stack can do: start the CLI's framework, read the file, parse every number in one
#: NumPy call (no checks), and write two matrices of the report's shape with orjson (no analysis, no layout).
BARE_MINIMUM = """
import sys
import click, numpy as np, orjson
data = open(sys.argv[1], "rb").read()
digits = bytes(c if 48 <= c <= 57 else 32 for c in range(256))
numbers = np.fromstring(data.translate(digits), dtype=np.int64, sep=" ")
rows = data.count(b"\\n") // (data.count(b"<begin record>") or 1) - 6
cells = np.zeros((data.count(b"<begin record>") - 1, rows)) + numbers[: rows].mean()
sys.stdout.buffer.write(orjson.dumps({"frequency": cells, "intensity": cells / 3}, option=orjson.OPT_SERIALIZE_NUMPY))
"""


def run_once(argv: list[str], checkout: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys of the child) of one run of `argv` (in another `checkout`: its code)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **({"PYTHONPATH": checkout} if checkout else {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=checkout)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def timed_rounds(runs: list[tuple[list[str], str | None]], repeat: int) -> list[tuple[float, float]]:
    """Best wall and best CPU seconds of each of `runs` over `repeat` rounds. Each round runs every command once,
    in turn, so a change of load on a shared machine weighs on the floor and the commands alike."""
    walls: list[list[float]] = [[] for _ in runs]
    cpus: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for k, (argv, checkout) in enumerate(runs):
            wall, cpu = run_once(argv, checkout)
            walls[k].append(wall)
            cpus[k].append(cpu)
    return [(min(w), min(c)) for w, c in zip(walls, cpus, strict=True)]


def main() -> None:
    """Run every command; print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--base", default=None, metavar="DIR",
                    help="also time `report --format json` run from DIR, another checkout (a git worktree of an "
                         "earlier commit, say)")
    ns = ap.parse_args()
    print(machine())
    print(compile_package())
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "stream.txt"
        make_stream(stream, ns.records + 1)
        json_report = ["report", "--format", "json", str(stream)]
        cases = [
            ("--version", ["--version"]),
            ("--help", ["--help"]),
            (f"report (text), {ns.records} records", ["report", str(stream)]),
            (f"report --format json, {ns.records} records", json_report),
            (f"report --format openmetrics, {ns.records} records", ["report", "--format", "openmetrics", str(stream)]),
        ]
        runs: list[tuple[str, list[str], str | None]] = [("floor", [py, "-c", "import numpy"], None)]
        runs += [(label, [py, "-m", "latencymap", *args], None) for label, args in cases]
        runs.append(("bare minimum (read, parse, write; see source)", [py, "-c", BARE_MINIMUM, str(stream)], None))
        if ns.base:  # another checkout's code (e.g. a git worktree of an earlier commit), in the same rounds
            print(compile_package(Path(ns.base)))
            runs.append((f"report --format json, {ns.base}", [py, "-m", "latencymap", *json_report],
                         str(Path(ns.base).resolve())))
        times = timed_rounds([(argv, checkout) for _, argv, checkout in runs], ns.repeat)
        floor = times[0]
        print(f"floor: python -c 'import numpy': {floor[0] * 1e3:.0f} ms wall, {floor[1] * 1e3:.0f} ms CPU "
              f"(best of {ns.repeat} rounds, each running every command once in turn)")
        for (label, _, _), (wall, cpu) in zip(runs[1:], times[1:], strict=True):
            print(f"{label:45s} {wall * 1e3:6.0f} ms wall ({wall / floor[0]:.2f}x the floor), "
                  f"{cpu * 1e3:6.0f} ms CPU ({cpu / floor[1]:.2f}x)")


if __name__ == "__main__":
    main()
