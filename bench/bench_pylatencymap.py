"""latencymap against the real PyLatencyMap 1.3, side by side on one stream (issue 12, items 1 and 2).

Run: .venv/bin/python bench/bench_pylatencymap.py [--records 5000] [--repeat 3] [--cache DIR]

PyLatencyMap 1.3 is installed once with `pip install --no-deps --target DIR pylatencymap==1.3.0` into a
cache folder (default ~/.cache/latencymap-bench/pylatencymap-1.3.0; never into this venv: its console
script is also called `latencymap`), and run as `python -m LatencyMap` with PYTHONPATH=DIR. That install
is the only download; the stream is generated here: cumulative PyLatencyMap records, fixed seed, 25
microsecond bpf buckets (1 µs to 16.8 s), one label, one record per second.

1. Frame-by-frame replay: both tools draw every frame, without delay, into a file (PyLatencyMap:
   `python -m LatencyMap --screen_delay=0 < stream`; ours: `python -m latencymap --plain --screen-delay 0
   < stream`). Wall time, frames/s (frames counted in the output files), ratio (target: ours >= 20x).
2. Time to a full report: `python -m latencymap report stream` against PyLatencyMap's whole run on the
   same stream (it has no report; its end-to-end time is its replay). Target: >= 100x.
3. Where our time goes: interpreter start (`--version`), reading the stream (`--plain --once`), frames.

Both run as fresh processes of this interpreter, taking turns; the best of --repeat runs counts. CPU seconds
(user + sys) are printed too: on a busy machine they move less than wall time. No assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_common import compile_package, machine

PYLATENCYMAP = "pylatencymap==1.3.0"
BUCKETS = 25  # bucket values 2**0 .. 2**24 µs
START_US = 1_795_000_000_000_000


def default_cache() -> Path:
    """~/.cache/latencymap-bench/pylatencymap-1.3.0 (XDG_CACHE_HOME respected)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "latencymap-bench" / "pylatencymap-1.3.0"


def install_pylatencymap(target: Path) -> Path:
    """PyLatencyMap 1.3 in `target` (installed there by pip the first time); exits with a message if pip cannot."""
    if (target / "LatencyMap.py").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    print(f"installing {PYLATENCYMAP} into {target} (once) ...", flush=True)
    try:
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                              "--target", str(staging), PYLATENCYMAP], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pip = subprocess.CompletedProcess([], 1, "", str(exc))
    if pip.returncode != 0 or not (staging / "LatencyMap.py").is_file():
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n  ".join((pip.stderr or pip.stdout or "no output").strip().splitlines()[-5:])
        sys.exit(f"bench_pylatencymap: cannot install {PYLATENCYMAP} from the package index (is it reachable?).\n"
                 f"  pip said:\n  {tail}\n"
                 f"  Install it by hand with `pip install --no-deps --target {target} {PYLATENCYMAP}`, "
                 "or pass --cache DIR where it is installed.")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return target


def make_stream(path: Path, records: int, seed: int = 2026) -> str:
    """A deterministic cumulative PyLatencyMap stream of `records` records; returns its sha256 (12 hex)."""
    rng = np.random.default_rng(seed)
    exps = np.arange(BUCKETS)
    # Events/s per bucket: page-cache hits around 16-64 µs, device reads around 0.25-1 ms, a thin tail to 100 ms.
    shape = (900 * np.exp(-0.5 * ((exps - 5) / 1.0) ** 2) + 600 * np.exp(-0.5 * ((exps - 9) / 1.2) ** 2)
             + 20 * np.exp(-0.5 * ((exps - 14) / 1.5) ** 2))
    t = np.arange(records)
    load = 1.0 + 0.5 * np.sin(t / 300.0) + (rng.random(records) < 0.02) * rng.uniform(1, 4, records)
    counts = rng.poisson(load[:, None] * shape[None, :])
    totals = np.cumsum(counts, axis=0)
    stamps = START_US + t * 1_000_000 + rng.integers(-2000, 2000, records)
    stamps[0] = START_US
    with path.open("w") as fh:
        for k in range(records):
            stamp = int(stamps[k])
            date = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp // 1_000_000))
            fh.write(f"<begin record>\ntimestamp, microsec, {stamp}, {date}\nlatencyunit, microsec\n"
                     "label, bench-io\ndatasource, bpf\n")
            fh.write("".join(f"{1 << b}, {c}\n" for b, c in enumerate(totals[k].tolist())))
            fh.write("<end record>\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


@dataclass
class Command:
    """One command to time: what it runs, what it reads on stdin, where its output goes, what marks a frame."""

    argv: list[str]
    stdin: Path | None
    out: Path
    env: dict[str, str]
    marker: bytes
    wall: float = float("inf")
    cpu: float = float("inf")
    out_bytes: int = 0
    frames: int = 0
    output: bytes = b""

    def run_once(self) -> None:
        """Run it with stdout to `out`; keep the best wall and CPU (user + sys) times, count frames."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with self.out.open("wb") as fh, (self.stdin.open("rb") if self.stdin else open(os.devnull, "rb")) as src:
            t0 = time.perf_counter()
            proc = subprocess.run(self.argv, stdin=src, stdout=fh, stderr=subprocess.PIPE, env=self.env, check=False)
            wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.exit(f"bench_pylatencymap: {' '.join(self.argv)} failed ({proc.returncode}):\n"
                     f"{proc.stderr.decode(errors='replace')[-1500:]}")
        self.wall = min(self.wall, wall)
        self.cpu = min(self.cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        self.output = self.out.read_bytes()
        self.out_bytes, self.frames = len(self.output), self.output.count(self.marker)


def main() -> None:
    """Install PyLatencyMap if needed, make the stream, time both tools, print figures and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=5000, help="records in the stream (frames drawn: about as many)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each command; the best counts")
    p.add_argument("--cache", type=Path, default=None, help="where PyLatencyMap 1.3 is (or is to be) installed")
    args = p.parse_args()
    print(f"machine: {machine()}")
    print(compile_package())
    plm_dir = install_pylatencymap(args.cache or default_cache())
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PYTHONPATH")}
    env["TERM"] = "xterm-256color"  # both draw colour escapes
    plm_env = {**env, "PYTHONPATH": str(plm_dir)}
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="latencymap-bench-plm-") as tmp_name:
        tmp = Path(tmp_name)
        stream = tmp / "stream.txt"
        digest = make_stream(stream, args.records)
        print(f"stream: {args.records} records x {BUCKETS} buckets, {stream.stat().st_size / 1e6:.1f} MB, "
              f"sha256 {digest}; PyLatencyMap from {plm_dir}")

        plm = Command([py, "-m", "LatencyMap", "--screen_delay=0"], stream, tmp / "plm.out", plm_env, b"Sample num: ")
        ours = Command([py, "-m", "latencymap", "--plain", "--screen-delay", "0"], stream, tmp / "ours.out", env,
                       b"\nColumns: ")
        report = Command([py, "-m", "latencymap", "report", str(stream)], None, tmp / "report.out", env,
                         b"intervals over")
        once = Command([py, "-m", "latencymap", "--plain", "--once"], stream, tmp / "once.out", env, b"\nColumns: ")
        start = Command([py, "-m", "latencymap", "--version"], None, tmp / "version.out", env, b"version")
        for _ in range(args.repeat):  # each command once per round: a change in load hits them all alike
            for command in (plm, ours, report, once, start):
                command.run_once()
    expected = f"{args.records - 1} intervals".encode()
    if report.frames != 1 or expected not in report.output:
        sys.exit(f"bench_pylatencymap: the report does not cover the stream:\n{report.output.decode()[:800]}")
    for name, run, want in (("PyLatencyMap", plm, args.records), ("latencymap", ours, args.records - 1)):
        if run.frames < want:
            print(f"WARNING: {name} drew {run.frames} frames, expected {want}")

    print(f"frame replay, PyLatencyMap 1.3: {plm.wall:.2f} s wall ({plm.cpu:.2f} s CPU), {plm.frames} frames, "
          f"{plm.frames / plm.wall:,.0f} frames/s, {plm.out_bytes / 1e6:.1f} MB written")
    print(f"frame replay, latencymap --plain: {ours.wall:.2f} s wall ({ours.cpu:.2f} s CPU), {ours.frames} frames, "
          f"{ours.frames / ours.wall:,.0f} frames/s, {ours.out_bytes / 1e6:.1f} MB written")
    print(f"frame replay: ratio {plm.wall / ours.wall:.1f}x faster (CPU: {plm.cpu / ours.cpu:.1f}x; "
          f"frames/s: {(ours.frames / ours.wall) / (plm.frames / plm.wall):.1f}x); target >= 20x")
    print(f"full report: latencymap report {report.wall:.3f} s wall ({report.cpu:.3f} s CPU) vs PyLatencyMap "
          f"end to end {plm.wall:.2f} s: ratio {plm.wall / report.wall:.1f}x (CPU: {plm.cpu / report.cpu:.1f}x); "
          "target >= 100x")
    frames = max(1, ours.frames)
    print(f"where ours goes (CPU): interpreter start and imports {start.cpu:.2f} s (`--version`), reading the "
          f"stream {max(0.0, once.cpu - start.cpu):.2f} s (`--plain --once` minus that), drawing the frames "
          f"{max(0.0, ours.cpu - once.cpu):.2f} s ({max(0.0, ours.cpu - once.cpu) / frames * 1e6:.0f} µs/frame)")
    print(f"ceilings: with frames drawn for free the replay ratio would be {plm.wall / once.wall:.1f}x "
          f"(`--plain --once`: {once.wall:.3f} s wall); no command of ours beats PyLatencyMap by more than "
          f"{plm.wall / start.wall:.0f}x on this stream (`--version`: {start.wall:.3f} s wall)")


if __name__ == "__main__":
    main()
