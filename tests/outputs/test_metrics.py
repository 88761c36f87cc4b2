"""The OpenMetrics exposition: `--serve-metrics` serves what `report --format openmetrics` writes for the same input,
a rebinned stream's `_sum` and `_gsum` included (its source's exact sum, not its rows' midpoints); and the same
samples in the Prometheus text format 0.0.4 (`--format prometheus`), checked by the real promtool and Prometheus."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import need_binary

from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.metrics import (
    CONTENT_TYPE,
    FAMILY,
    INTERVAL_FAMILY,
    TEXT_CONTENT_TYPE,
    MetricsServer,
    report_openmetrics,
    served,
)
from latencymap.plugins import load_registry

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REGISTRY = load_registry()
#: Differs by design: a served stream whose input has no dates is timed by the clock.
END = "latencymap_interval_end_timestamp_seconds"
PROMETHEUS_HINT = "apt-get install prometheus (.ci/install-system.sh)"
#: Inputs of several streams: rebinned (OTLP), HdrHistogram (tags), PyLatencyMap records of Oracle's waits.
EXPOSED = [FIXTURES / "otlp" / "checkout_metrics.jsonl", FIXTURES / "hdrhistogram" / "java" / "int_tagged_us.hlog",
           FIXTURES / "pylatencymap" / "test_SystemTap_data.txt"]
#: Prometheus 2.42's Accept header when it scrapes (it prefers OpenMetrics).
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, labels): value} of an exposition, read by prometheus_client's strict parser."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name != END}


def text_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, labels): value} of a Prometheus text format 0.0.4 exposition, read by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name != END}


def reported(fmt: str, path: Path) -> str:
    """`latencymap report --format FMT PATH`'s output."""
    result = CliRunner().invoke(main, ["report", "--format", fmt, str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


def promtool_check(promtool: str, text: str) -> subprocess.CompletedProcess[str]:
    """`promtool check metrics` (it reads the Prometheus text format 0.0.4, and lints) of an exposition."""
    return subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("path", EXPOSED, ids=lambda p: p.name)
def test_prometheus_format_passes_promtool_with_the_openmetrics_samples(path: Path) -> None:
    """node_exporter's textfile collector and `promtool check metrics` read the text format 0.0.4 only, which has no
    gauge histogram: they rejected `--format openmetrics` (`unknown metric type "gaugehistogram"`), and there was no
    other. `--format prometheus` passes promtool's parse and lint, and holds the same samples."""
    promtool = need_binary("promtool", remedy=PROMETHEUS_HINT)
    openmetrics, text = reported("openmetrics", path), reported("prometheus", path)
    rejected = promtool_check(promtool, openmetrics)
    assert rejected.returncode == 1 and 'unknown metric type "gaugehistogram"' in rejected.stderr, rejected
    checked = promtool_check(promtool, text)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    assert not [line for line in text.splitlines() if line.startswith(("# UNIT", "# EOF"))]
    assert f"# TYPE {INTERVAL_FAMILY} histogram\n" in text and "gaugehistogram" not in text
    assert text_samples(text) == samples(openmetrics)


def test_the_server_serves_the_text_format_to_a_scraper_that_asks_for_it_only() -> None:
    promtool = need_binary("promtool", remedy=PROMETHEUS_HINT)
    server = MetricsServer(0)
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[[4, 7]] = [3, 2]
    server.update(Interval(StreamId("disk", "bpf", "microsec"), 1_700_000_000.0, 1_700_000_002.0, counts))
    got = {}
    try:
        for accept in (None, "text/plain;version=0.0.4", PROMETHEUS_ACCEPT, "*/*"):
            request = urllib.request.Request(f"http://127.0.0.1:{server.port}/metrics",
                                             headers={"Accept": accept} if accept else {})
            with urllib.request.urlopen(request, timeout=10) as resp:
                got[accept] = (resp.headers["Content-Type"], resp.read().decode())
    finally:
        server.close()
    assert {k: v[0] for k, v in got.items()} == {None: CONTENT_TYPE, "text/plain;version=0.0.4": TEXT_CONTENT_TYPE,
                                                 PROMETHEUS_ACCEPT: CONTENT_TYPE, "*/*": CONTENT_TYPE}
    text = got["text/plain;version=0.0.4"][1]
    assert promtool_check(promtool, text).returncode == 0
    assert text_samples(text) == samples(got[None][1])


@pytest.mark.slow
def test_prometheus_reads_the_text_format_as_it_reads_openmetrics(tmp_path: Path) -> None:
    """A real Prometheus scraping the two reports of one input (as two jobs) stores the same series, and
    `histogram_quantile` reads the latest interval's buckets of the text format as those of the gauge histogram."""
    from prometheus_support import OPENMETRICS_TYPE, TEXT_TYPE, Scripted, prometheus_or_skip, running_prometheus

    binary = prometheus_or_skip()
    path = EXPOSED[1]  # two tags, whose latest intervals hold events
    endpoints = [Scripted([(200, TEXT_TYPE, reported("prometheus", path))]),
                 Scripted([(200, OPENMETRICS_TYPE, reported("openmetrics", path))])]
    try:
        with running_prometheus(binary, tmp_path / "prom", [e.url for e in endpoints], scrape_interval=0.5) as prom:
            for query in (f"histogram_quantile(0.9, {INTERVAL_FAMILY}_bucket)", f"{INTERVAL_FAMILY}_gcount",
                          f"{INTERVAL_FAMILY}_gsum", f"histogram_quantile(0.5, {FAMILY}_bucket)"):
                result = prom.wait_until(query, lambda r: {x["metric"].get("job") for x in r} == {"t0", "t1"})
                by_job: dict[str, dict[str, float]] = {}
                for x in result:
                    by_job.setdefault(x["metric"]["job"], {})[x["metric"]["label"]] = float(x["value"][1])
                assert by_job["t0"] == by_job["t1"] and len(by_job["t0"]) == 2, (query, by_job)
                assert all(math.isfinite(v) and v > 0 for v in by_job["t0"].values()), (query, by_job)
    finally:
        for endpoint in endpoints:
            endpoint.close()


def served_and_reported(path: Path, intervals: int | None = None) -> tuple[dict, dict]:
    """The exposition served while the input is read (its first `intervals` only, where given), and the report's of
    the same."""
    acc = Accumulator()
    server = MetricsServer(0)
    flow = input_flow([str(path)], REGISTRY)
    if intervals is not None:
        flow = itertools.islice((i for i in flow if isinstance(i, Interval)), intervals)
    try:
        acc.add(served(flow, server))
        text = server.text()
    finally:
        server.close()
    return samples(text), samples(report_openmetrics(acc))


def otlp_sums(path: Path) -> dict[str, float]:
    """{route or operation: seconds} of an OTLP JSON file of cumulative points from the process' start: the last
    point's `sum` is the whole run's (read here with json)."""
    last: dict[str, float] = {}
    for line in path.read_text().splitlines():
        for rm in json.loads(line)["resourceMetrics"]:
            for metric in (m for sm in rm["scopeMetrics"] for m in sm["metrics"]):
                scale = {"ms": 1e-3, "s": 1.0}[metric["unit"]]
                for point in metric["exponentialHistogram" if "exponentialHistogram" in metric else "histogram"][
                        "dataPoints"]:
                    name = next(a["value"]["stringValue"] for a in point["attributes"]
                                if a["key"] in ("http.route", "db.operation.name"))
                    last[name] = point["sum"] * scale
    return last


def test_served_sum_of_a_rebinned_stream_is_the_sources_and_the_reports() -> None:
    path = FIXTURES / "otlp" / "checkout_metrics.jsonl"
    got, want = served_and_reported(path)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12), key
    sums = {dict(labels)["label"]: v for (name, labels), v in got.items() if name == f"{FAMILY}_sum"}
    truth = otlp_sums(path)
    assert len(sums) == len(truth) == 3
    for label, seconds in sums.items():
        name = next(k for k in truth if k in label)
        assert math.isclose(seconds, truth[name], rel_tol=1e-9), label  # /pay: 72.20 s (the rows said 98.54)


def test_served_newest_interval_of_a_rebinned_stream_is_the_reports() -> None:
    got, want = served_and_reported(FIXTURES / "otlp" / "checkout_metrics.jsonl", intervals=15)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12), key
    gsums = [v for (name, _), v in got.items() if name == f"{INTERVAL_FAMILY}_gsum"]
    assert len(gsums) == 3 and all(v > 0 for v in gsums)  # newest columns with events: their sums compared too


def test_served_sum_of_an_hgrm_is_its_mean_times_its_count() -> None:
    got, want = served_and_reported(FIXTURES / "hdrhistogram" / "service_ms.hgrm")
    assert got == want
    (total,) = (v for (name, _), v in got.items() if name == f"{FAMILY}_sum")
    (count,) = (v for (name, _), v in got.items() if name == f"{FAMILY}_count")
    assert count == 19_000 and math.isclose(total, 0.771e-3 * 19_000, rel_tol=1e-3)  # its footer: Mean = 0.771 ms


def test_report_counters_cover_the_columns_a_history_limit_dropped(tmp_path: Path) -> None:
    """`report --format openmetrics --history 2` of 5 intervals of 10 events: the counters are the whole input's
    (50 events, every bucket, `_sum`), the gauge histogram the last interval's."""
    from click.testing import CliRunner

    from latencymap.cli.main import main

    t0 = 1_700_000_000_000_000
    path = tmp_path / "five.txt"
    path.write_text("".join(f"<begin record>\ntimestamp, microsec, {t0 + (i + 1) * 1_000_000}, x\n"
                            f"start, microsec, {t0 + i * 1_000_000}\nlatencyunit, microsec\nlabel, s\n"
                            "counts, interval\n8, 10\n<end record>\n" for i in range(5)))
    whole, kept = (samples(CliRunner().invoke(main, ["report", "--format", "openmetrics", *extra, str(path)]).stdout)
                   for extra in ([], ["--history", "2"]))
    assert kept == whole
    counted = {name: v for (name, _), v in kept.items()}
    assert counted[f"{FAMILY}_count"] == 50 and counted[f"{INTERVAL_FAMILY}_gcount"] == 10
    assert math.isclose(counted[f"{FAMILY}_sum"], 5 * counted[f"{INTERVAL_FAMILY}_gsum"])
