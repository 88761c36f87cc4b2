"""The OpenMetrics exposition: `--serve-metrics` serves what `report --format openmetrics` writes for the same input,
a rebinned stream's `_sum` and `_gsum` included (its source's exact sum, not its rows' midpoints); and the same
samples in the Prometheus text format 0.0.4 (`--format prometheus`), checked by the real promtool and Prometheus."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import need_binary

from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice, StreamId
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


DISK = StreamId("disk", "bpf", "microsec")


def _interval(slots: dict[int, int], k: int) -> Interval:
    """One second of `DISK` (k-th), `slots`' counts."""
    counts = np.zeros(NSLOTS, dtype=np.int64)
    for slot, n in slots.items():
        counts[slot] = n
    return Interval(DISK, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts)


def _les(text: str, family: str) -> list[str]:
    """The `le` labels of a family's `_bucket` lines, in order."""
    return re.findall(rf'^{family}_bucket{{[^}}]*le="([^"]+)"}}', text, re.MULTILINE)


def test_a_streams_le_set_is_the_same_in_every_exposition() -> None:
    """The `le` lines went up to the highest row holding events: a slower row made a new bucket (a new series to
    Prometheus, new bounds to any scraper) in the exposition served next. Every exposition of a stream, served or
    reported, either format, lists the same bounds: every slot's but the open top one's, and `+Inf`."""
    server = MetricsServer(0)
    texts = []
    try:
        for k, slots in enumerate(({4: 5}, {4: 3, 20: 2}, {})):
            server.update(_interval(slots, k))
            texts += [server.text(), server.text(openmetrics=False)]
    finally:
        server.close()
    acc = Accumulator()
    acc.add([_interval({4: 5}, 0)])
    texts += [report_openmetrics(acc), report_openmetrics(acc, openmetrics=False)]
    want = [repr(float(2.0**s * 1e-6)) for s in range(NSLOTS - 1)] + ["+Inf"]
    for text in texts:
        assert _les(text, FAMILY) == want and _les(text, INTERVAL_FAMILY) == want


def test_the_open_top_slot_is_counted_under_inf_only() -> None:
    """The top slot counts every value past its nominal bound too (a DoubleHistogram's 1e11 s and 5e13 s in a
    nanosecond stream): `le="9223372036.854776"` held them, a bound they are past. They are under `+Inf` only."""
    stream = StreamId("dh", "hdrhistogram", "nanosec")
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[31], counts[NSLOTS - 1] = 300, 6
    acc = Accumulator()
    acc.add([Interval(stream, 1_700_000_000.0, 1_700_000_001.0, counts)])
    got = samples(report_openmetrics(acc))
    buckets = {dict(labels)["le"]: v for (name, labels), v in got.items() if name == f"{FAMILY}_bucket"}
    assert buckets["+Inf"] == 306 and "9223372036.854776" not in buckets
    assert max(float(le) for le in buckets if le != "+Inf") == 2.0**62 * 1e-9
    assert {v for le, v in buckets.items() if le != "+Inf" and float(le) >= 2.0**31 * 1e-9} == {300}


def test_latencymap_scraping_its_own_exposition_keeps_the_interval_a_slower_row_came_in() -> None:
    """`report scrape` of a file latencymap rewrote (`--format prometheus`, `openmetrics`) as a slower row filled
    said `buckets changed (new le bounds)` and left that interval a gap: 21,119 events of a tag read as none."""
    from prometheus_support import OPENMETRICS_TYPE, TEXT_TYPE, Scripted

    from latencymap.sources.prometheus.scrape import ScrapeSource

    first, both = Accumulator(), Accumulator()
    first.add([_interval({10: 40}, 0)])
    both.add([_interval({10: 40}, 0), _interval({10: 30, 24: 7}, 1)])
    for openmetrics, ctype in ((False, TEXT_TYPE), (True, OPENMETRICS_TYPE)):
        endpoint = Scripted([(200, ctype, report_openmetrics(acc, openmetrics)) for acc in (first, both)])
        source = ScrapeSource(url=endpoint.url, metric=FAMILY, interval=0.001, count=2)
        try:
            items = list(source.items())
        finally:
            endpoint.close()
        said = [i.message for i in items if isinstance(i, Notice)]
        columns = [i for i in items if isinstance(i, Interval)]
        assert not [m for m in said if "buckets changed" in m], said
        assert [int(c.counts.sum()) for c in columns] == [37, 0], (openmetrics, said)  # then nothing new


@pytest.mark.slow
def test_prometheus_scraping_the_server_across_a_slower_row_keeps_its_rate(tmp_path: Path) -> None:
    """A real Prometheus scraping `--serve-metrics` while a slower row fills for the first time: that row's bucket was
    a new series, its first sample already counting every faster event, so `increase()` over the scrapes around it
    missed what came in that interval (the bucket under which every event lies read less than `+Inf`). Every bucket
    is a series from the first scrape on: over any window they rise together."""
    from prometheus_support import prometheus_or_skip, running_prometheus

    binary = prometheus_or_skip()
    server = MetricsServer(0)
    slow_le = repr(2.0**24 * 1e-6)
    window = f'{{label="disk",le="{slow_le}"}}', '{label="disk",le="+Inf"}'
    try:
        with running_prometheus(binary, tmp_path / "prom", [f"http://127.0.0.1:{server.port}/metrics"],
                                scrape_interval=0.5) as prom:
            for k, (slots, total) in enumerate((({10: 40}, 40), ({10: 30, 24: 900}, 970))):
                server.update(_interval(slots, k))
                prom.wait_until(f'{FAMILY}_count{{label="disk"}}', lambda r, n=total: bool(r)
                                and float(r[0]["value"][1]) == n)
            time.sleep(1.2)  # two more scrapes of the same counters
            at = time.time()  # both at one instant: `increase()` extrapolates to the window's end
            rises = [float(prom.get("/api/v1/query", {"query": f"increase({FAMILY}_bucket{labels}[1h])", "time": at})
                           ["data"]["result"][0]["value"][1]) for labels in window]
    finally:
        server.close()
    assert rises[0] == rises[1] and rises[1] > 900, rises
