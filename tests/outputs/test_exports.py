"""Exports: Parquet read back with pyarrow equals the report's matrices; OpenMetrics text parses; live server."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import need_module

from latencymap.cli.main import main
from latencymap.core.model import Interval, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.outputs.metrics import (
    INTERVAL_FAMILY,
    MetricsServer,
    metrics_served,
    openmetrics_text,
    report_openmetrics,
    served,
)

FAMILY = "latencymap_latency_seconds"


def write_records(path: Path, intervals: list[dict[int, int]], label: str = "reads") -> Path:
    """bpf/microsec records, 2 s apart, whose intervals hold these counts (value = bucket low bound)."""
    cumulative: dict[int, int] = {}
    lines: list[str] = []
    for i, counts in enumerate([{}, *intervals]):
        for v, n in counts.items():
            cumulative[v] = cumulative.get(v, 0) + n
        lines += ["<begin record>", f"timestamp, microsec, {(1_700_000_000 + 2 * i) * 1_000_000}, t{i}",
                  "latencyunit, microsec", f"label, {label}", "datasource, bpf"]
        lines += [f"{v}, {c}" for v, c in sorted(cumulative.items())] or ["1, 0"]
        lines.append("<end record>")
    path.write_text("\n".join(lines) + "\n")
    return path


def report_json(*paths: Path) -> dict:
    result = CliRunner().invoke(main, ["report", "--format", "json", *map(str, paths)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_parquet_equals_report_matrices(tmp_path: Path, example_data: Path, fixtures: Path) -> None:
    pq = need_module("pyarrow.parquet")
    systemtap = fixtures / "pylatencymap" / "test_SystemTap_data.txt"
    out = tmp_path / "r.parquet"
    result = CliRunner().invoke(main, ["report", "--format", "parquet", "-o", str(out), str(example_data),
                                       str(systemtap)])
    assert result.exit_code == 0, result.output
    table = pq.read_table(out).to_pydict()
    report = report_json(example_data, systemtap)
    assert len(report["streams"]) == 2
    labels = np.array(table["label"])
    for stream in report["streams"]:
        rows = labels == stream["stream"]["label"]
        ncols, nb = stream["columns"], len(stream["buckets"])
        assert rows.sum() == ncols * nb
        for key in ("datasource", "unit"):
            assert set(np.array(table[key])[rows]) == {stream["stream"][key]}
        for key in ("frequency", "intensity"):
            got = np.array(table[key])[rows].reshape(ncols, nb)
            np.testing.assert_array_equal(got, np.array(stream[key]))
        lows = np.array(table["bucket_low_s"])[rows].reshape(ncols, nb)[0]
        assert lows.tolist() == [b["low"] for b in stream["buckets"]]
        counts = np.array(table["count"])[rows]
        assert counts.sum() == stream["total"]["events"]
        starts = np.array(table["start"])[rows].reshape(ncols, nb)[:, 0]
        assert starts[0] == stream["start"] and np.all(np.diff(starts) > 0)
        assert np.array(table["column"])[rows].reshape(ncols, nb)[:, 0].tolist() == list(range(ncols))


def test_parquet_needs_output(example_data: Path) -> None:
    result = CliRunner().invoke(main, ["report", "--format", "parquet", str(example_data)])
    assert result.exit_code == 2 and "-o FILE" in result.stderr


def _histograms(text: str) -> dict[str, list]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families[FAMILY].type == "histogram" and families[INTERVAL_FAMILY].type == "gaugehistogram"
    return {"samples": families[INTERVAL_FAMILY].samples, "totals": families[FAMILY].samples,
            "gauges": families["latencymap_interval_seconds"].samples}


def test_openmetrics_last_interval_parses(tmp_path: Path) -> None:
    label = 'say "hi" \\ to <them>\tnow'
    path = write_records(tmp_path / "x.txt", [{0: 1, 4: 7}, {1: 3, 8: 5, 64: 2}], label=label)
    result = CliRunner().invoke(main, ["report", "--format", "openmetrics", str(path)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.endswith("# EOF\n") and f"# TYPE {FAMILY} histogram" in text
    got = _histograms(text)
    samples = got["samples"]
    assert {s.labels["label"] for s in samples} == {clean_text(label)}
    assert {s.labels["unit"] for s in samples} == {"microsec"}
    buckets = [(s.labels["le"], s.value) for s in samples if s.name == f"{INTERVAL_FAMILY}_bucket"]
    # last interval only: [1,2)us: 3, [8,16)us: 5, [64,128)us: 2; `le` is the bucket's top in seconds
    assert buckets[-1] == ("+Inf", 10)
    values = dict(buckets)
    assert values[repr(2e-6)] == 3 and values[repr(16e-6)] == 8 and values[repr(128e-6)] == 10
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    count = next(s.value for s in samples if s.name == f"{INTERVAL_FAMILY}_gcount")
    total = next(s.value for s in samples if s.name == f"{INTERVAL_FAMILY}_gsum")
    assert count == 10
    assert total == pytest.approx((3 * 1.5 + 5 * 12 + 2 * 96) * 1e-6)  # estimated at bucket midpoints
    assert got["gauges"][0].value == pytest.approx(2.0)
    # the histogram proper counts since the start: both intervals, as counters do
    totals = dict((s.labels.get("le"), s.value) for s in got["totals"] if s.name.endswith("_bucket"))
    assert totals["+Inf"] == 18 and totals[repr(1e-6)] == 1 and totals[repr(16e-6)] == 16
    assert next(s.value for s in got["totals"] if s.name == f"{FAMILY}_sum") == \
        pytest.approx((0.5 * 1 + 7 * 6 + 3 * 1.5 + 5 * 12 + 2 * 96) * 1e-6)


def test_openmetrics_strict_parser(example_data: Path) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    text = CliRunner().invoke(main, ["report", "--format", "openmetrics", str(example_data)]).stdout
    families = list(text_string_to_metric_families(text))
    assert {f.name for f in families} >= {FAMILY, "latencymap_interval_seconds"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_metrics_server_serves_latest_interval() -> None:
    stream = StreamId("live", "bpf", "millisec")
    first = np.zeros(64, dtype=np.int64)
    first[2] = 4
    second = np.zeros(64, dtype=np.int64)
    second[3] = 9
    flow = iter([Interval(stream, 0.0, 1.0, first), Interval(stream, 1.0, 2.0, second)])
    server = MetricsServer(0)
    try:
        items = list(served(flow, server))
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
            body = resp.read().decode()
    finally:
        server.close()
    assert len(items) == 2
    got = _histograms(body)
    assert next(s.value for s in got["samples"] if s.name == f"{INTERVAL_FAMILY}_gcount") == 9  # the newest
    assert next(s.value for s in got["totals"] if s.name == f"{FAMILY}_count") == 13  # counters since the start
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


def test_metrics_served_closes_server() -> None:
    port = _free_port()
    with metrics_served(iter([]), port) as flow:
        assert list(flow) == []
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            assert resp.read().decode().endswith("# EOF\n")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_serve_metrics_port_in_use(example_data: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["view", "--plain", "--once", "--serve-metrics", str(port),
                                           str(example_data)])
    assert result.exit_code == 2 and "--serve-metrics" in result.stderr


def test_serve_metrics_view_runs(example_data: Path) -> None:
    result = CliRunner().invoke(main, ["view", "--plain", "--once", "--serve-metrics", str(_free_port()),
                                       str(example_data)])
    assert result.exit_code == 0, result.output
    assert "Frequency heat map" in result.stdout


def test_openmetrics_empty() -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from latencymap.core.accumulator import Accumulator

    for text in (openmetrics_text([]), report_openmetrics(Accumulator())):
        families = {f.name: (f.type, f.unit, f.samples) for f in text_string_to_metric_families(text)}
        assert families == {FAMILY: ("histogram", "seconds", []), INTERVAL_FAMILY: ("gaugehistogram", "seconds", []),
                            "latencymap_interval_seconds": ("gauge", "seconds", []),
                            "latencymap_interval_end_timestamp_seconds": ("gauge", "seconds", [])}


def scrape(port: int) -> dict[str, list]:
    """GET /metrics of a `--serve-metrics` server, parsed by prometheus_client's OpenMetrics parser."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def scrape_when(port: int, end: float, timeout: float = 30.0) -> dict[str, list]:
    """Scrape until the served interval is the one ending at `end` (epoch seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = scrape(port)
        except OSError:
            got = {}
        ends = [s.value for s in got.get("latencymap_interval_end_timestamp_seconds", [])]
        if ends == [end]:
            return got
        assert time.monotonic() < deadline, f"the server never served the interval ending at {end} (serves {ends})"
        time.sleep(0.1)


@pytest.mark.slow
def test_serve_metrics_scraped_while_the_view_reads_a_live_stream(tmp_path: Path) -> None:
    """`latencymap view --plain --serve-metrics PORT` on a pipe the test writes record by record."""
    port = _free_port()
    intervals = [{8: 5, 64: 2}, {1: 3, 8: 1, 512: 4}]  # per-interval counts, value = bucket low bound (bpf, µs)
    text = write_records(tmp_path / "live.txt", intervals, label="disk").read_text()
    records = [r + "<end record>\n" for r in text.split("<end record>\n")[:-1]]
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "view", "--plain", "--screen-delay", "0",
                             "--serve-metrics", str(port), "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        assert view.stdin is not None
        for i, counts in enumerate(intervals, start=1):
            view.stdin.write((records[0] if i == 1 else "") + records[i])  # the first record is a baseline
            view.stdin.flush()
            got = scrape_when(port, float(1_700_000_000 + 2 * i))
            series = {"label": "disk", "datasource": "bpf", "unit": "microsec"}
            so_far: dict[int, int] = {}
            for done in intervals[:i]:
                for v, n in done.items():
                    so_far[v] = so_far.get(v, 0) + n
            for family, g, held in ((INTERVAL_FAMILY, "g", counts), (FAMILY, "", so_far)):
                buckets = [s for s in got[family] if s.name == f"{family}_bucket"]
                assert all({k: s.labels[k] for k in series} == series for s in got[family])
                for s in buckets:  # cumulative: every event in a bucket whose top ([v, 2v) µs) is <= le
                    le = math.inf if s.labels["le"] == "+Inf" else float(s.labels["le"])
                    assert s.value == sum(n for v, n in held.items() if 2 * v * 1e-6 <= le * (1 + 1e-12)), s
                tops = sorted(float(s.labels["le"]) for s in buckets if s.labels["le"] != "+Inf")
                assert tops == [2.0**s * 1e-6 for s in range(63)]  # every slot's but the open top's, always
                value = {s.name: s.value for s in got[family] if not s.name.endswith("_bucket")}
                assert value[f"{family}_{g}count"] == sum(held.values())
                assert value[f"{family}_{g}sum"] == pytest.approx(sum(n * 1.5 * v * 1e-6 for v, n in held.items()))
            assert [s.value for s in got["latencymap_interval_seconds"]] == [2.0]
        view.stdin.close()
        assert view.wait(30) == 0, view.stderr.read() if view.stderr else ""
    finally:
        view.kill()
        view.wait(10)
    with pytest.raises(OSError):
        scrape(port)
