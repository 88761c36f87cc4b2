"""`latencymap prometheus` against a real Prometheus server (Debian's `prometheus`, started here on loopback).

The server scrapes, every second, a prometheus_client exporter (classic histograms, text format) and two native
histogram exporters (protobuf exposition: schema 2 in milliseconds; schema 3 in seconds, whose 100 ms bucket fills
only one second in six) that the test drives from start to end; it runs with `--enable-feature=native-histograms`,
so it keeps the first as classic series and the others as native ones. Every expected number is the server's own
answer to its own `increase()` over the same steps.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import Counter
from prometheus_support import (
    DEFAULT_BUCKETS,
    PROTOBUF_TYPE,
    TEXT_TYPE,
    Exporter,
    NativeExporter,
    NativeHistogramState,
    PrometheusServer,
    Serving,
    histogram_page,
    prometheus_or_skip,
    reply,
)

from latencymap.core.model import Interval, Notice
from latencymap.core.source_totals import SourceTotals
from latencymap.plugins import SourceError
from latencymap.protocol import ProtocolReader
from latencymap.sources.prometheus.query import PrometheusSource

pytestmark = pytest.mark.slow
CLASSIC = "app_request_duration_seconds"
NATIVE = "native_latency_milliseconds"
STEP = 2.0
NATIVE_VALUES_MS = (0.6, 3.3, 5.7, 12.1, 50.5, 230.0)
VARIED = "varied_latency_seconds"
COUNTER = "app_requests"  # a prometheus_client counter beside the classic histogram: its samples are app_requests_total


@dataclass
class Served:
    server: PrometheusServer
    t0: float
    t1: float
    started: float


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    binary = prometheus_or_skip()
    classic = Exporter(buckets=DEFAULT_BUCKETS)
    requests = Counter(COUNTER, "Requests.", registry=classic.registry)
    native = NativeExporter(NATIVE, schema=2, labels={"svc": "a"})
    varied = NativeExporter(VARIED, schema=3, labels={"svc": "v"})
    started = time.time()
    server = PrometheusServer(binary, tmp_path_factory.mktemp("prometheus"), [classic.url, native.url, varied.url],
                              scrape_interval=1.0, native=True)
    stop = threading.Event()

    def drive() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            classic.observe(0.002 * (1 + k % 97), "GET" if k % 4 else "POST")
            requests.inc()
            native.observe(NATIVE_VALUES_MS[k % len(NATIVE_VALUES_MS)])
            varied.observe(0.05)  # (48.2, 52.6] ms, inside the row [32.8, 65.5) ms
            if int(time.time()) % 6 == 2:
                varied.observe(0.1)  # (96.4, 105.1] ms, some columns only
            time.sleep(0.02)

    thread = threading.Thread(target=drive, daemon=True)
    try:
        server.wait_ready()
        thread.start()
        server.wait_until(f"count({CLASSIC}_count)", lambda r: bool(r) and float(r[0]["value"][1]) == 2)
        server.wait_until(f"{COUNTER}_total > 0", lambda r: bool(r))
        server.wait_until(f"count({NATIVE})", lambda r: bool(r))
        server.wait_until(f"count({VARIED})", lambda r: bool(r))
        t0 = math.ceil(time.time())
        t1 = t0 + 5 * STEP
        time.sleep(max(0.0, t1 - time.time()))
        server.wait_until(f"min(timestamp({CLASSIC}_count))", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        server.wait_until(f"timestamp({NATIVE})", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        server.wait_until(f"timestamp({VARIED})", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        yield Served(server, t0, t1, started)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.stop()
        classic.close()
        native.close()
        varied.close()


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
    running: dict[str, list[float]] = {}
    for c in columns:
        key = (labels_of(c), round(c.end, 3))
        if key not in counts:
            assert c.gap and c.counts.sum() == 0
            continue
        mine, theirs = running.setdefault(key[0], [0.0, 0.0])
        running[key[0]] = [mine + int(c.counts.sum()), theirs + counts[key]]
        assert abs(running[key[0]][0] - running[key[0]][1]) < 1  # counted so far, within 1 of the server's
        assert c.source_buckets is not None and c.source_buckets.total_time == pytest.approx(sums[key], rel=1e-9)
        assert c.source_buckets.counts.sum() == c.counts.sum()
        checked += counts[key] > 0
    assert checked >= 6


def test_sum_by_and_sum_are_done_by_the_server(served: Served) -> None:
    summed = window(served, metric=CLASSIC, sum_all=True)
    totals = server_increase(served, f"sum(increase({CLASSIC}_count[2s]))")
    assert {c.stream.label for c in summed} == {CLASSIC}
    by_job = window(served, metric=CLASSIC, sum_by=("job",), match=("method=POST",))
    per_job = server_increase(served, f'sum by (job) (increase({CLASSIC}_count{{method="POST"}}[2s]))')
    assert {c.stream.label for c in by_job} == {f'{CLASSIC}{{job="t0"}}'}
    for columns, increases, labels in ((summed, totals, "{}"), (by_job, per_job, '{"job": "t0"}')):
        running = 0.0  # a scrape late by a few ms makes increases fractional: rounded down or up, carried
        for c in columns:
            off = int(c.counts.sum()) - increases.get((labels, round(c.end, 3)), 0.0)
            running += off
            assert abs(off) < 1 and abs(running) < 1


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
    running, rows_off = 0.0, np.zeros(64)
    for c in columns:
        key = (labels_of(c), round(c.end, 3))
        off = int(c.counts.sum()) - counts[key]
        running += off
        assert abs(off) < 1 and abs(running) < 1  # its increase rounded down or up, carried: the total tracks them
        own = c.source_buckets  # schema 2 in milliseconds: every bucket inside one row, and kept (4 to a row)
        assert own is not None and own.total_time == pytest.approx(sums_ms[key] / 1e3, rel=1e-9)
        assert int(own.counts.sum()) == int(c.counts.sum())
        filled = {(float(left), float(right)) for _, left, right, n in per_step[round(c.end, 3)].get("buckets", [])
                  if float(n) > 0}
        lows = (0.0, *own.bounds[:-1])
        assert {(lo, hi) for lo, hi, n in zip(lows, own.bounds, own.counts, strict=True) if n} <= filled
        assert set(np.flatnonzero(c.counts)) <= expected_rows
        server_rows = np.zeros(64)
        for _, left, right, n in per_step[round(c.end, 3)].get("buckets", []):
            row = math.floor(math.log2(float(left))) + 1
            assert row == math.ceil(math.log2(float(right)))  # the bucket nests inside row [2**(row-1), 2**row)
            server_rows[row] += float(n)
        rows_off += c.counts - server_rows
        assert np.abs(rows_off).max() < 1  # whole events; each row (one bucket here) so far within one of the server's
        busy += c.counts.sum() > 0
    assert busy >= 4


def test_live_polls_each_step_as_it_ends(served: Served) -> None:
    """Each step in turn, counted as the server counts it once every scrape stamped in it has landed. The delay covers
    the last one (a scrape may land up to its timeout, the 1 s interval, after its stamp); a late or paused scrape
    makes increases fractional (74.63), and a column counts the running total rounded (74, then the 0.63 later), so
    each stream's columns are checked against the running sum of the server's increases, as a window's are."""
    source = PrometheusSource(url=served.server.url, metric=CLASSIC, step=STEP, delay=2.0)
    got: list[Interval] = []
    items = source.items()
    for item in items:
        if isinstance(item, Interval):
            got.append(item)
        if len(got) >= 6:
            break
    items.close()
    running: dict[str, float] = {}
    ends: dict[str, list[float]] = {}
    for c in got:
        doc = served.server.get("/api/v1/query", {"query": f"increase({CLASSIC}_count[2s])", "time": c.end})
        value = {json.dumps(r["metric"], sort_keys=True): float(r["value"][1]) for r in doc["data"]["result"]}
        assert c.end == pytest.approx(round(c.end / STEP) * STEP) and c.end - c.start == STEP
        assert c.gap == (labels_of(c) not in value)  # a gap only where the server's step holds under two samples
        running[labels_of(c)] = running.get(labels_of(c), 0.0) + int(c.counts.sum()) - value.get(labels_of(c), 0.0)
        assert abs(running[labels_of(c)]) < 1  # each column its increase rounded down or up, carried
        ends.setdefault(labels_of(c), []).append(c.end)
    assert len(ends) == 2 and all(np.diff(e).tolist() == [STEP] * (len(e) - 1) for e in ends.values())  # no step left
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
        assert stream["total"]["events"] == events
        assert abs(events - sum(v for (labels, _), v in totals.items() if labels == labels_of(mine[0]))) < 1
        assert stream["columns"] == 5


def test_a_window_starting_at_a_fractional_second_matches_the_servers_steps(served: Served) -> None:
    start = served.t0 + 0.37  # what `--start -5m` gives: now, to the microsecond
    columns = [c for c in PrometheusSource(url=served.server.url, metric=CLASSIC, start=repr(start),
                                           end=repr(start + 4 * STEP), step=STEP).items() if isinstance(c, Interval)]
    doc = served.server.get("/api/v1/query_range", {"query": f"increase({CLASSIC}_count[2s])",
                                                    "start": f"{start + STEP:.3f}", "end": f"{start + 4 * STEP:.3f}",
                                                    "step": STEP})
    counts = {(json.dumps(r["metric"], sort_keys=True), round(float(t), 3)): float(v)
              for r in doc["data"]["result"] for t, v in r["values"]}
    assert len(columns) == 2 * 4 and len(counts) == 2 * 4
    running: dict[str, float] = {}
    for c in columns:
        off = int(c.counts.sum()) - counts[(labels_of(c), round(c.end, 3))]
        running[labels_of(c)] = running.get(labels_of(c), 0.0) + off
        assert not c.gap and abs(running[labels_of(c)]) < 1


def test_live_steps_ending_at_half_seconds_are_not_gaps(served: Served) -> None:
    from test_prometheus_query import live

    source = PrometheusSource(url=served.server.url, metric=CLASSIC, step=2.5, delay=1.0, sum_all=True)
    columns, _, _ = live(source, served.t0 + 6.0, 3)
    halves = [c for c in columns if c.end % 1]
    assert len(columns) == 3 and halves
    off = 0.0
    for c in columns:
        doc = served.server.get("/api/v1/query", {"query": f"sum(increase({CLASSIC}_count[2500ms]))",
                                                  "time": f"{c.end:.3f}"})
        (value,) = [float(r["value"][1]) for r in doc["data"]["result"]]
        off += int(c.counts.sum()) - value
        assert not c.gap and c.counts.sum() > 0 and abs(off) < 1


def histogram_quantile(q: float, buckets: dict[tuple[float, float], float]) -> float:
    """Prometheus' histogram_quantile over native buckets `(left, right) -> count`: linear inside the bucket."""
    rank, seen = q * sum(buckets.values()), 0.0
    for (left, right), n in sorted(buckets.items()):
        if n and seen + n >= rank:
            return left + (right - left) * (rank - seen) / n
        seen += n
    raise AssertionError


def test_native_buckets_that_differ_from_column_to_column_give_the_servers_quantiles(served: Served) -> None:
    args = ["--url", served.server.url, "--metric", VARIED, "--start", str(served.t0), "--end", str(served.t1),
            "--step", "2"]
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "prometheus", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (stream,) = json.loads(done.stdout)["streams"]
    raw = served.server.get("/api/v1/query_range", {"query": f"increase({VARIED}[2s])", "start": served.t0 + STEP,
                                                    "end": served.t1, "step": STEP})["data"]["result"]
    (series,) = raw
    steps = [h.get("buckets", []) for _, h in series["histograms"]]
    assert len({tuple((b[1], b[2]) for b in buckets) for buckets in steps}) > 1  # the buckets differ by column
    summed: dict[tuple[float, float], float] = {}
    for buckets in steps:
        for _, left, right, n in buckets:
            summed[(float(left), float(right))] = summed.get((float(left), float(right)), 0.0) + float(n)
    own = stream["source_buckets"]
    assert not own["mixed_bounds"] and own["events"] == stream["total"]["events"]
    assert abs(own["events"] - sum(summed.values())) <= len(steps)  # each column's increase rounded
    for name, q in (("p50", 0.5), ("p99", 0.99)):  # from (48.2, 52.6] and (96.4, 105.1] ms, not from their rows
        assert stream["total"][f"{name}_s"] == pytest.approx(histogram_quantile(q, summed), rel=1e-2)
    sums = server_increase(served, f"histogram_sum(increase({VARIED}[2s]))")
    assert stream["total"]["time_s"] == pytest.approx(sum(sums.values()), rel=1e-9)


def test_a_name_the_server_does_not_have_as_a_histogram_is_an_error(served: Served) -> None:
    def window_of(metric: str, step: float = STEP) -> list[object]:
        return list(PrometheusSource(url=served.server.url, metric=metric, start=str(served.t0),
                                     end=str(served.t1), step=step).items())

    with pytest.raises(SourceError, match=r"no app_request_duration_secs histogram \(native or "
                                          rf"app_request_duration_secs_bucket\) between .*; did you mean {CLASSIC}\?"):
        window_of("app_request_duration_secs")
    with pytest.raises(SourceError, match="prometheus_http_requests_total is a counter, not a histogram"):
        window_of("prometheus_http_requests_total")
    short = window_of(CLASSIC, step=0.5)  # no step holds two samples: each is read over 2 s (test_prometheus_spacing)
    assert [c for c in short if isinstance(c, Interval)] and any(
        isinstance(n, Notice) and "use --step 2 or more" in n.message for n in short)
    live = PrometheusSource(url=served.server.url, metric="app_request_duration_secs", step=STEP)
    live.clock, live.sleep = (lambda: served.t1 + 1.5), (lambda _: None)
    with pytest.raises(SourceError, match=f"did you mean {CLASSIC}"):
        next(iter(live.items()))


def test_a_counter_or_a_gauge_is_named_for_what_it_is_and_live_stops_at_once(served: Served) -> None:
    """A prometheus_client counter's `_total` series (its metadata filed under app_requests, as OpenMetrics names the
    family) and `up` (no metadata at all) were taken for native histograms: "has series, but increase() over 2s has
    no value at any step", `--histogram classic` said "only a native histogram", and live waited for ever."""
    def window_of(metric: str, **options: object) -> list[object]:
        return list(PrometheusSource(url=served.server.url, metric=metric, start=str(served.t0),
                                     end=str(served.t1), step=STEP, **options).items())

    counter = (f"{COUNTER}_total is a counter, not a histogram: its samples are plain numbers, and the targets' "
               f"metadata declares {COUNTER} a counter")
    for kind in ("auto", "native", "classic"):
        with pytest.raises(SourceError, match=counter):
            window_of(f"{COUNTER}_total", kind=kind)
    with pytest.raises(SourceError, match=r"up is not a histogram: its samples are plain numbers \(a counter's or a "
                                          r"gauge's; the targets' metadata gives it no type\), not native histograms, "
                                          rf"and it has no up_bucket series \(histograms there: .*{CLASSIC}"):
        window_of("up")
    for metric, said in ((f"{COUNTER}_total", counter), ("up", "up is not a histogram")):
        live = PrometheusSource(url=served.server.url, metric=metric, step=STEP)
        live.clock, live.sleep = (lambda: served.t1 + 1.5), (lambda _: None)
        with pytest.raises(SourceError, match=said):  # not "...; asking every step"
            next(iter(live.items()))


def test_a_sum_by_label_no_series_has_is_an_error_naming_the_labels_they_have(served: Served) -> None:
    """`--sum-by methd` summed every series into one stream `{methd=""}`, with no word."""
    for metric, given, said in ((CLASSIC, "methd", "their labels: instance, job, method; did you mean method?"),
                                (NATIVE, "sv", "their labels: instance, job, svc; did you mean svc?")):
        expected = f'no series of {metric} has a label {given}: --sum-by would group every series as {given}=""; '
        with pytest.raises(SourceError, match=re.escape(expected + said)):
            window(served, metric=metric, sum_by=(given,))
        live = PrometheusSource(url=served.server.url, metric=metric, step=STEP, sum_by=(given,))
        live.clock, live.sleep = (lambda: served.t1 + 1.5), (lambda _: None)
        with pytest.raises(SourceError, match=re.escape(expected + said)):  # before any column
            next(iter(live.items()))


def test_parts_of_a_long_window_before_the_data_are_gaps_not_a_notice(served: Served,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from latencymap.sources.prometheus import api, query

    monkeypatch.setattr(query, "MAX_POINTS", 4)
    monkeypatch.setattr(api, "MAX_POINTS", 4)
    start = served.t1 - STEP * (math.ceil((served.t1 - served.started) / STEP) + 5)  # queries before the server ran
    items = list(PrometheusSource(url=served.server.url, metric=CLASSIC, start=str(start), end=str(served.t1),
                                  step=STEP, sum_all=True).items())
    said = [i.message for i in items if isinstance(i, Notice)]
    columns = [i for i in items if isinstance(i, Interval)]
    assert not [m for m in said if "no " in m and "between" in m], said
    assert [c.end for c in columns] == [start + STEP * (k + 1) for k in range(round((served.t1 - start) / STEP))]
    assert all(c.gap for c in columns[:5]) and sum(int(c.counts.sum()) for c in columns) > 0


def test_federation_gives_classic_histograms_as_untyped_families_that_auto_mode_reads(served: Served) -> None:
    from latencymap.sources.prometheus.scrape import ScrapeSource

    match = urllib.parse.urlencode({"match[]": f'{{__name__=~"{CLASSIC}_(bucket|sum|count)"}}'})
    source = ScrapeSource(url=f"{served.server.url}/federate?{match}", metric=CLASSIC)
    readings, problems, natives = source.scrape()
    assert problems == [] and natives == {}
    assert {dict(key)["method"] for key in readings} == {"GET", "POST"}
    for reading in readings.values():
        assert reading.bounds == tuple(DEFAULT_BUCKETS) and reading.count > 0 and reading.total


# -- a redeploy with new le bounds, a restart, and a histogram with only +Inf: a real server's steps across them ----

REDEPLOY_AT, RESTART_AT, RUN_FOR = 8.0, 16.0, 24.0  # seconds after the exporter started
POW2_LE = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, math.inf)


class Deploys(Serving):
    """An exporter whose pages follow its clock: `svc_seconds` counts 100 events/s of 20 ms (in (10, 25] ms, then in
    (16, 32] ms), on prometheus_client's default bounds until REDEPLOY_AT, then on powers of two with the counts going
    on, restarted from 0 at RESTART_AT (the native `svc_native_milliseconds` restarts then too); `job_seconds` has
    only `+Inf`: 10 events/s of 80 ms. Its clock stands at 0 until `start()` (once the server scrapes it: a server
    slow to start would otherwise first sample it after the redeploy, and no step would hold the old bounds)."""

    def __init__(self) -> None:
        self.t0: float | None = None
        deploys = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if "protobuf" in (self.headers.get("Accept") or "") and self.path.startswith("/native"):
                    reply(self, 200, PROTOBUF_TYPE, deploys.native(deploys.clock()))
                else:
                    reply(self, 200, TEXT_TYPE, deploys.page(deploys.clock()).encode())

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)

    def start(self) -> float:
        """Start the clock; when."""
        self.t0 = time.time()
        return self.t0

    def clock(self) -> float:
        """Seconds since `start()`, 0 before it."""
        return 0.0 if self.t0 is None else time.time() - self.t0

    def page(self, t: float) -> str:
        events = math.floor(100 * (t - RESTART_AT if t >= RESTART_AT else t))
        bounds, holding = (tuple(DEFAULT_BUCKETS), 0.025) if t < REDEPLOY_AT else (POW2_LE, 0.032)
        cumulative = [events if b >= holding else 0 for b in bounds]
        jobs = math.floor(10 * t)
        return (histogram_page("svc_seconds", bounds, cumulative, 0.02 * events)
                + histogram_page("job_seconds", (math.inf,), [jobs], 0.08 * jobs))

    def native(self, t: float) -> bytes:
        exporter = NativeExporter.__new__(NativeExporter)
        exporter.name, exporter.labels = "svc_native_milliseconds", {}
        exporter.state = NativeHistogramState(2)
        for _ in range(math.floor(10 * (t - RESTART_AT if t >= RESTART_AT else t))):
            exporter.state.observe(12.0)
        return exporter.family()


@pytest.fixture(scope="module")
def deploys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float]]:
    binary = prometheus_or_skip()
    exporter = Deploys()
    server = PrometheusServer(binary, tmp_path_factory.mktemp("deploys"),
                              [exporter.url, exporter.url.replace("/metrics", "/native")], scrape_interval=1.0,
                              native=True)
    try:
        server.wait_ready()
        server.wait_until("count(svc_seconds_count) + count(svc_native_milliseconds)", lambda r: bool(r))
        t0 = exporter.start()
        end = math.floor(t0 + RUN_FOR)
        server.wait_past(end, "min(timestamp(svc_seconds_count))")
        yield server, t0
    finally:
        server.stop()
        exporter.close()


def _deploy_window(server: PrometheusServer, t0: float, metric: str) -> tuple[list[Interval], list[str]]:
    start = math.ceil(t0) + STEP
    items = list(PrometheusSource(url=server.url, metric=metric, start=str(start), end=str(start + 10 * STEP),
                                  step=STEP).items())
    return [i for i in items if isinstance(i, Interval)], [i.message for i in items if isinstance(i, Notice)]


def _restarted(server: PrometheusServer, metric: str, at: float) -> float:
    """When the server took its first sample of `metric` after the restart (the first count lower than the one
    before)."""
    series = server.get("/api/v1/query", {"query": f"{metric}[{RUN_FOR + 10:g}s]", "time": at})["data"]["result"][0]
    samples = [(float(t), float(v)) for t, v in series.get("values", [])]
    samples += [(float(t), float(h["count"])) for t, h in series.get("histograms", [])]
    return next(t for (_, a), (t, b) in itertools.pairwise(sorted(samples)) if b < a)


def _holding(columns: list[Interval], t: float) -> float:
    """The end of the column whose step holds time `t`."""
    return next(c.end for c in columns if c.start < t <= c.end)


def test_a_redeploy_with_new_bounds_is_a_gap_not_a_lowest_row_and_a_restart_is_a_reset(deploys) -> None:
    server, t0 = deploys
    columns, said = _deploy_window(server, t0, "svc_seconds")
    assert len({c.stream for c in columns}) == 1 and columns[0].stream.label.startswith("svc_seconds{")
    below = [(c.end - t0, c.gap, c.reset, c.counts[:16].tolist()) for c in columns if c.counts[:14].any()]
    assert below == [], (below, said)  # every event at 8 ms or more: none made up below (failed once in CI)
    counted = [c for c in columns if not c.gap]
    increases = {round(float(t), 3): float(v) for r in server.get("/api/v1/query_range", {
        "query": "increase(svc_seconds_count[2s])", "start": columns[0].end, "end": columns[-1].end,
        "step": STEP})["data"]["result"] for t, v in r["values"]}
    for c in counted:
        assert abs(int(c.counts.sum()) - increases[c.end]) <= 1, c.end
    assert all(c.gap for c in columns if c.end not in increases)  # a step holding under two samples (a missed scrape)
    redeploy = t0 + REDEPLOY_AT
    changed = [c.end for c in columns[columns.index(counted[0]):] if c.gap and c.end in increases]
    assert changed and all(redeploy <= t <= redeploy + 3 * STEP for t in changed)
    assert [m for m in said if "its le series changed" in m] == [m for m in said if "svc_seconds" in m]
    assert len([m for m in said if "its le series changed" in m]) == 1
    restart = _holding(columns, _restarted(server, "svc_seconds_count", columns[-1].end + 5))
    assert [c.end for c in columns if c.reset] == [restart]  # marked, as scrape marks it
    column = next(c for c in columns if c.reset)
    assert int(column.counts.sum()) == round(increases[restart])  # what increase() counts across the restart


def test_a_native_histogram_restart_is_a_reset(deploys) -> None:
    server, t0 = deploys
    columns, _ = _deploy_window(server, t0, "svc_native_milliseconds")
    restart = _holding(columns, _restarted(server, "svc_native_milliseconds", columns[-1].end + 5))
    assert [c.end for c in columns if c.reset] == [restart]


def test_a_histogram_with_only_an_inf_bucket_is_left_out_saying_what_it_holds(deploys) -> None:
    server, t0 = deploys
    with pytest.raises(SourceError, match=r'job_seconds\{.*\} has no finite bucket, only le="\+Inf": its [\d,]+ '
                                          r"events from .* \(mean 80ms\) hold no latency to place \(histogram_quantile "
                                          r"gives NaN\); left out: no series of job_seconds has a finite bucket"):
        _deploy_window(server, t0, "job_seconds")


# -- fractional increases and negative values: 0.2 s scrapes, 1 s steps (increase() extrapolates by 1.25) -------

TAIL = "tail_latency_seconds"
TAIL_VALUE = 3.0  # (2**(12/8), 2**(13/8)] s = (2.83, 3.08] s at schema 3: one bucket
SIGNED = "signed_latency_seconds"
FRACTIONAL_STEPS = 16


@pytest.fixture(scope="module")
def fractional(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float, float]]:
    """A server scraping, every 0.2 s, `tail_latency_seconds` (events near 10 ms, and one of 3 s about every second)
    and `signed_latency_seconds` (schema 2, zero threshold 1 ms: 10 % zeros, 20 % negative values); the window of
    FRACTIONAL_STEPS 1 s steps they were driven through."""
    binary = prometheus_or_skip()
    tail = NativeExporter(TAIL, schema=3, labels={"svc": "t"})
    signed = NativeExporter(SIGNED, schema=2, labels={"svc": "s"}, zero_threshold=0.001)
    server = PrometheusServer(binary, tmp_path_factory.mktemp("fractional"), [tail.url, signed.url],
                              scrape_interval=0.2, native=True)
    stop = threading.Event()

    def drive() -> None:
        rng = np.random.default_rng(11)
        while not stop.is_set():
            tail.observe(float(rng.lognormal(math.log(0.01), 0.3)))
            draw = rng.random()
            value = float(rng.lognormal(math.log(0.02), 1.0))
            signed.observe(0.0 if draw < 0.1 else -value if draw < 0.3 else value)
            time.sleep(0.02)

    def slow() -> None:
        while not stop.wait(0.97):
            tail.observe(TAIL_VALUE)

    threads = [threading.Thread(target=drive, daemon=True), threading.Thread(target=slow, daemon=True)]
    try:
        server.wait_ready()
        for thread in threads:
            thread.start()
        server.wait_until(f"count({TAIL})", lambda r: bool(r))
        server.wait_until(f"count({SIGNED})", lambda r: bool(r))
        t0 = math.ceil(time.time()) + 1
        t1 = t0 + FRACTIONAL_STEPS
        time.sleep(max(0.0, t1 - time.time()))
        for name in (TAIL, SIGNED):
            server.wait_until(f"timestamp({name})", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 0.5)
        yield server, t0, t1
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
        server.stop()
        tail.close()
        signed.close()


def _steps(server: PrometheusServer, metric: str, t0: float, t1: float) -> list[list[tuple[float, float, float]]]:
    """The server's own `increase(metric[1s])` at each step: (left, right, count) per bucket, negative ones too."""
    doc = server.get("/api/v1/query_range", {"query": f"increase({metric}[1s])", "start": t0 + 1, "end": t1,
                                             "step": 1})
    (series,) = doc["data"]["result"]
    return [[(float(lo), float(hi), float(n)) for _, lo, hi, n in h.get("buckets", [])]
            for _, h in series["histograms"]]


def test_a_sparse_native_tail_keeps_the_weight_the_servers_increases_give_it(fractional) -> None:
    """hn1's defect 2: increase() gives a tail bucket 1.25 per event; rounded column by column it counted 1, the rest
    going to the body, and p999 came out a bucket low. Carried per bucket from column to column, the tail bucket's
    count stays within one event of the sum of the server's increases, and so do the percentiles (as
    histogram_quantile computes them over those summed increases) within the bucket."""
    server, t0, t1 = fractional
    items = list(PrometheusSource(url=server.url, metric=TAIL, start=str(t0), end=str(t1), step=1.0).items())
    columns = [i for i in items if isinstance(i, Interval)]
    assert len(columns) == FRACTIONAL_STEPS and not any(c.gap for c in columns)
    summed: dict[tuple[float, float], float] = {}
    steps = _steps(server, TAIL, t0, t1)
    for buckets in steps:
        for left, right, n in buckets:
            summed[(left, right)] = summed.get((left, right), 0.0) + n
    (tail_bucket,) = [(lo, hi) for lo, hi in summed if lo < TAIL_VALUE <= hi]
    expected = summed[tail_bucket]
    # fractional steps: what rounding column by column lost a quarter of (their sum may be whole: 16 x 1.25 = 20)
    assert expected > 8 and any(n % 1 for buckets in steps for lo, hi, n in buckets if (lo, hi) == tail_bucket)
    upper = tail_bucket[1] * 1e6  # the stream is in microseconds
    counted = sum(int(n) for c in columns for b, n in zip(c.source_buckets.bounds, c.source_buckets.counts,
                                                         strict=True) if b == pytest.approx(upper, rel=1e-12))
    assert abs(counted - expected) < 1
    totals = SourceTotals(columns[0].source_buckets.bounds)
    for c in columns:
        totals.add(c.source_buckets)
    assert not totals.mixed and abs(totals.events - sum(summed.values())) < 1
    share = expected / sum(summed.values())
    q = 1 - share / 2  # the rank falls in the tail bucket
    assert tail_bucket[0] < totals.percentile(q) / 1e6 <= tail_bucket[1]
    assert totals.percentile(q) / 1e6 == pytest.approx(histogram_quantile(q, summed), rel=1e-2)


def test_negative_native_values_are_left_out_and_their_steps_time_is_not_the_signed_sum(fractional) -> None:
    """hn1's defect 3 through the server: negative buckets are no latencies (they were counted in the lowest rows),
    said once for the series, and the signed `_sum` of a step holding them is not that step's time waited."""
    server, t0, t1 = fractional
    items = list(PrometheusSource(url=server.url, metric=SIGNED, start=str(t0), end=str(t1), step=1.0).items())
    columns = [i for i in items if isinstance(i, Interval)]
    said = [i.message for i in items if isinstance(i, Notice) and "negative values are not latencies" in i.message]
    assert len(columns) == FRACTIONAL_STEPS and len(said) == 1 and 'svc="s"' in said[0]
    steps = _steps(server, SIGNED, t0, t1)
    kept = sum(n for buckets in steps for lo, hi, n in buckets if hi >= 0)  # the zero bucket [-1ms, 1ms] whole
    negative = sum(n for buckets in steps for lo, hi, n in buckets if hi < 0)
    assert negative > 0.15 * (kept + negative)
    assert abs(sum(int(c.counts.sum()) for c in columns) - kept) < 1
    assert all(c.source_buckets is not None and c.source_buckets.total_time is None for c in columns)


class Restarts(Serving):
    """prometheus_client's text page of `job_seconds`, by its clock: a process created at its start counts 10 events/s
    of 10 ms; one created at RESTARTED_AT counts 100 events/s, so its first page already counts more than the old
    process ever did; `job_seconds_created` says which process serves."""

    def __init__(self) -> None:
        self.t0 = time.time()
        restarts = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                reply(self, 200, TEXT_TYPE, restarts.page(time.time() - restarts.t0).encode())

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)

    def page(self, t: float) -> str:
        new = t >= RESTARTED_AT
        events = math.floor(100 * (t - RESTARTED_AT)) if new else math.floor(10 * t)
        created = self.t0 + (RESTARTED_AT if new else 0.0)
        page = histogram_page("job_seconds", (0.005, 0.01, 0.1, math.inf), [0, events, events, events], 0.01 * events)
        return page + f"# TYPE job_seconds_created gauge\njob_seconds_created {created!r}\n"


RESTARTED_AT = 7.0


@pytest.fixture(scope="module")
def restarts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float]]:
    binary = prometheus_or_skip()
    exporter = Restarts()
    server = PrometheusServer(binary, tmp_path_factory.mktemp("restarts"), [exporter.url], scrape_interval=1.0)
    try:
        server.wait_ready()
        end = math.floor(exporter.t0 + 2 * RESTARTED_AT)
        server.wait_past(end, "timestamp(job_seconds_count)")
        yield server, exporter.t0
    finally:
        server.stop()
        exporter.close()


def test_a_restart_whose_counts_are_already_higher_is_a_reset_told_by_the_created_series(restarts) -> None:
    server, t0 = restarts
    start = math.ceil(t0) + 2 * STEP
    items = list(PrometheusSource(url=server.url, metric="job_seconds", start=str(start), end=str(start + 4 * STEP),
                                  step=STEP).items())
    columns = [i for i in items if isinstance(i, Interval)]
    assert len(columns) == 4
    series = server.get("/api/v1/query", {"query": "job_seconds_created[30s]", "time": columns[-1].end})
    samples = [(float(t), float(v)) for t, v in series["data"]["result"][0]["values"]]
    restart = next(t for (_, a), (t, b) in itertools.pairwise(samples) if b != a)  # the new process's first sample
    assert [c.end for c in columns if c.reset] == [_holding(columns, restart)]  # the count never went down
    assert not next(c for c in columns if c.reset).gap


# -- a prometheus_client process restarting with counts already higher than the old one's -----------------------

HIGHER = "higher_seconds"
HIGHER_STEP = 4.0
HIGHER_RESTART, HIGHER_BURST = 10.5, 400  # seconds after the window's start (inside its third step, two samples in)


@dataclass
class Recorded:
    """What the restarting target really observed: (time, seconds) per event, and when its process restarted."""

    server: PrometheusServer
    events: list[tuple[float, float]]
    restarted: float
    start: float

    def between(self, start: float, end: float) -> list[float]:
        return [v for t, v in self.events if start < t <= end]


@pytest.fixture(scope="module")
def higher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """A prometheus_client target: its first process observes 3 ms 20 times a second; at HIGHER_RESTART a new one
    (a new registry: a new `_created`) opens with HIGHER_BURST observations of 50 ms, more than the old one's ~240,
    then observes 50 ms 20 times a second. Scraped every second as text (where `_created` is a series)."""
    binary = prometheus_or_skip()
    exporter = Exporter(HIGHER, labels=(), buckets=(0.005, 0.01, 0.1), form="text")
    server = PrometheusServer(binary, tmp_path_factory.mktemp("higher"), [exporter.url], scrape_interval=1.0)
    events: list[tuple[float, float]] = []
    restarted: list[float] = []
    stop = threading.Event()
    start = math.inf

    def drive() -> None:
        value = 0.003
        while not stop.wait(0.05):
            if not restarted and time.time() >= start + HIGHER_RESTART:
                exporter.restart()
                restarted.append(time.time())
                value = 0.05
                for _ in range(HIGHER_BURST):
                    exporter.observe(value)
                    events.append((time.time(), value))
            exporter.observe(value)
            events.append((time.time(), value))

    thread = threading.Thread(target=drive, daemon=True)
    try:
        server.wait_ready()
        server.wait_until("up", lambda r: bool(r))  # scraping: the window's first step has samples
        start = math.ceil(time.time()) + 1.0
        thread.start()
        end = start + 4 * HIGHER_STEP
        server.wait_past(end, f"timestamp({HIGHER}_count)")
        yield Recorded(server, events, restarted[0], start)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.stop()
        exporter.close()


def _higher_columns(recorded: Recorded) -> list[Interval]:
    items = PrometheusSource(url=recorded.server.url, metric=HIGHER, start=str(recorded.start),
                             end=str(recorded.start + 4 * HIGHER_STEP), step=HIGHER_STEP).items()
    return [i for i in items if isinstance(i, Interval)]


def test_a_restart_with_higher_counts_counts_both_processes_events_in_its_step(higher: Recorded) -> None:
    """increase() sees only a rise across a restart whose counts are already higher: it counted the new count less the
    old one (288 of 479 events: the old process's count missing). Counted from the raw samples, the step holds
    the old process's events up to its last sample and every one of the new process's, as the target recorded them."""
    columns = _higher_columns(higher)
    assert len(columns) == 4 and not any(c.gap for c in columns)
    (reset,) = [c for c in columns if c.reset]
    assert reset.start < higher.restarted <= reset.end
    doc = higher.server.get("/api/v1/query", {"query": f"{HIGHER}_created[{HIGHER_STEP:g}s]", "time": reset.end})
    samples = [(float(t), float(v)) for t, v in doc["data"]["result"][0]["values"]]
    assert len({v for _, v in samples}) == 2  # the restart is between two samples of the step
    last_old = max(t for t, v in samples if v == samples[0][1])  # the old process's last sample
    unseen = [v for t, v in higher.events if last_old < t <= higher.restarted]  # in no sample
    truth = higher.between(reset.start, reset.end)
    expected = len(truth) - len(unseen)
    counted = int(reset.counts.sum())
    # within 5%: increase()'s extrapolation to the step's edges, on a target whose rate a busy machine makes uneven
    assert abs(counted - expected) <= 0.05 * expected, (counted, len(truth), len(unseen))
    kept = reset.source_buckets
    assert kept is not None and kept.total_time == pytest.approx(sum(truth) - sum(unseen), rel=0.05)
    new = [t for t, _ in higher.events if reset.start < t <= reset.end and t >= higher.restarted]
    above = sum(int(n) for b, n in zip(kept.bounds, kept.counts, strict=True) if b > 10_000)  # 10 ms, in us
    assert abs(above - len(new)) <= 0.05 * len(new)  # the new process's 50 ms events


def test_a_step_counted_from_its_raw_samples_without_a_restart_is_what_increase_counts(higher: Recorded) -> None:
    """The raw-sample count of a step is increase()'s own where nothing restarted: the server's number to 1e-9."""
    from latencymap.sources.prometheus.restarts import step_increase

    checked = 0
    for c in _higher_columns(higher):
        if c.reset:
            continue
        at = {"time": c.end}
        raw = higher.server.get("/api/v1/query", {"query": f"{HIGHER}_bucket[{HIGHER_STEP:g}s]", **at})
        before = higher.server.get("/api/v1/query", {"query": f"{HIGHER}_bucket[{HIGHER_STEP:g}s]",
                                                     "time": c.end - HIGHER_STEP})
        rises = higher.server.get("/api/v1/query", {"query": f"increase({HIGHER}_bucket[{HIGHER_STEP:g}s])", **at})
        want = {r["metric"]["le"]: float(r["value"][1]) for r in rises["data"]["result"]}
        earlier = {r["metric"]["le"]: [(float(t), float(v)) for t, v in r["values"]]
                   for r in before["data"]["result"]}
        for r in raw["data"]["result"]:
            le = r["metric"]["le"]
            points = [(float(t), float(v)) for t, v in r["values"]]
            got = step_increase(points, (earlier.get(le) or [None])[-1], None, {}, c.end - HIGHER_STEP, c.end)
            assert got == pytest.approx(want[le], rel=1e-9, abs=1e-9), (c.end, le)
            checked += 1
    assert checked >= 3 * 4


# -- a label set new mid-window, and a process restarted after an outage long enough to make its series stale ------

OUTAGE = "outage_seconds"
OUTAGE_NATIVE = "outage_native_milliseconds"
NEW_AT, DOWN_AT, UP_AT, OUTAGE_RUN = 5.3, 12.0, 18.0, 28.0  # seconds after the window's start


@dataclass
class Outage:
    """What the targets really observed: (time, method, seconds) per classic event, and when things happened."""

    server: PrometheusServer
    events: list[tuple[float, str, float]]
    start: float
    new: float  # when the ERR label set was created (its burst observed)
    up: float  # when the restarted processes began serving

    def count(self, method: str, start: float, end: float) -> int:
        return sum(1 for t, m, _ in self.events if m == method and start < t <= end)


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    """A prometheus_client target (text, with `_created`) observing GET, 3 ms, 20 times a second; at NEW_AT a new label
    set ERR opens with a burst of 150 observations of 0.9 s (then none); at DOWN_AT the process stops (refused: its
    series go stale) and at UP_AT a new one serves on its port, GET going on. A native histogram target stops and
    restarts with it. Scraped every second."""
    binary = prometheus_or_skip()
    made = {"classic": Exporter(OUTAGE, buckets=(0.005, 0.1, 1.0), form="text"),
            "native": NativeExporter(OUTAGE_NATIVE, schema=2)}
    ports = {k: e.port for k, e in made.items()}
    server = PrometheusServer(binary, tmp_path_factory.mktemp("outage"), [e.url for e in made.values()],
                              scrape_interval=1.0, native=True)
    events: list[tuple[float, str, float]] = []
    when: dict[str, float] = {}
    stop = threading.Event()
    start = math.inf

    def drive() -> None:
        while not stop.wait(0.05):
            t = time.time() - start
            if DOWN_AT <= t < UP_AT:
                if "down" not in when:
                    when["down"] = time.time()
                    for e in made.values():
                        e.close()
                continue
            if t >= UP_AT and "up" not in when:
                made["classic"] = Exporter(OUTAGE, buckets=(0.005, 0.1, 1.0), form="text", port=ports["classic"])
                made["native"] = NativeExporter(OUTAGE_NATIVE, schema=2, port=ports["native"])
                when["up"] = time.time()
            classic, native = made["classic"], made["native"]
            assert isinstance(classic, Exporter) and isinstance(native, NativeExporter)
            if t >= NEW_AT and "new" not in when:
                when["new"] = time.time()
                for _ in range(150):
                    classic.observe(0.9, "ERR")
                    events.append((time.time(), "ERR", 0.9))
            classic.observe(0.003, "GET")
            events.append((time.time(), "GET", 0.003))
            native.observe(12.0)

    thread = threading.Thread(target=drive, daemon=True)
    try:
        server.wait_ready()
        server.wait_until("count(up == 1) == 3", lambda r: bool(r))  # scraping: the window's first step has samples
        start = math.ceil(time.time()) + 1.0
        thread.start()
        end = start + OUTAGE_RUN
        server.wait_past(end, f"min(timestamp({OUTAGE}_count))", f"timestamp({OUTAGE_NATIVE})")
        yield Outage(server, events, start, when["new"], when["up"])
    finally:
        stop.set()
        thread.join(timeout=5)
        server.stop()
        for e in made.values():
            e.close()


def _outage_columns(outage: Outage, metric: str = OUTAGE, start: float | None = None, steps: int = 14,
                    **options: object) -> list[Interval]:
    begin = outage.start if start is None else start
    items = PrometheusSource(url=outage.server.url, metric=metric, start=str(begin), end=str(begin + steps * STEP),
                             step=STEP, **options).items()
    return [i for i in items if isinstance(i, Interval)]


def _first_sample_after(outage: Outage, selector: str, after: float) -> float:
    """When the server took its first sample of `selector` after the time `after`."""
    doc = outage.server.get("/api/v1/query", {"query": f"{selector}[{OUTAGE_RUN + 5:g}s]",
                                              "time": outage.start + OUTAGE_RUN})
    series = doc["data"]["result"][0]
    return min(float(t) for t, _ in (*series.get("values", []), *series.get("histograms", [])) if float(t) > after)


def test_a_label_set_new_mid_window_counts_all_it_holds_from_its_created(outage: Outage) -> None:
    """ERR's first samples already hold its whole burst: `increase()` saw no rise (the step with its first sample has
    no value, the next a flat 150) and ERR read as no events, `--sum` without them. Its `_created` is in the step (or
    the one before): its first step counts it from zero, all 150 and their 135 s, not marked reset."""
    columns = _outage_columns(outage)
    err = [c for c in columns if 'method="ERR"' in c.stream.label]
    (burst,) = [c for c in err if c.counts.sum()]
    assert int(burst.counts.sum()) == 150 and not burst.reset and not burst.gap
    assert burst.start - STEP < outage.new <= burst.end
    assert burst.source_buckets is not None and burst.source_buckets.total_time == pytest.approx(135.0)
    get = next(c for c in columns if 'method="GET"' in c.stream.label and c.end == burst.end)
    summed = next(c for c in _outage_columns(outage, sum_all=True) if c.end == burst.end)
    assert int(summed.counts.sum()) - int(get.counts.sum()) == 150


def test_a_restart_after_an_outage_counts_its_first_step_from_its_created_and_is_a_reset(outage: Outage) -> None:
    """After an outage that made its series stale, the restarted process's first sample alone in its step gave no
    `increase()`: a gap, and the events it counted since its `_created` were lost, with no reset marked (`offset`
    has no value for a stale series). Counted from zero, that step holds them, marked reset."""
    first = _first_sample_after(outage, f'{OUTAGE}_count{{method="GET"}}', outage.up)
    end = round(first + 0.2, 3)  # the step ending here holds that one sample
    columns = _outage_columns(outage, start=end - 4 * STEP, steps=6)
    get = {c.end: c for c in columns if 'method="GET"' in c.stream.label}
    column = get[end]
    truth = outage.count("GET", end - STEP, end)
    assert not column.gap and column.reset
    assert abs(int(column.counts.sum()) - truth) <= 3, (int(column.counts.sum()), truth)
    after = get[end + STEP]
    assert not after.reset and abs(int(after.counts.sum()) - outage.count("GET", end, end + STEP)) <= 3


def test_a_native_restart_after_an_outage_is_a_reset(outage: Outage) -> None:
    """A native histogram's restart across an outage was marked neither reset nor gap (`offset` has no value for a
    stale series); its count is lower than its last sample before: a reset."""
    columns = _outage_columns(outage, OUTAGE_NATIVE)
    first = _first_sample_after(outage, OUTAGE_NATIVE, outage.up)
    assert [c.end for c in columns if c.reset] == [_holding(columns, first)]
