"""`latencymap prometheus` with a step shorter than two scrapes, against a real Prometheus server (Debian's
`prometheus`, on loopback): a classic histogram backfilled with promtool, 5 s apart, whose counts are known exactly, and
a live native histogram scraped every second."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_support import NativeExporter, PrometheusServer, prometheus_binary, running_prometheus
from skips_support import skip_missing

from latencymap.core.model import Interval, Notice
from latencymap.sources.prometheus.api import promql_duration
from latencymap.sources.prometheus.query import PrometheusSource

pytestmark = pytest.mark.slow
CLASSIC = "req_seconds"
NATIVE = "job_latency_milliseconds"
SCRAPE_S = 5
RATE = 10  # the backfilled histogram's requests a second, each of 3 ms


def binaries() -> tuple[str, str]:
    binary, promtool = prometheus_binary(), shutil.which("promtool")
    if binary is None or promtool is None:
        skip_missing("prometheus", "apt-get install prometheus (.ci/install-system.sh)")
    return binary, promtool


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, int]]:
    """A server holding an hour of `req_seconds{job="api"}` samples 5 s apart, from t0 (three whole hours ago)."""
    binary, promtool = binaries()
    work = tmp_path_factory.mktemp("backfill")
    t0 = (int(time.time()) // 3600 - 3) * 3600
    lines = [f"# TYPE {CLASSIC} histogram"]
    for k in range(3600 // SCRAPE_S + 1):
        t, n = t0 + SCRAPE_S * k, RATE * SCRAPE_S * k
        lines += [f'{CLASSIC}_bucket{{le="{le}",job="api"}} {0 if le == "0.001" else n} {t}'
                  for le in ("0.001", "0.005", "0.01", "+Inf")]
        lines += [f'{CLASSIC}_count{{job="api"}} {n} {t}', f'{CLASSIC}_sum{{job="api"}} {n * 0.003:.6f} {t}']
    page = work / "backfill.om"
    page.write_text("\n".join([*lines, "# EOF"]) + "\n")
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(page), str(work / "data")],
                   check=True, capture_output=True, timeout=120)
    with running_prometheus(binary, work, []) as server:
        yield server, t0


def window(server: PrometheusServer, metric: str, start: float, end: float,
           step: float) -> tuple[list[Interval], list[str]]:
    items = list(PrometheusSource(url=server.url, metric=metric, start=str(start), end=str(end), step=step).items())
    return [i for i in items if isinstance(i, Interval)], [i.message for i in items if isinstance(i, Notice)]


@pytest.mark.parametrize("step", [7.0, 4.0, 2.5])
def test_a_step_shorter_than_two_scrapes_keeps_every_event_and_says_why(backfilled, step: float) -> None:
    """10 requests a second, 5 s apart: increase() over a 7 s step has a value only where it holds two samples (57 of
    142 columns were gaps, 5,950 of the window's 9,940 events counted, and nothing said why). Taken over the step
    and one scrape, scaled to the step, every column has its 10/s, the window all its events, and a note says so."""
    server, t0 = backfilled
    steps = int(1000 // step)
    start = t0 + 600
    columns, said = window(server, CLASSIC, start, start + steps * step, step)
    assert len(columns) == steps and not any(c.gap for c in columns)
    events = [int(c.counts.sum()) for c in columns]
    assert sum(events) == RATE * steps * step and max(abs(e - RATE * step) for e in events) <= 1
    spent = [c.source_buckets.total_time for c in columns if c.source_buckets is not None]
    assert len(spent) == steps and sum(t or 0.0 for t in spent) == pytest.approx(0.003 * RATE * steps * step)
    (note,) = [m for m in said if "apart" in m]
    assert f"the samples of {CLASSIC} are 5s apart, so a {step:g}s step holds two of them only in some" in note
    assert f"increase() over the last {promql_duration(max(step + SCRAPE_S, 2 * SCRAPE_S))}" in note
    assert note.endswith("use --step 10 or more for columns counted from their own samples only")


def test_a_step_of_two_scrapes_or_more_is_read_over_the_step(backfilled) -> None:
    """Steps of 10 s (two scrapes) and 60 s: each column is increase() over its own step, and nothing is said."""
    server, t0 = backfilled
    for step in (10.0, 60.0):
        columns, said = window(server, CLASSIC, t0 + 600, t0 + 1800, step)
        assert not said and not any(c.gap for c in columns)
        assert sum(int(c.counts.sum()) for c in columns) == RATE * 1200


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float, float]]:
    """A native histogram observing 50 values a second, scraped every second; (server, window start, end)."""
    binary, _ = binaries()
    exporter = NativeExporter(NATIVE, schema=2)
    stop = threading.Event()

    def drive() -> None:
        while not stop.is_set():
            exporter.observe(4.0)
            time.sleep(0.02)

    thread = threading.Thread(target=drive, daemon=True)
    server = PrometheusServer(binary, Path(tmp_path_factory.mktemp("native")), [exporter.url], scrape_interval=1.0,
                              native=True)
    try:
        server.wait_ready()
        thread.start()
        server.wait_until(f"count({NATIVE})", lambda r: bool(r))
        t0 = float(int(time.time()) + 3)
        t1 = t0 + 7 * 1.4
        time.sleep(max(0.0, t1 + 2.5 - time.time()))
        yield server, t0, t1
    finally:
        stop.set()
        thread.join(timeout=5)
        server.stop()
        exporter.close()


def test_a_native_histogram_with_a_step_shorter_than_two_scrapes_keeps_its_events(native) -> None:
    """1 s scrapes and 1.4 s steps: a native histogram's increases over 2.4 s, scaled to the step (PromQL multiplies
    its buckets), fill every column; the window's events are the server's own increase over it, within a scrape's."""
    server, t0, t1 = native
    columns, said = window(server, NATIVE, t0, t1, 1.4)
    assert len(columns) == 7 and not any(c.gap for c in columns)
    (note,) = [m for m in said if "apart" in m]
    assert "are 1s apart, so a 1.4s step" in note and "over the last 2400ms" in note
    whole_window = f"histogram_count(increase({NATIVE}[{promql_duration(t1 - t0)}]))"
    doc = server.get("/api/v1/query", {"query": whole_window, "time": t1})
    whole = float(doc["data"]["result"][0]["value"][1])
    assert abs(sum(int(c.counts.sum()) for c in columns) - whole) <= 50  # one scrape's events
