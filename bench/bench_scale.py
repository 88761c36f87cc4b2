"""History at scale (issue 23, items 1, 2 and 6): bytes per column, many streams for a day, reading recordings.

Run: .venv/bin/python bench/bench_scale.py [--streams 1000] [--columns 8640] [--day] [--report-days 1 3]
Prints
- bytes of history per column per stream (streams using 6 buckets, counts only and with exact times), against the
  1,049 bytes the dense history took (64 int64 counts + 64 float64 times + 25 bytes of column data) and the
  48-byte target;
- peak RSS of `--streams` streams x `--columns` one-second columns appended through the public input path (a flow
  of Intervals, as sources yield them, through `accumulate`), each size in a fresh process; two sizes give the
  cost per column, extrapolated to 86,400 columns (a day) and said so; `--day` runs the day too;
- recording read rate: a zstd recording (as `--record x.zst` writes it: a block per record, 64 a frame) read into an
  accumulator, in MB/s of decompressed text, against zstd decompression plus line splitting of the same file;
- peak RSS of `latencymap report` (text and `--format json`) of one stream of 6 buckets, a record a second for one
  and three days (PyLatencyMap records, cumulative counts), each in a fresh process, against reading the same file
  into an accumulator alone (`--report-days` with no number: skip).
No assertions: targets are in the README's performance section.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from bench_common import machine
from bench_core import best, peak_rss_mb

from latencymap.core.accumulator import Accumulator, HistoryLimit, StreamHistory, accumulate
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId

DENSE_BYTES = NSLOTS * 8 * 2 + 25
DAY = 86_400
RATES = np.array([40.0, 180.0, 320.0, 110.0, 25.0, 3.0])  # events/s in 6 adjacent buckets, a typical I/O shape


def pool(rows: int, seed: int, timed: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """`rows` count vectors (6 buckets of 64) and, with `timed`, exact times per bucket (seconds)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((rows, NSLOTS), dtype=np.int64)
    counts[:, 9:15] = rng.poisson(RATES, (rows, len(RATES)))
    if not timed:
        return counts, None
    low = np.exp2(np.arange(NSLOTS) - 1.0) * 1e-6
    return counts, counts * low * rng.uniform(1.0, 2.0, (rows, NSLOTS))


def flow(streams: int, columns: int, timed: bool = False) -> Iterator[Interval]:
    """A second-by-second flow of `streams` streams for `columns` seconds, as a source yields it."""
    ids = [StreamId(f"disk{k}/read", "bpf", "microsec") for k in range(streams)]
    counts, times = pool(4096, 1, timed)
    t0 = 1_790_000_000.0
    for c in range(columns):
        for k, stream in enumerate(ids):
            row = (c * 7 + k * 13) % len(counts)
            yield Interval(stream, t0 + c, t0 + c + 1.0, counts[row], None if times is None else times[row])


def bytes_per_column(columns: int = 20_480) -> None:
    """History bytes per column of one stream, counts only and with exact times."""
    for timed in (False, True):
        hist = StreamHistory(StreamId("one", "bpf", "microsec"))
        items = list(flow(1, columns, timed))
        for at in range(0, columns, 4096):
            hist.extend(items[at: at + 4096])
        per = hist.nbytes / hist.n
        what = "exact times" if timed else "counts only"
        print(f"history, 6 buckets, {what:11s}: {per:6.1f} bytes per column per stream  (dense history: "
              f"{DENSE_BYTES} bytes, {DENSE_BYTES / per:.0f}x more; target <= 48 bytes: {per / 48:.2f} of it)")


def many(streams: int, columns: int) -> None:
    """One size, in this process: ingest, then print peak RSS and history bytes (parsed by the parent)."""
    before = peak_rss_mb()
    t = time.process_time()
    acc = accumulate(flow(streams, columns), Accumulator(cap=HistoryLimit()))
    cpu = time.process_time() - t
    print(f"{before:.1f} {peak_rss_mb():.1f} {acc.nbytes / 1e6:.1f} {cpu:.1f}")


def bench_many(streams: int, columns: int) -> None:
    """Two sizes in fresh processes; the slope is the cost per column."""
    sizes = (columns // 2, columns)
    runs = []
    for size in sizes:
        out = subprocess.run([sys.executable, __file__, "many", str(streams), str(size)], capture_output=True,
                             text=True, check=True).stdout.split()
        runs.append([float(x) for x in out])
        start, peak, held, cpu = runs[-1]
        print(f"{streams} streams x {size} columns: peak RSS {peak:.0f} MB (at start {start:.0f} MB), history "
              f"{held:.0f} MB, ingest {cpu:.0f} s CPU ({streams * size / cpu / 1e3:.0f}k intervals/s)")
    slope = (runs[1][1] - runs[0][1]) / (sizes[1] - sizes[0])  # MB per column (all streams)
    day = runs[1][1] + slope * (DAY - sizes[1])
    held = runs[1][2] * 1e6 / (streams * sizes[1])
    print(f"extrapolated (not run: {streams} x {DAY} would take ~{runs[1][3] * DAY / sizes[1] / 60:.0f} min of CPU "
          f"here): {streams} streams x {DAY} columns peak RSS ~{day / 1000:.2f} GB ({slope * 1e6 / streams:.1f} bytes "
          f"of RSS per column per stream at the margin; the history itself {held:.1f} bytes per column per stream; "
          f"target <= 4 GB); the dense history would hold {streams * DAY * DENSE_BYTES / 1e9:.0f} GB")


def bench_recording(records: int = 200_000) -> None:
    """Read a zstd recording into an accumulator vs zstd decompression plus line splitting of the same file."""
    import zstandard

    from latencymap.flow.pipeline import column_flow, input_flow
    from latencymap.flow.recording import Recorder
    from latencymap.plugins import load_registry

    registry = load_registry()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rec.zst"
        rec = Recorder(str(path))
        for item in flow(8, records // 8, timed=True):
            rec.write(item)
        rec.close()
        text_mb = 0.0

        def split() -> None:
            nonlocal text_mb
            lines = size = 0
            with path.open("rb") as fh:
                reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
                while chunk := reader.read(1 << 20):
                    size += len(chunk)
                    lines += len(chunk.splitlines())
            text_mb = size / 1e6

        def ours(flow: Callable[..., Any]) -> None:
            acc = accumulate(flow([str(path)], registry))
            assert acc.intervals_seen == records

        base = best(split)
        runs = [(what, best(lambda f=flow: ours(f))) for what, flow in (("in columns, as `report` reads", column_flow),
                                                                        ("one by one, as the views read", input_flow))]
        zst_mb = path.stat().st_size / 1e6
    for what, mine in runs:
        print(f"recording read ({what}): {text_mb / mine:.1f} MB/s of text ({records / mine / 1e3:.0f}k records/s, "
              f"{zst_mb / mine:.1f} MB/s of .zst), zstd + split {text_mb / base:.0f} MB/s: {base / mine:.1%} of it")


def write_days(path: Path, days: float, seed: int = 3) -> None:
    """One stream, a PyLatencyMap record a second for `days` days: cumulative counts in 6 buckets, 32 us to 2 ms."""
    rng = np.random.default_rng(seed)
    records = int(DAY * days) + 1
    counts = np.cumsum(rng.poisson([5, 40, 80, 40, 10, 1], (records, 6)), axis=0)
    t0 = 1_795_000_000
    with path.open("w") as out:
        for j in range(0, records, 4096):
            out.write("".join(
                f"<begin record>\ntimestamp, microsec, {(t0 + k) * 1_000_000}, d\nlatencyunit, microsec\nlabel, day\n"
                + "".join(f"{32 << b}, {c}\n" for b, c in enumerate(row.tolist())) + "<end record>\n"
                for k, row in enumerate(counts[j: j + 4096], start=j)))


def read_only(path: str) -> None:
    """Read `path` into an accumulator, as `report` does, and nothing else (run in a fresh process)."""
    from latencymap.flow.pipeline import column_flow
    from latencymap.plugins import load_registry

    accumulate(column_flow([path], load_registry(), None, {}), Accumulator())


def child_peak_mb(args: list[str]) -> float:
    """Peak RSS (MB) of a child process running `args`, its output discarded (this child's own, from wait4)."""
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, args)
    return usage.ru_maxrss / 1024


def bench_report_memory(days: list[float]) -> None:
    """Peak RSS of `latencymap report` and `report --format json` of one stream, a column a second, for `days`."""
    with tempfile.TemporaryDirectory() as tmp:
        for n in days:
            path = Path(tmp) / f"days{n:g}.txt"
            write_days(path, n)
            reading = child_peak_mb([sys.executable, __file__, "read", str(path)])
            text = child_peak_mb([sys.executable, "-m", "latencymap", "report", str(path)])
            json_ = child_peak_mb([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)])
            columns = int(DAY * n)
            print(f"report of one stream, {columns:,} one-second columns ({n:g} day{'s' * (n != 1)}, 6 buckets, "
                  f"{path.stat().st_size / 1e6:.0f} MB of records): peak RSS {text:.0f} MB (text), {json_:.0f} MB "
                  f"(--format json); reading it into the accumulator alone {reading:.0f} MB: the report adds "
                  f"{text - reading:.0f} MB ({(text - reading) * 1e6 / columns:.0f} bytes a column), JSON "
                  f"{json_ - reading:.0f} MB (its two columns x 6 arrays and their text); target <= 200 MB for a day")


def main() -> None:
    """Command line."""
    if sys.argv[1:2] == ["many"]:
        many(int(sys.argv[2]), int(sys.argv[3]))
        return
    if sys.argv[1:2] == ["read"]:
        read_only(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--columns", type=int, default=8640)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--day", action="store_true", help="also run --streams x 86,400 columns (about 10 min here)")
    ap.add_argument("--report-days", type=float, nargs="*", default=[1.0, 3.0],
                    help="days of one-second columns of one stream to report (none: skip)")
    ns = ap.parse_args()
    print(machine())
    bytes_per_column()
    bench_report_memory(ns.report_days)
    bench_recording(ns.records)
    bench_many(ns.streams, ns.columns)
    if ns.day:
        out = subprocess.run([sys.executable, __file__, "many", str(ns.streams), str(DAY)], capture_output=True,
                             text=True, check=True).stdout.split()
        start, peak, held, cpu = (float(x) for x in out)
        print(f"{ns.streams} streams x {DAY} columns (run): peak RSS {peak:.0f} MB (at start {start:.0f} MB), history "
              f"{held:.0f} MB ({held * 1e6 / (ns.streams * DAY):.1f} bytes per column per stream), ingest {cpu:.0f} s "
              f"CPU; target <= 4 GB: {peak / 4000:.2f} of it")


if __name__ == "__main__":
    main()
