"""Start-up and report time against the Python floor, `python -c "import numpy"`, measured in the same run.

Run: .venv/bin/python bench/bench_startup.py [--records 5000] [--repeat 9]
Prints, for `--version`, `--help`, `report` (text and JSON) on a 5,000-record stream (26 buckets, datasource
line: the shape of issue 23) and `report --format openmetrics`, the best wall time and CPU time (user + sys of
the child) over the repeats, and the ratio to the floor. Each command runs as a fresh process, as a user runs
it, with OpenBLAS on one thread (as the console script sets it). Last, the bare minimum any report on this stack
costs (BARE_MINIMUM: import click, NumPy and orjson, parse every number of the file in one call, write two matrices of
the report's shape), which bounds how near the floor a report can come. No assertions.
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


def timed(argv: list[str], repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds of `argv` over `repeat` runs."""
    walls, cpus = [], []
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    """Run every command; print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=9)
    ns = ap.parse_args()
    print(machine())
    print(compile_package())
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "stream.txt"
        make_stream(stream, ns.records + 1)
        floor = timed([py, "-c", "import numpy"], ns.repeat)
        print(f"floor: python -c 'import numpy': {floor[0] * 1e3:.0f} ms wall, {floor[1] * 1e3:.0f} ms CPU")
        cases = [
            ("--version", ["--version"]),
            ("--help", ["--help"]),
            (f"report (text), {ns.records} records", ["report", str(stream)]),
            (f"report --format json, {ns.records} records", ["report", "--format", "json", str(stream)]),
            (f"report --format openmetrics, {ns.records} records", ["report", "--format", "openmetrics", str(stream)]),
        ]
        runs = [(label, [py, "-m", "latencymap", *args]) for label, args in cases]
        runs.append(("bare minimum (read, parse, write; see source)", [py, "-c", BARE_MINIMUM, str(stream)]))
        for label, argv in runs:
            wall, cpu = timed(argv, ns.repeat)
            print(f"{label:45s} {wall * 1e3:6.0f} ms wall ({wall / floor[0]:.2f}x the floor), "
                  f"{cpu * 1e3:6.0f} ms CPU ({cpu / floor[1]:.2f}x)")


if __name__ == "__main__":
    main()
