"""`latencymap prometheus` on a tail bucket that grows by a steady fraction of an event per step, through a real
Prometheus server (Debian's `prometheus`, started here on loopback).

The exporter's classic histogram counts grow linearly with time (floats, as a counter may), so the server's
`increase()` over each 2 s step is the same every step: 6, 2 and 0.4 events in its three buckets. Rounded step by
step, alone, the tail's 0.4 would be 0 every step, and p99 would land a bucket too low; carried from step to step,
the tail keeps its events and p99 is `histogram_quantile`'s. Every expected number is the server's own answer.

The server stamps a sample with the scrape's start, the exporter counts when it answers: under load that lag varies
(40/s over 37 ms is 1.5 events), so a step's `increase()` is the rate times the time the samples say, not exactly
times 2 s. All buckets of one scrape share it: the steps are checked against the exporter's rates in that time.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from prometheus_support import TEXT_TYPE, PrometheusServer, Serving, prometheus_or_skip, reply

from latencymap.core.model import Interval
from latencymap.sources.prometheus.query import PrometheusSource

pytestmark = pytest.mark.slow
NAME = "tail_latency_seconds"
BOUNDS = ("0.01", "0.1", "1.0", "+Inf")
RATES = (3.0, 1.0, 0.2, 0.0)  # events per second in each bucket (not cumulative): 0.4 a step in (0.1, 1]
MIXED = "mixed_latency_seconds"  # 40/s of 4.5 ms in (0, 5 ms] and 0.2/s of 600 ms in (0.5, 0.75]
MIXED_BOUNDS = ("0.005", "0.01", "0.5", "0.75", "+Inf")
MIXED_RATES = (40.0, 0.0, 0.0, 0.2, 0.0)
MIXED_TIMES = (0.0045, 0.0, 0.0, 0.6, 0.0)  # each bucket's events' latency, seconds
STEP = 2.0
STEPS = 10


class LinearExporter(Serving):
    """Classic histograms whose counts are `rate * seconds` since long before it started (never near zero)."""

    def __init__(self) -> None:
        origin = time.time() - 10_000.0
        tail_times = (0.05,) * len(BOUNDS)
        histograms = ((NAME, BOUNDS, RATES, tail_times), (MIXED, MIXED_BOUNDS, MIXED_RATES, MIXED_TIMES))

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                elapsed = time.time() - origin
                lines = []
                for name, bounds, rates, times in histograms:
                    lines.append(f"# TYPE {name} histogram")
                    cumulative = spent = 0.0
                    for le, rate, took in zip(bounds, rates, times, strict=True):
                        cumulative += rate * elapsed
                        spent += rate * elapsed * took
                        lines.append(f'{name}_bucket{{le="{le}"}} {cumulative!r}')
                    lines += [f"{name}_sum {spent!r}", f"{name}_count {cumulative!r}"]
                body = ("\n".join(lines) + "\n").encode()
                reply(self, 200, TEXT_TYPE, body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float, float]]:
    binary = prometheus_or_skip()
    exporter = LinearExporter()
    server = PrometheusServer(binary, tmp_path_factory.mktemp("prometheus"), [exporter.url], scrape_interval=1.0)
    try:
        server.wait_ready()
        server.wait_until(f"count_over_time({NAME}_count[1m])", lambda r: bool(r) and float(r[0]["value"][1]) >= 2)
        t0 = math.ceil(time.time())
        t1 = t0 + STEPS * STEP
        time.sleep(max(0.0, t1 - time.time()))
        server.wait_until(f"timestamp({NAME}_count)", lambda r: bool(r) and float(r[0]["value"][1]) > t1 + 1)
        yield server, t0, t1
    finally:
        server.stop()
        exporter.close()


def server_steps(server: PrometheusServer, t0: float, t1: float, promql: str) -> dict[str, list[float]]:
    """Per `le` (or "" without one), the server's value at each step end of the window, in order."""
    doc = server.get("/api/v1/query_range", {"query": promql, "start": t0 + STEP, "end": t1, "step": STEP})
    out = {}
    for r in doc["data"]["result"]:
        assert len(r["values"]) == STEPS
        out[r["metric"].get("le", "")] = [float(v) for _, v in r["values"]]
    return out


def seconds_seen(per_bucket: np.ndarray, rates: tuple[float, ...]) -> np.ndarray:
    """Per step, the time the server's increases say (each bucket's increase over its rate, the same for every bucket
    of the samples, which one scrape wrote), checked against the step's 2 s."""
    held = [k for k, rate in enumerate(rates) if rate]
    seen = per_bucket[:, held] / np.array([rates[k] for k in held])
    assert seen == pytest.approx(np.repeat(seen[:, :1], len(held), axis=1), rel=1e-6)  # one time per step
    assert seen[:, 0] == pytest.approx([STEP] * STEPS, abs=0.5)
    return seen[:, 0]


def histogram_quantile(q: float, per_le: dict[str, float]) -> float:
    """PromQL's histogram_quantile on cumulative `le -> count`."""
    les = sorted(per_le, key=float)
    rank = q * per_le["+Inf"]
    below, low = 0.0, 0.0
    for le in les:
        if per_le[le] >= rank:
            if le == "+Inf":
                return low
            return low + (float(le) - low) * (rank - below) / (per_le[le] - below)
        below, low = per_le[le], float(le)
    raise AssertionError("unreachable")


def test_a_steady_fractional_tail_keeps_its_events_and_histogram_quantiles_p99(
        served: tuple[PrometheusServer, float, float]) -> None:
    server, t0, t1 = served
    increases = server_steps(server, t0, t1, f"increase({NAME}_bucket[2s])")
    totals = server_steps(server, t0, t1, f"increase({NAME}_count[2s])")[""]
    per_bucket = np.diff(np.array([increases[le] for le in BOUNDS]), axis=0, prepend=0.0).T  # (steps, buckets)
    seen = seconds_seen(per_bucket, RATES)  # about 2 s a step: 0.4 in the tail, which rounds to 0 alone
    tail = round(per_bucket[:, 2].sum())
    assert tail == round(0.2 * seen.sum()) and np.rint(per_bucket[:, 2]).sum() < tail - 2  # alone, most are lost

    columns = [i for i in PrometheusSource(url=server.url, metric=NAME, start=str(t0), end=str(t1),
                                           step=STEP).items() if isinstance(i, Interval)]
    assert len(columns) == STEPS and not any(c.gap for c in columns)
    counts = []
    for c in columns:
        assert c.source_buckets is not None
        counts.append(c.source_buckets.counts)
    counted = np.array(counts)
    off = np.cumsum(counted - per_bucket, axis=0)  # counted less the server's increases, after every step
    assert (np.abs(off) < 1).all() and (np.abs(off.sum(axis=1)) <= 0.5 + 1e-9).all()
    assert (np.abs(counted.sum(axis=1) - np.array(totals)) < 1).all()  # each column: its increase rounded down or up
    assert counted[:, 2].sum() == tail

    args = ["--url", server.url, "--metric", NAME, "--start", str(t0), "--end", str(t1), "--step", "2"]
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "prometheus", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (stream,) = json.loads(done.stdout)["streams"]
    assert stream["source_buckets"]["counts"] == counted.sum(axis=0).tolist()
    whole = {le: sum(v) for le, v in increases.items()}
    expected = histogram_quantile(0.99, whole)  # about 0.81 s: inside (0.1, 1]
    assert 0.1 < expected < 1.0
    assert stream["total"]["p99_s"] == pytest.approx(expected, rel=0.05)


def test_a_carried_tail_event_does_not_move_its_columns_fast_events_below_their_bucket(
        served: tuple[PrometheusServer, float, float]) -> None:
    """0.4 a step of 600 ms events counts 1 in two steps of five, each in a column whose `_sum` holds 0.4 of one:
    read against the whole count, that sum would leave the 80 events of (0, 5 ms] a mean of about 1.25 ms and put
    them at 0.87-1.7 ms. Read with the step's own increases, their mean can be 5 ms: the rule's [2.5, 5) ms."""
    server, t0, t1 = served
    increases = server_steps(server, t0, t1, f"increase({MIXED}_bucket[2s])")
    per_bucket = np.diff(np.array([increases[le] for le in MIXED_BOUNDS]), axis=0, prepend=0.0).T
    seen = seconds_seen(per_bucket, MIXED_RATES)  # about 2 s a step: 80 in (0, 5 ms], 0.4 in (0.5, 0.75]

    columns = [i for i in PrometheusSource(url=server.url, metric=MIXED, start=str(t0), end=str(t1),
                                           step=STEP).items() if isinstance(i, Interval)]
    assert len(columns) == STEPS and not any(c.gap for c in columns)
    assert [c.stream.unit for c in columns] == ["microsec"] * STEPS
    carried = 0
    for c in columns:
        assert c.source_buckets is not None
        counts = c.source_buckets.counts
        carried += int(counts[3])
        assert int(c.counts.sum()) == int(counts.sum())
        assert c.counts[:12].sum() == 0, c.counts[:16].tolist()  # none below 2048 µs: (0, 5 ms] is [2.5, 5) ms
        assert c.counts[12:14].sum() == counts[0] and c.counts[20] == counts[3]  # 600 ms in [524, 1049) ms
    assert carried == round(per_bucket[:, 3].sum()) == round(0.2 * seen.sum())
