"""Core throughput against baselines measured in the same run (issue 12, items 3, 5 and 7).

Run: .venv/bin/python bench/bench_core.py   (`fleet`: the interleaved-streams line only; `recording`: the zstd
recording line only; `seen`: recordings of exact sums without and with the values seen per bucket, and of a
rebinned source's own buckets; `hlog`: the HdrHistogram log line only)
Prints protocol ingest (records/s, 26 buckets each; as `report` reads, intervals in columns, and as the views read,
one by one) vs a plain Python line-reading loop over the same file; ingest of 1,000 streams interleaved record by
record (a fleet's collector, 6 buckets each) as a ratio to one stream of the same records in the same run; a zstd
recording of 200 such streams (bytes a record, write rate, `report`'s ingest against the same text uncompressed);
HdrHistogram logs (lines/s: busy ones, whose columns list many sub-buckets of their own, against decoding their
payloads alone and against narrow ones); raw-value binning (values/s) vs np.histogram on log2 edges, and the
accumulator's memory for a day of 1 s columns. Times are this process's CPU time (steadier than wall time on a
shared machine); best of 3.
No assertions: targets are in the README's performance section.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from latencymap.core.accumulator import Accumulator, accumulate
from latencymap.core.buckets import NSLOTS, bin_values
from latencymap.core.model import Interval, SourceBuckets, StreamId
from latencymap.flow.pipeline import column_flow, input_flow
from latencymap.plugins import load_registry
from latencymap.protocol import format_record


def make_stream(path: Path, records: int, buckets: int = 26) -> None:
    """A deterministic cumulative stream: `records` records of `buckets` buckets each."""
    rng = np.random.default_rng(42)
    totals = np.zeros(buckets, dtype=np.int64)
    with path.open("w") as fh:
        for i in range(records):
            totals += rng.poisson(50, buckets)
            fh.write(f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + i * 1_000_000}, t\n"
                     "latencyunit, microsec\nlabel, bench\ndatasource, bpf\n")
            fh.write("".join(f"{1 << b}, {c}\n" for b, c in enumerate(totals)))
            fh.write("<end record>\n")


def make_recording(path: Path, records: int, buckets: int = 26, seen: bool = False, source: bool = False) -> None:
    """The same shape as latencymap's own recordings write it: interval records with exact sums (3 columns); `seen`:
    with the values seen per bucket, as recordings of exact sources (Spark, HdrHistogram, `instrument`) have them;
    `source`: counts only, with a rebinned source's own 12 buckets and sum (Prometheus, OpenTelemetry)."""
    rng = np.random.default_rng(42)
    stream = StreamId("bench", "spark" if seen else "prometheus" if source else "bpf", "microsec")
    bounds = (*(float(b) for b in 2.0 ** np.arange(1, 12) * 250), float("inf"))
    with path.open("w") as fh:
        for i in range(records):
            counts = np.zeros(NSLOTS, dtype=np.int64)
            counts[1:buckets + 1] = rng.poisson(50, buckets)
            sums = counts * np.exp2(np.arange(NSLOTS) - 1.5) * 1e-6 * rng.uniform(0.9, 1.1, NSLOTS)
            extremes = None
            if seen:
                mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
                extremes = np.stack([mean * 0.95, mean * 1.05])
            t = 1_700_000_000.0 + i
            own = SourceBuckets(bounds, rng.poisson(100, len(bounds)), float(sums.sum())) if source else None
            fh.write(format_record(stream, t + 1, counts, None if source else sums, start=t, per_interval=True,
                                   extremes=extremes, source=own))


def make_fleet(path: Path, streams: int, records: int, buckets: int = 6) -> None:
    """`records` cumulative records of each of `streams` streams, interleaved record by record (as a collector of
    many hosts writes them), `buckets` buckets each; one stream: the same number of records in a row."""
    rng = np.random.default_rng(7)
    totals = rng.integers(0, 1000, size=(streams, buckets))
    with path.open("w") as fh:
        for i in range(records):
            totals += rng.poisson(20, (streams, buckets))
            fh.write("".join(
                f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + i * 1_000_000}, t{i}\n"
                f"latencyunit, microsec\nlabel, node{s:04d}/sda\ndatasource, bpf\n"
                + "".join(f"{16 << b}, {c}\n" for b, c in enumerate(totals[s])) + "<end record>\n"
                for s in range(streams)))


def best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    """Best CPU seconds of `fn` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def bench_ingest(records: int = 20_000, recording: bool = False, columns: bool = True, seen: bool = False,
                 source: bool = False) -> None:
    registry = load_registry()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stream.txt"
        if recording:
            make_recording(path, records, seen=seen, source=source)
        else:
            make_stream(path, records)

        def lines_only() -> None:
            n = 0
            with path.open() as fh:
                for line in fh:
                    if line.strip():
                        n += 1

        def ingest() -> None:
            acc = Accumulator()
            batch = []
            for item in (column_flow if columns else input_flow)([str(path)], registry):
                batch.append(item)
                if len(batch) >= 4096:
                    acc.add(batch)
                    batch.clear()
            acc.add(batch)
            assert acc.intervals_seen == records - (0 if recording else 1)

        base = best(lines_only)
        ours = best(ingest)
    what = ("recording ingest (interval records, " + ("a source's own buckets and sum" if source else "exact sums")
            + (", values seen" if seen else "") + ")") if recording else "protocol ingest"
    what += ", in columns (report)" if columns else ", one by one (views)"
    target = "" if recording else "; target >= 100k records/s and >= 30%"  # recordings' rows have none
    print(f"{what}: {records / ours:,.0f} records/s  (line-reading loop: {records / base:,.0f} records/s; "
          f"ratio {base / ours:.1%} of the line-reading rate{target})")


def bench_fleet(streams: int = 1000, records: int = 200_000) -> None:
    """Records/s of `report`'s ingest (in columns) of `streams` interleaved streams, and of one stream of as many
    records, in the same run."""
    registry = load_registry()
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, streams):
            path = Path(tmp) / f"fleet{n}.txt"
            make_fleet(path, n, records // n)

            def ingest(path: Path = path, n: int = n) -> None:
                acc = accumulate(column_flow([str(path)], registry))
                assert acc.intervals_seen == records - n

            rates[n] = records / best(ingest)
            path.unlink()
    ratio = rates[streams] / rates[1]
    print(f"protocol ingest of {streams:,} streams interleaved record by record (6 buckets): {rates[streams]:,.0f} "
          f"records/s  (one stream of as many records: {rates[1]:,.0f} records/s; ratio {ratio:.1%})")


def bench_recording(streams: int = 200, records: int = 100_000) -> None:
    """A zstd recording of `streams` streams interleaved interval by interval (6 buckets, a fleet's collector): its
    bytes a record and write rate (`Recorder.write`, formatting included), and `report`'s ingest of it, against the
    same recording in plain text, in the same run."""
    from latencymap.flow.recording import Recorder

    registry = load_registry()
    rng = np.random.default_rng(7)
    ids = [StreamId(f"node{s:04d}/sda", "bpf", "microsec") for s in range(streams)]
    items = []
    for i in range(records // streams):
        deltas = rng.poisson(20, (streams, 6))
        for s in range(streams):
            counts = np.zeros(NSLOTS, dtype=np.int64)
            counts[5:11] = deltas[s]
            items.append(Interval(ids[s], 1_700_000_000.0 + i, 1_700_000_001.0 + i, counts))
    written, size, read = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("rec.zst", "rec.txt"):
            path = Path(tmp) / name

            def write(path: Path = path) -> None:
                path.unlink(missing_ok=True)
                rec = Recorder(str(path))
                for iv in items:
                    rec.write(iv)
                rec.close()

            def ingest(path: Path = path) -> None:
                assert accumulate(column_flow([str(path)], registry)).intervals_seen == len(items)

            written[name] = len(items) / best(write)
            size[name] = path.stat().st_size / len(items)
            read[name] = len(items) / best(ingest)
    print(f"zstd recording of {streams:,} streams interleaved (6 buckets, {len(items):,} records): "
          f"{size['rec.zst']:.1f} bytes a record ({size['rec.txt']:.1f} as text); written at {written['rec.zst']:,.0f} "
          f"records/s (as text: {written['rec.txt']:,.0f}); report's ingest {read['rec.zst']:,.0f} records/s "
          f"(of the text: {read['rec.txt']:,.0f}; ratio {read['rec.zst'] / read['rec.txt']:.1%})")


def write_hlog(path: Path, lines: int, values: int, seed: int = 42) -> bool:
    """An HdrHistogram log written by the library (PyPI `hdrhistogram`, the dev extra): `lines` one-second intervals
    of `values` log-normal values each (median 300 µs in ns, sigma 1, 3 digits), as a busy service's; False without
    the library."""
    try:
        from hdrh.histogram import HdrHistogram
        from hdrh.log import HistogramLogWriter
    except ImportError:
        return False
    rng = np.random.default_rng(seed)
    t0 = 1_795_651_200.25
    with path.open("w") as fh:
        writer = HistogramLogWriter(fh)
        writer.output_log_format_version()
        fh.write(f"#[StartTime: {t0:.3f} (seconds since epoch)]\n")
        writer.output_legend()
        for i in range(lines):
            hist = HdrHistogram(1, 3_600_000_000_000, 3)
            for v in np.rint(rng.lognormal(np.log(300e3), 1.0, values)).astype(np.int64).tolist():
                hist.record_value(max(1, v))
            hist.set_start_time_stamp((t0 + i) * 1000)
            hist.set_end_time_stamp((t0 + i + 1) * 1000)
            writer.output_interval_histogram(hist)
    return True


def bench_hlog(lines: int = 2000) -> None:
    """Lines/s of `report`'s ingest of HdrHistogram logs, busy (40 values a line over a wide range: each column lists
    its occupied sub-buckets, the stream's own buckets their union, thousands) and narrow (8 values a line), against
    decoding the busy log's payloads alone (`fold_payloads`), in the same run."""
    from latencymap.sources.hdrhistogram_codec import fold_payloads

    registry = load_registry()
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for values in (40, 8):
            path = Path(tmp) / f"run{values}.hlog"
            if not write_hlog(path, lines, values):
                print("HdrHistogram log ingest: skipped (PyPI hdrhistogram, the dev extra, is not installed)")
                return

            def ingest(path: Path = path) -> None:
                assert accumulate(column_flow([str(path)], registry)).intervals_seen == lines

            rates[values] = lines / best(ingest)
            if values == 40:
                payloads = [line.rsplit(",", 1)[1].strip() for line in path.read_text().splitlines()
                            if line and line[0] not in '#"']
                decode = lines / best(lambda payloads=payloads: fold_payloads(payloads))
    print(f"HdrHistogram log ingest, {lines:,} lines of 40 values each: {rates[40]:,.0f} lines/s  (decoding its "
          f"payloads alone: {decode:,.0f} lines/s, ratio {rates[40] / decode:.1%}; lines of 8 values: "
          f"{rates[8]:,.0f} lines/s, ratio {rates[40] / rates[8]:.1%})")


def bench_binning(n: int = 10_000_000) -> None:
    values = np.random.default_rng(1).lognormal(np.log(300e3), 1.0, n)
    edges = np.concatenate(([0.0], np.exp2(np.arange(0, 63))))
    base = best(lambda: np.histogram(values, bins=edges))
    ours = best(lambda: bin_values(values))
    print(f"raw-value binning: {n / ours / 1e6:,.1f}M values/s  (np.histogram on log2 edges: {n / base / 1e6:,.1f}M/s;"
          f" ratio {base / ours:.2f}x; target >= 20M values/s)")


def peak_rss_mb() -> float:
    """VmHWM (peak RSS) of this process image; unlike ru_maxrss it does not carry the parent's peak over exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_memory(columns: int = 86_400) -> None:
    before = peak_rss_mb()
    acc = Accumulator(cap=columns)
    stream = StreamId("day", "bpf", "microsec")
    counts = np.ones(64, dtype=np.int64)
    batch = [Interval(stream, float(i), float(i + 1), counts) for i in range(4096)]
    for start in range(0, columns, 4096):
        acc.add(batch[: min(4096, columns - start)])
    peak = peak_rss_mb()
    print(f"memory: {columns} columns held; peak RSS {peak:.0f} MB (before: {before:.0f} MB; target <= 200 MB)")


if __name__ == "__main__":
    import subprocess
    import sys

    from bench_common import arguments

    mode = arguments(__doc__, ("memory", "fleet", "recording", "seen", "hlog"))
    if mode == ["memory"]:
        bench_memory()
    elif mode == ["fleet"]:
        bench_fleet()
    elif mode == ["recording"]:
        bench_recording()
    elif mode == ["hlog"]:
        bench_hlog()
    elif mode == ["seen"]:
        bench_ingest(recording=True)
        bench_ingest(recording=True, seen=True)
        bench_ingest(recording=True, source=True)
    else:
        for columns in (True, False):
            bench_ingest(columns=columns)
            bench_ingest(recording=True, columns=columns)
        bench_ingest(recording=True, seen=True)
        bench_ingest(recording=True, source=True)
        bench_fleet()
        bench_recording()
        bench_hlog()
        bench_binning()
        subprocess.run([sys.executable, __file__, "memory"], check=True)  # a fresh process: its own peak RSS
