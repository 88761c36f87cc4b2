"""The file exporter's OTLP/JSON lines, written by the SDK's own file exporter: sniffed, counted, long lines whole."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.json.file.metric_exporter import FileMetricExporter
from otlp_support import TEMPORALITY, by_label, messages, slot_totals

from latencymap.cli import main as cli
from latencymap.core.buckets import bin_values
from latencymap.flow.inputs import MAX_LINE, SNIFF_LINES, choose_format, read_input
from latencymap.plugins import Item, Registry, TextFormat, load_registry
from latencymap.sources.otlp.file_format import OtlpJsonFormat

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
FIXTURE = FIXTURES / "otlp" / "checkout_metrics.jsonl"


def write_with_sdk(path: Path, temporality: str, routes: int = 2, exports: int = 3,
                   seed: int = 5) -> dict[str, list[float]]:
    """Exponential histograms (us) per route written by the SDK's file exporter; the values recorded per route."""
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource

    exporter = FileMetricExporter(path, preferred_temporality={Histogram: TEMPORALITY[temporality]})
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "files"}),
                             views=[View(instrument_name="*", aggregation=ExponentialBucketHistogramAggregation())])
    histogram = provider.get_meter("t").create_histogram("io.latency", unit="us")
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {f"/r{n}": [] for n in range(routes)}
    for _ in range(exports):
        for route, series in values.items():
            for value in rng.lognormal(4.0, 1.5, 20).tolist():
                histogram.record(value, {"route": route})
                series.append(value)
        reader.force_flush()
    provider.shutdown()
    return values


def items_of(path: Path) -> list[Any]:
    return list(read_input(str(path), load_registry()))


def head(path: Path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return list(itertools.islice(fh, SNIFF_LINES))


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_sdk_file_is_detected_and_every_value_counted_exactly(tmp_path: Path, temporality: str) -> None:
    path = tmp_path / "metrics.jsonl"
    values = write_with_sdk(path, temporality)
    assert choose_format(load_registry(), head(path), str(path), None) is OtlpJsonFormat
    streams = by_label(items_of(path))
    for route, series in values.items():
        columns = streams[f"files/io.latency{{route={route}}}"]
        np.testing.assert_array_equal(slot_totals(columns), bin_values(np.array(series))[0])


def test_bad_lines_are_named_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    values = write_with_sdk(path, "delta")
    lines = path.read_text().splitlines(keepends=True)
    lines[1:1] = ["<html>collector restarted</html>\n", '{"resourceSpans": []}\n', '{"oops": 1}\n',
                  lines[1][: len(lines[1]) // 2] + "\n", "[" * 2000 + "]" * 2000 + "\n"]
    path.write_text("".join(lines))
    items = items_of(path)
    said = messages(items)
    assert f"{path}: line 2: invalid JSON at column 1; expected one OTLP/JSON metrics request" in said[0]
    assert said[1] == f"{path}: line 3: traces are not metrics; skipped"
    assert f"{path}: line 4: a JSON object with keys 'oops', expected \"resourceMetrics\"" in said[2]
    cut = len(lines[4]) - 1  # a line cut short said "invalid JSON at column 1234"
    assert said[3] == (f"{path}: line 5: the line ends early, inside its JSON (cut short after {cut:,} characters: the "
                       'request is not closed); expected one OTLP/JSON metrics request ({"resourceMetrics": [...]}) '
                       "per line")
    # nested deeper than json.loads follows: a RecursionError lost the whole report
    assert said[4].startswith(f"{path}: line 6: invalid JSON (nested too deeply to decode); expected one OTLP/JSON")
    assert len(said) == 5
    total = sum(int(c.counts.sum()) for cs in by_label(items).values() for c in cs)
    assert total == sum(len(v) for v in values.values())


def test_a_line_longer_than_other_formats_read_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    values = write_with_sdk(path, "cumulative", routes=300, exports=2)
    assert max(len(line) for line in path.read_text().splitlines()) > 4 * MAX_LINE
    streams = by_label(items_of(path))
    assert len(streams) == 300
    assert sum(int(slot_totals(c).sum()) for c in streams.values()) == sum(len(v) for v in values.values())


class _Probe(TextFormat):
    """Claims inputs that start with PROBE and remembers the longest line it was given."""

    name = "probe"
    summary = "test probe"
    longest = 0

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return bool(head) and head[0].startswith("PROBE")

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        for line in lines:
            _Probe.longest = max(_Probe.longest, len(line.rstrip("\n")))
        return iter(())


def test_other_formats_still_get_lines_cut_at_max_line(tmp_path: Path) -> None:
    path = tmp_path / "probe.txt"
    path.write_text("PROBE\n" + "x" * (3 * MAX_LINE) + "\nend\n")
    registry = Registry(formats={"probe": _Probe, "otlp-json": OtlpJsonFormat})
    list(read_input(str(path), registry))
    assert _Probe.longest == MAX_LINE


def test_no_other_fixture_looks_like_otlp() -> None:
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".txt", ".json", ".trc")]
    assert others
    assert not [p for p in others if OtlpJsonFormat.sniff(head(p))]


def test_fixture_report_counts_match_the_exporters_last_cumulative_points() -> None:
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    totals = {s["stream"]["label"]: s["total"]["events"] for s in json.loads(result.output)["streams"]}
    last = json.loads(FIXTURE.read_text().splitlines()[-1])
    expected = {}
    for metric in last["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]:
        for point in (metric.get("histogram") or metric["exponentialHistogram"])["dataPoints"]:
            attrs = ",".join(sorted(f"{a['key']}={a['value']['stringValue']}" for a in point["attributes"]))
            expected[f"checkout/{metric['name']}{{{attrs}}}"] = int(point["count"])
    assert totals == expected


def write_two_views(path: Path, temporality: str) -> None:
    """Ten exports of one instrument under two Views, by the SDK's file exporter: two points of one series a line."""
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource

    reader = PeriodicExportingMetricReader(
        FileMetricExporter(path, preferred_temporality={Histogram: TEMPORALITY[temporality]}),
        export_interval_millis=3_600_000)
    views = [View(instrument_name="rpc.duration", aggregation=ExponentialBucketHistogramAggregation(max_size=20)),
             View(instrument_name="*.duration", aggregation=ExponentialBucketHistogramAggregation())]
    provider = MeterProvider(metric_readers=[reader], views=views, resource=Resource.create({"service.name": "v"}))
    histogram = provider.get_meter("t").create_histogram("rpc.duration", unit="ms")
    for k in range(10):
        for value in (5.0 + k, 20.0, 80.0 - k):
            histogram.record(value)
        reader.force_flush()
    provider.shutdown()


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_a_file_of_two_views_of_one_instrument_counts_every_skipped_point(tmp_path: Path, temporality: str) -> None:
    """hn1's defect 5 as the file exporter writes it: each line holds two points of one series (two Views); the
    report said `skipped_records: 1` (delta) or 0 (cumulative). Each second point counts; two lines say them."""
    path = tmp_path / "views.jsonl"
    write_two_views(path, temporality)
    exports = sum(1 for line in path.read_text().splitlines() if "rpc.duration" in line)
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (stream,) = doc["streams"]
    assert stream["total"]["events"] == 30 and exports >= 10
    assert doc["errors"]["skipped_records"] == exports
    assert len(doc["errors"]["messages"]) == 2 and doc["errors"]["messages"][1].endswith(f"({exports} in all); skipped")


def test_a_run_stopped_before_the_files_end_still_says_the_count_of_points_skipped(tmp_path: Path) -> None:
    """The count of a series' further skipped points was said only at the input's end: `report --count 4` of a
    two-Views file said the first one and never the 2 after it. The run's end says them (stderr), however it ends;
    read whole, the file says them once, in the report, and nothing more at the end."""

    path = tmp_path / "views.jsonl"
    write_two_views(path, "delta")
    command = [sys.executable, "-m", "latencymap", "report", str(path)]
    # a pipe (live: `--count` stops it; a file is read to its end, what is past the count left out)
    stopped = subprocess.run([*command[:-1], "--count", "4", "-"], input=path.read_text(), capture_output=True,
                             text=True, timeout=60, check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stderr.splitlines()[-1] == ("latencymap: <stdin>: line 3: v/rpc.duration: 2 more points not after "
                                               "the previous one (3 in all); skipped")
    whole = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert whole.returncode == 0 and "more points" not in whole.stderr and "9 more points" in whole.stdout


def workers_file(tmp_path: Path) -> tuple[Path, int]:
    """A file of delta points of pre-forked workers with one resource (the same service.instance.id), each with the
    SDK's file exporter, appended so that a worker's line lands after a line another worker collected later; and
    how many values the workers recorded."""
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.name": "w", "service.instance.id": "host-1"})
    own = [tmp_path / f"worker{k}.jsonl" for k in range(4)]
    readers = [PeriodicExportingMetricReader(FileMetricExporter(p, preferred_temporality={Histogram: TEMPORALITY[
        "delta"]}), export_interval_millis=3_600_000) for p in own]
    providers = [MeterProvider(metric_readers=[r], resource=resource) for r in readers]
    histograms = [p.get_meter("t").create_histogram("rpc.duration", unit="ms") for p in providers]
    recorded = 0
    for k in range(5):
        for histogram, reader in zip(histograms, readers, strict=True):  # collected in worker order ...
            for value in range(1, 11 + k):
                histogram.record(float(value))
                recorded += 1
            reader.force_flush()
    for provider in providers:
        provider.shutdown()
    lines = [p.read_text().splitlines() for p in own]
    path = tmp_path / "all.jsonl"
    with path.open("w") as out:  # ... appended in the reverse order, each round
        for k in range(5):
            out.writelines(f"{worker[k]}\n" for worker in reversed(lines))
    return path, recorded


def test_workers_of_one_resource_appending_to_one_file_are_each_counted(tmp_path: Path) -> None:
    """h3's finding 4 in a file: a worker's line lands after a line another worker collected later. Those points
    were skipped as "not after the previous one" (7,800 of 8,000). Every one counts."""
    path, recorded = workers_file(tmp_path)
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [s["total"]["events"] for s in doc["streams"]] == [recorded]
    assert doc["errors"]["skipped_records"] == 0
    assert len(doc["errors"]["messages"]) == 1 and "delta points that overlap" in doc["errors"]["messages"][0]


@pytest.mark.parametrize("name", ["run.lmr", "run.lmr.zst"])
def test_a_recording_of_workers_of_one_resource_reads_back_as_the_one_stream_it_was(tmp_path: Path,
                                                                                   name: str) -> None:
    """The workers' series is one stream, its columns overlapping; recorded, a column that ends before one written
    earlier read back as another run, shown apart: four streams of 60 events where the live view had one of 240.
    Such a record is flagged `overlap` and goes on in its stream: the report of the recording is the file's."""
    path, recorded = workers_file(tmp_path)
    recording = tmp_path / name
    made = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--record", str(recording),
                           str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr

    def report(of: Path) -> dict[str, Any]:
        result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(of)])
        assert result.exit_code == 0, result.output
        doc: dict[str, Any] = json.loads(result.output)
        return doc

    live, again = report(path), report(recording)
    assert [(s["stream"]["label"], s["total"]["events"], s["columns"]) for s in again["streams"]] == \
        [(s["stream"]["label"], s["total"]["events"], s["columns"]) for s in live["streams"]] == \
        [("w/rpc.duration", recorded, 20)]
    assert again["streams"][0]["total"] == live["streams"][0]["total"]
    assert not [m for m in again["errors"]["messages"] if "goes back" in m]


def test_a_file_without_a_latency_histogram_says_why_and_fails(tmp_path: Path) -> None:
    """h3's finding 7b: a file whose only histogram is in bytes (`By`) said "No data." with exit code 0 and 0
    skipped. It holds nothing readable as latency: it says why, and ends as an input with no record read does."""
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    path = tmp_path / "sizes.jsonl"
    reader = PeriodicExportingMetricReader(FileMetricExporter(path, preferred_temporality={Histogram: TEMPORALITY[
        "delta"]}), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "s"}))
    sizes = provider.get_meter("t").create_histogram("http.request.body.size", unit="By")
    for k in range(3):
        sizes.record(100.0 * (k + 1))
        reader.force_flush()
    provider.shutdown()
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["streams"] == [] and doc["errors"]["skipped_records"] == 1
    assert doc["errors"]["messages"][-1] == (f"{path}: no latency histogram in it: metric 'http.request.body.size' "
                                             "has unit 'By', not a time unit latencymap reads (s, ms, us, ns, min, "
                                             "h, d); skipped")
    assert result.stderr.startswith(f"latencymap: {path}: no record could be read (1 skipped)"), result.stderr
