"""The OpenMetrics exposition: `--serve-metrics` serves what `report --format openmetrics` writes for the same input,
a rebinned stream's `_sum` and `_gsum` included (its source's exact sum, not its rows' midpoints)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.metrics import FAMILY, INTERVAL_FAMILY, MetricsServer, report_openmetrics, served
from latencymap.plugins import load_registry

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REGISTRY = load_registry()
#: Differs by design: a served stream whose input has no dates is timed by the clock.
END = "latencymap_interval_end_timestamp_seconds"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, labels): value} of an exposition, read by prometheus_client's strict parser."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name != END}


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
