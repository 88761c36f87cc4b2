"""`latencymap prometheus` against a real Prometheus server (Debian's `prometheus`, started here on loopback).

The server scrapes, every second, a prometheus_client exporter (classic histograms, text format) and a native
histogram exporter (protobuf exposition, schema 2, milliseconds) that the test drives from start to end; it runs with
`--enable-feature=native-histograms`, so it keeps the first as classic series and the second as native ones.
Every expected number is the server's own answer to its own `increase()` over the same steps.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from prometheus_support import DEFAULT_BUCKETS, Exporter, NativeExporter, PrometheusServer, prometheus_binary
from skips_support import skip_missing

from latencymap.core.model import Interval
from latencymap.protocol import ProtocolReader
from latencymap.sources.prometheus.query import PrometheusSource

pytestmark = pytest.mark.slow
CLASSIC = "app_request_duration_seconds"
NATIVE = "native_latency_milliseconds"
STEP = 2.0
NATIVE_VALUES_MS = (0.6, 3.3, 5.7, 12.1, 50.5, 230.0)


@dataclass
class Served:
    server: PrometheusServer
    t0: float
    t1: float


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    binary = prometheus_binary()
    if binary is None:
        skip_missing("prometheus", "apt-get install prometheus (.ci/install-system.sh)")
    classic = Exporter(buckets=DEFAULT_BUCKETS)
    native = NativeExporter(NATIVE, schema=2, labels={"svc": "a"})
    server = PrometheusServer(binary, tmp_path_factory.mktemp("prometheus"), [classic.url, native.url],
                              scrape_interval=1.0, native=True)
    stop = threading.Event()

    def drive() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            classic.observe(0.002 * (1 + k % 97), "GET" if k % 4 else "POST")
            native.observe(NATIVE_VALUES_MS[k % len(NATIVE_VALUES_MS)])
            time.sleep(0.02)

    thread = threading.Thread(target=drive, daemon=True)
    try:
        server.wait_ready()
        thread.start()
        server.wait_until(f"count({CLASSIC}_count)", lambda r: bool(r) and float(r[0]["value"][1]) == 2)
        server.wait_until(f"count({NATIVE})", lambda r: bool(r))
        t0 = math.ceil(time.time())
        t1 = t0 + 5 * STEP
        time.sleep(max(0.0, t1 - time.time()))
        server.wait_until(f"min(timestamp({CLASSIC}_count))", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        server.wait_until(f"timestamp({NATIVE})", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        yield Served(server, t0, t1)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.stop()
        classic.close()
        native.close()


def server_increase(s: Served, promql: str) -> dict[tuple[str, float], float]:
    """`(label set, step end) -> value` of the server's own range query over the window's steps."""
    doc = s.server.get("/api/v1/query_range", {"query": promql, "start": s.t0 + STEP, "end": s.t1, "step": STEP})
    return {(json.dumps(r["metric"], sort_keys=True), round(float(t), 3)): float(v)
            for r in doc["data"]["result"] for t, v in r["values"]}


def window(s: Served, **options: object) -> list[Interval]:
    source = PrometheusSource(url=s.server.url, start=str(s.t0), end=str(s.t1), step=STEP, **options)
    return [item for item in source.items() if isinstance(item, Interval)]


def labels_of(interval: Interval) -> str:
    """The stream's label set as the server writes it (the test's own reading of `metric{a="b",...}`)."""
    inner = interval.stream.label.partition("{")[2].rstrip("}")
    pairs = dict(p.split("=", 1) for p in inner.split('",') if p) if inner else {}
    return json.dumps({k: v.strip('"') for k, v in pairs.items()}, sort_keys=True)


def test_a_window_gives_the_servers_own_increase_of_count_per_step(served: Served) -> None:
    columns = window(served, metric=CLASSIC)
    counts = server_increase(served, f"increase({CLASSIC}_count[2s])")
    sums = server_increase(served, f"increase({CLASSIC}_sum[2s])")
    assert len(columns) == 2 * 5 and {c.stream.unit for c in columns} == {"microsec"}
    assert [c.end for c in columns[::2]] == [served.t0 + STEP * (i + 1) for i in range(5)]
    checked = 0
    for c in columns:
        key = (labels_of(c), round(c.end, 3))
        if key not in counts:
            assert c.gap and c.counts.sum() == 0
            continue
        assert int(c.counts.sum()) == round(counts[key])
        assert c.source_buckets is not None and c.source_buckets.total_time == pytest.approx(sums[key], rel=1e-9)
        assert c.source_buckets.counts.sum() == round(counts[key])
        checked += counts[key] > 0
    assert checked >= 6


def test_sum_by_and_sum_are_done_by_the_server(served: Served) -> None:
    summed = window(served, metric=CLASSIC, sum_all=True)
    totals = server_increase(served, f"sum(increase({CLASSIC}_count[2s]))")
    assert {c.stream.label for c in summed} == {CLASSIC}
    for c in summed:
        assert int(c.counts.sum()) == round(totals.get(("{}", round(c.end, 3)), 0.0))
    by_job = window(served, metric=CLASSIC, sum_by=("job",), match=("method=POST",))
    per_job = server_increase(served, f'sum by (job) (increase({CLASSIC}_count{{method="POST"}}[2s]))')
    assert {c.stream.label for c in by_job} == {f'{CLASSIC}{{job="t0"}}'}
    assert [int(c.counts.sum()) for c in by_job] == \
        [round(per_job.get(('{"job": "t0"}', round(c.end, 3)), 0.0)) for c in by_job]


def test_native_histograms_fold_exactly_and_match_the_servers_count(served: Served) -> None:
    columns = window(served, metric=NATIVE)
    counts = server_increase(served, f"histogram_count(increase({NATIVE}[2s]))")
    sums_ms = server_increase(served, f"histogram_sum(increase({NATIVE}[2s]))")
    raw = served.server.get("/api/v1/query_range", {"query": f"increase({NATIVE}[2s])", "start": served.t0 + STEP,
                                                    "end": served.t1, "step": STEP})["data"]["result"]
    (series,) = raw
    per_step = {round(float(t), 3): h for t, h in series["histograms"]}
    expected_rows = {math.floor(math.log2(v)) + 1 for v in NATIVE_VALUES_MS}
    assert len(columns) == 5 and all(c.stream.unit == "millisec" for c in columns)
    busy = 0
    for c in columns:
        key = (labels_of(c), round(c.end, 3))
        assert int(c.counts.sum()) == round(counts[key])
        own = c.source_buckets  # schema 2 in milliseconds: every bucket inside one row; the sum is kept besides
        assert own is not None and own.bounds == () and own.total_time == pytest.approx(sums_ms[key] / 1e3, rel=1e-9)
        assert set(np.flatnonzero(c.counts)) <= expected_rows
        server_rows = np.zeros(64)
        for _, left, right, n in per_step[round(c.end, 3)].get("buckets", []):
            row = math.floor(math.log2(float(left))) + 1
            assert row == math.ceil(math.log2(float(right)))  # the bucket nests inside row [2**(row-1), 2**row)
            server_rows[row] += float(n)
        assert np.abs(c.counts - server_rows).max() < 1  # whole events, each row within one of the server's
        busy += c.counts.sum() > 0
    assert busy >= 4


def test_live_polls_each_step_as_it_ends(served: Served) -> None:
    source = PrometheusSource(url=served.server.url, metric=CLASSIC, step=STEP, delay=1.0)
    got: list[Interval] = []
    items = source.items()
    for item in items:
        if isinstance(item, Interval):
            got.append(item)
        if len(got) >= 4:
            break
    items.close()
    for c in got:
        doc = served.server.get("/api/v1/query", {"query": f"increase({CLASSIC}_count[2s])", "time": c.end})
        value = {json.dumps(r["metric"], sort_keys=True): float(r["value"][1]) for r in doc["data"]["result"]}
        assert c.end == pytest.approx(round(c.end / STEP) * STEP) and c.end - c.start == STEP
        assert int(c.counts.sum()) == round(value.get(labels_of(c), 0.0))
    assert sum(int(c.counts.sum()) for c in got) > 0  # the exporter is still driven


def test_cli_window_is_recordable_and_its_report_counts_the_same(served: Served, tmp_path: Path) -> None:
    rec = tmp_path / "prom.rec"
    args = ["--url", served.server.url, "--metric", CLASSIC, "--start", str(served.t0), "--end", str(served.t1),
            "--step", "2"]
    live = subprocess.run([sys.executable, "-m", "latencymap", "prometheus", *args, "--emit", "--record", str(rec)],
                          capture_output=True, text=True, timeout=120)
    assert live.returncode == 0, live.stderr
    emitted = [i for i in ProtocolReader("emit").feed(live.stdout.splitlines()) if isinstance(i, Interval)]
    report = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    totals = server_increase(served, f"increase({CLASSIC}_count[2s])")
    for stream in json.loads(report.stdout)["streams"]:
        mine = [i for i in emitted if i.stream.label == stream["stream"]["label"]]
        events = sum(int(i.counts.sum()) for i in mine)
        assert stream["total"]["events"] == events == sum(round(v) for (labels, _), v in totals.items()
                                                          if labels == labels_of(mine[0]))
        assert stream["columns"] == 5
