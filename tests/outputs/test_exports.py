"""Exports: Parquet read back with pyarrow equals the report's matrices; OpenMetrics text parses; live server."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import need_module

from latencymap.cli.main import main
from latencymap.core.model import Interval, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.outputs.metrics import MetricsServer, metrics_served, openmetrics_text, report_openmetrics, served

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
    from prometheus_client.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families[FAMILY].type == "histogram"
    return {"samples": families[FAMILY].samples, "gauges": families["latencymap_interval_seconds"].samples}


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
    buckets = [(s.labels["le"], s.value) for s in samples if s.name == f"{FAMILY}_bucket"]
    # last interval only: [1,2)us: 3, [8,16)us: 5, [64,128)us: 2; `le` is the bucket's top in seconds
    assert buckets[-1] == ("+Inf", 10)
    values = dict(buckets)
    assert values[repr(2e-6)] == 3 and values[repr(16e-6)] == 8 and values[repr(128e-6)] == 10
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    count = next(s.value for s in samples if s.name == f"{FAMILY}_count")
    total = next(s.value for s in samples if s.name == f"{FAMILY}_sum")
    assert count == 10
    assert total == pytest.approx((3 * 1.5 + 5 * 12 + 2 * 96) * 1e-6)  # estimated at bucket midpoints
    assert got["gauges"][0].value == pytest.approx(2.0)


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
    samples = _histograms(body)["samples"]
    count = next(s.value for s in samples if s.name == f"{FAMILY}_count")
    assert count == 9
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
    assert openmetrics_text([]).endswith("# EOF\n")
    from latencymap.core.accumulator import Accumulator

    assert report_openmetrics(Accumulator()).count("\n") > 2
