"""`report --fail-if`: the gate grammar, and each gate passing and failing on fixtures that straddle it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from diagnosis_support import day_long_accumulator

from latencymap.cli.main import main
from latencymap.outputs.gates import METRICS, GateError, check_gates, parse_gate


def write_records(path: Path, intervals: list[dict[int, int]], label: str = "disk reads",
                  unit: str = "millisec") -> Path:
    """A PyLatencyMap file (bpf: value = bucket low bound) whose intervals, 1 s apart, hold these counts."""
    cumulative: dict[int, int] = {}
    lines: list[str] = []
    for i, counts in enumerate([{}, *intervals]):
        for value, n in counts.items():
            cumulative[value] = cumulative.get(value, 0) + n
        lines += ["<begin record>", f"timestamp, microsec, {(1_700_000_000 + i) * 1_000_000}, t{i}",
                  f"latencyunit, {unit}", f"label, {label}", "datasource, bpf"]
        lines += [f"{v}, {c}" for v, c in sorted(cumulative.items())] or ["1, 0"]
        lines.append("<end record>")
    path.write_text("\n".join(lines) + "\n")
    return path


def run_gates(path: Path, *gates: str) -> tuple[int, str]:
    args = ["report"]
    for g in gates:
        args += ["--fail-if", g]
    result = CliRunner().invoke(main, [*args, str(path)])
    return result.exit_code, result.stderr


@pytest.mark.parametrize(("gate", "passing", "failing"), [
    # p99 in [8, 16) ms vs 10% of the events in [32, 64) ms
    ("p99 > 20ms", {8: 1000}, {8: 900, 32: 100}),
    # the slowest bucket holds exactly half the time (80 x 1.5 ms vs 20 x 6 ms): 20% of the events, vs its slowest
    # 69% of the time (log-uniform: 61% of its events) holding the half: 24%
    ("tail.events_share <= 0.2", {1: 60, 4: 40}, {1: 80, 4: 20}),
    ("tail.events_share >= 24%", {1: 80, 4: 20}, {1: 60, 4: 40}),
    # one mode vs 95% at 1 ms and 5% at 64 ms
    ("bimodal", {1: 1000}, {1: 950, 64: 50}),
    ("bands >= 2", {1: 1000}, {1: 950, 64: 50}),
    ("p50 < 2ms", {4: 100}, {1: 100}),
    ("p999 >= 1s", {256: 100}, {1024: 100}),
    ("mean > 5000us", {2: 100}, {8: 100}),
    ("events < 50", {1: 50}, {1: 49}),
    ("rate > 100", {1: 100}, {1: 101}),
    ("time > 0.1 s", {1: 10}, {1: 100}),
    ("p99 > 20ms or bimodal", {8: 1000}, {1: 950, 64: 50}),
    ("p90 > 2ms and not bimodal", {1: 950, 64: 50}, {4: 1000}),
])
def test_gate_straddles(tmp_path: Path, gate: str, passing: dict[int, int], failing: dict[int, int]) -> None:
    ok = write_records(tmp_path / "ok.txt", [passing])
    bad = write_records(tmp_path / "bad.txt", [failing])
    code, err = run_gates(ok, gate)
    assert code == 0, err
    assert err == ""
    code, err = run_gates(bad, gate)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert f"'{gate}'" in lines[0] and "'disk reads'" in lines[0]


def test_one_line_per_failed_gate(tmp_path: Path) -> None:
    path = write_records(tmp_path / "x.txt", [{1: 950, 64: 50}])
    code, err = run_gates(path, "p99 > 20ms", "tail.events_share < 0.5", "bimodal", "p50 > 1s")
    assert code == 1
    lines = err.strip().splitlines()
    assert [line.split("'")[1] for line in lines] == ["p99 > 20ms", "tail.events_share < 0.5", "bimodal"]
    assert "p99 = " in lines[0] and "bimodal = true" in lines[2]


def test_report_still_written(tmp_path: Path) -> None:
    path = write_records(tmp_path / "x.txt", [{8: 10}])
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["report", "--format", "json", "-o", str(out), "--fail-if", "p50 > 1ms",
                                       str(path)])
    assert result.exit_code == 1
    assert out.read_text().startswith("{")


def test_every_stream_checked(tmp_path: Path) -> None:
    a = write_records(tmp_path / "a.txt", [{1: 100}], label="fast one")
    b = write_records(tmp_path / "b.txt", [{256: 100}], label="slow one")
    result = CliRunner().invoke(main, ["report", "--fail-if", "p50 > 100ms", str(a), str(b)])
    assert result.exit_code == 1
    assert "'slow one'" in result.stderr and "'fast one'" not in result.stderr


def test_no_data_fails(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("<begin record>\nlabel, x\n1, 5\n<end record>\n")
    code, err = run_gates(empty, "p99 > 1s")
    assert code == 1 and "no stream" in err


def test_empty_stream_compares_false_but_events_gate_catches_it(tmp_path: Path) -> None:
    path = write_records(tmp_path / "x.txt", [{}])
    assert run_gates(path, "p99 < 1s")[0] == 0
    assert run_gates(path, "events == 0")[0] == 1


@pytest.mark.parametrize(("expr", "pos", "expected"), [
    ("p99 >", 6, "expected a number"),
    ("p99 > 20", 9, "expected a unit"),
    ("p99 = 20ms", 5, "did you mean '=='"),
    ("latency > 3ms", 1, "expected a metric"),
    ("p99 20ms", 5, "expected a comparison"),
    ("(p99 > 1ms", 11, "expected ')'"),
    ("p99 > 1ms p50", 11, "expected 'and', 'or'"),
    ("events > 3ms", 11, "not a duration"),
    ("p50 > 5%", 8, "not a share"),
    ("tail.time_share > 0.5 $", 23, "unexpected character '$'"),
    ("", 1, "expected a gate expression"),
    ("__import__('os') > 1", 12, "unexpected character"),
    ("import > 1", 1, "expected a metric"),
])
def test_malformed(tmp_path: Path, expr: str, pos: int, expected: str) -> None:
    with pytest.raises(GateError) as info:
        parse_gate(expr)
    assert f"position {pos}" in str(info.value) and expected in str(info.value)
    path = write_records(tmp_path / "x.txt", [{1: 1}])
    code, err = run_gates(path, expr)
    assert code == 2
    assert "--fail-if" in err and expected in err and f"position {pos}" in err


def test_grammar_units_and_precedence() -> None:
    assert parse_gate("p99 > 1500µs").node.value == pytest.approx(1.5e-3)
    assert parse_gate("p99 > 1500us").node.value == pytest.approx(1.5e-3)
    assert parse_gate("P99 > 2e6ns").node.value == pytest.approx(2e-3)
    assert parse_gate("tail.events_share < 5%").node.value == pytest.approx(0.05)
    gate = parse_gate("bimodal or p50 > 1ms and p99 > 2ms")
    assert gate.node.op == "or" and gate.node.args[1].op == "and"
    assert gate.metrics() == ["bimodal", "p50", "p99"]


def test_check_gates_api() -> None:
    from latencymap.core.accumulator import Accumulator

    assert check_gates(Accumulator(), []) == []


def test_the_help_names_every_metric_of_the_grammar() -> None:
    text = " ".join(CliRunner().invoke(main, ["report", "--help"]).output.split())
    assert all(f" {m} " in text.replace(";", " ") for m in METRICS), text


def test_a_rebinned_streams_gate_checks_the_numbers_its_report_prints() -> None:
    """Every event of a Prometheus-style stream in its first bucket, (0, 5ms], with an exact sum: the report's p99
    (histogram_quantile over the source's buckets) and time (the sum) are what the gates compare, not the rows'."""

    from latencymap.core.accumulator import Accumulator
    from latencymap.core.model import Interval, SourceBuckets, StreamId
    from latencymap.core.rebin import rebin_counts
    from latencymap.outputs.report import build_report

    bounds, held = (5.0, 10.0, float("inf")), [100, 0, 0]
    stream = StreamId("svc", "prometheus", "millisec")
    acc = Accumulator()
    acc.add([Interval(stream, 10.0 * k, 10.0 * (k + 1), rebin_counts(list(bounds), held),
                      source_buckets=SourceBuckets(bounds, np.array(held), 0.3)) for k in range(3)])
    total = build_report(acc)["streams"][0]["total"]
    assert total["p99_s"] == pytest.approx(0.00495) and total["time_s"] == pytest.approx(0.9)
    gates = [parse_gate(g) for g in ("p99 > 4.96ms", "time > 0.91s", "mean > 3.01ms")]
    assert check_gates(acc, gates) == []
    failed = check_gates(acc, [parse_gate("p99 > 4.9ms and time > 0.89s")])
    assert len(failed) == 1 and "p99 = 4.95ms" in failed[0] and "time = 0.9s" in failed[0]  # the thresholds' units


def test_the_helps_tail_gate_fails_only_on_a_heavy_tail(tmp_path: Path) -> None:
    """`tail.events_share < 5%` (the example of `report --help` and the README): half of the time spent by under 5%
    of the events. A steady stream and a stream with no events pass it; `tail.time_share` is that half: 50%."""
    gate = "tail.events_share < 5%"
    steady = write_records(tmp_path / "steady.txt", [{1: 400, 2: 500, 4: 100}] * 3)
    heavy = write_records(tmp_path / "heavy.txt", [{1: 990, 1024: 10}] * 3)
    empty = write_records(tmp_path / "empty.txt", [{}] * 3)
    assert run_gates(steady, gate) == (0, "")
    assert run_gates(empty, gate) == (0, "")
    code, err = run_gates(heavy, gate)  # 1% of the events at 1-2 s hold 92% of the time: their slowest half, half
    assert code == 1 and "tail.events_share = 0.462%" in err
    assert run_gates(steady, "tail.time_share > 50%")[0] == 0
    assert run_gates(steady, "tail.time_share == 50%")[0] == 1
    code, err = run_gates(empty, "not tail.events_share < 5%")
    assert code == 1 and "tail.events_share = -" in err  # undefined, not 0%


def test_events_compare_exactly_past_2_53(tmp_path: Path) -> None:
    """A stream of 2**53 + 1 events (the hunter's `huge_diff.txt`): `events == 9007199254740993` holds and
    `events == 9007199254740992` does not (as floats both were 2**53); a number with a fraction still compares."""
    path = write_records(tmp_path / "huge.txt", [{256: 2**53 + 1}], unit="microsec")
    assert run_gates(path, "events == 9007199254740993")[0] == 1
    assert run_gates(path, "events == 9007199254740992")[0] == 0
    assert run_gates(path, "events > 9007199254740992")[0] == 1
    assert run_gates(path, "events < 9007199254740993.5")[0] == 1
    assert parse_gate("events > 9007199254740993").node.value == 2**53 + 1


def test_gates_on_a_day_long_stream_hold_no_dense_matrix_of_its_columns() -> None:
    """`--fail-if` on a day of one-second columns reads the history a chunk at a time, as the report does: one dense
    (86,400 x 64) matrix of counts and one of times would be 88 MB."""
    import tracemalloc


    n = 86_400
    acc = day_long_accumulator(n)
    tracemalloc.start()
    try:
        failed = check_gates(acc, [parse_gate("p99 > 1us"), parse_gate("bimodal or events < 1")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(failed) == 1 and "p99" in failed[0]
    assert peak < 20e6


def test_a_percentile_in_the_open_top_bucket_gates_as_its_lower_bound_and_is_written_so(tmp_path: Path) -> None:
    """p99 in the open top bucket, its values not known: the report gives it as the bucket's low, a lower bound. A
    gate compares it as that bound, past any threshold, and its failure line writes it `≥`, as the report does."""
    path = write_records(tmp_path / "top.txt", [{1: 980, 2**62: 20}], unit="nanosec")
    code, err = run_gates(path, "p99 > 20ms", "p99 < 20ms", "p50 > 1ms")
    assert code == 1
    assert err.splitlines() == ["latencymap: gate failed: 'p99 > 20ms' on stream 'disk reads': p99 = ≥53,376 days"]


def write_raw(path: Path, values: list[float], timestamps: bool = True) -> Path:
    """Raw latencies in µs, one a line, each after its time in seconds (none: read by arrival)."""
    path.write_text("".join(f"{k * 0.5} {v}\n" if timestamps else f"{v}\n" for k, v in enumerate(values)))
    return path


@pytest.mark.parametrize("threshold", ["100us", "100µs", "0.1ms", "100000ns", "0.0001s", "1e-4 s"])
def test_a_gate_at_the_boundary_holds_whatever_unit_it_is_written_in(tmp_path: Path, threshold: str) -> None:
    """Every value 100 µs: p99 is 100 µs, 9.999999999999999e-05 s in floats, and 0.1 ms is 0.0001 s: `>=` held for
    `100us` and not for `0.1ms`. Numbers within one part in 10^9 compare equal."""
    path = write_raw(tmp_path / "flat.txt", [100.0] * 50)
    for op, fails in ((">=", True), ("<=", True), ("==", True), (">", False), ("<", False), ("!=", False)):
        code, err = run_gates(path, f"p99 {op} {threshold}")
        assert code == (1 if fails else 0), (op, err)


def _source_stream(unit: str, bounds: tuple[float, ...], held: list[int], seen: tuple[float, float] | None = None):
    """An accumulator of one Prometheus-style stream (in `unit`) whose buckets hold `held`, 3 intervals of it."""
    from latencymap.core.accumulator import Accumulator
    from latencymap.core.model import Interval, SourceBuckets, StreamId
    from latencymap.core.rebin import rebin_counts

    acc = Accumulator()
    stream = StreamId("svc", "otlp" if seen else "prometheus", unit)
    extremes = None
    if seen is not None:
        extremes = np.full((2, 64), np.nan)
        extremes[0, 0], extremes[1, -1] = seen
    acc.add([Interval(stream, 10.0 * k, 10.0 * (k + 1), rebin_counts(list(bounds), held),
                      source_buckets=SourceBuckets(bounds, np.array(held), 1.0),
                      **({"extremes": extremes} if extremes is not None else {})) for k in range(3)])
    return acc


def test_a_percentile_on_a_source_bound_in_microseconds_compares_as_it_is_written() -> None:
    """Buckets in µs: p90 on the bound 100,000 µs is 0.09999999999999999 s; `p90 >= 100ms`, `>= 0.1s` held not,
    `>= 100000us` did."""
    acc = _source_stream("microsec", (50_000.0, 100_000.0, 200_000.0), [0, 90, 10])
    for threshold in ("100ms", "0.1s", "100000us"):
        assert len(check_gates(acc, [parse_gate(f"p90 >= {threshold}")])) == 1
        assert len(check_gates(acc, [parse_gate(f"p90 == {threshold}")])) == 1
        assert check_gates(acc, [parse_gate(f"p90 < {threshold}")]) == []


def test_a_percentile_in_the_sources_inf_bucket_is_a_lower_bound_and_a_gate_past_it_cannot_tell() -> None:
    """A prometheus_client histogram up to le=0.1 with 30% of requests at 200-400 ms (the hunter's `promsrv.py`),
    scraped by `report scrape` on loopback: p90/p99/p999 are only `≥100ms` (histogram_quantile's largest finite
    bound), as text and JSON `open` say; `p99 > 150ms` passed on them, whatever the truth (about 390 ms). A gate that
    every value from the bound up decides still holds or not; one past it fails, saying it cannot tell."""
    import threading

    from prometheus_support import Exporter

    exporter = Exporter(name="req_duration_seconds", labels=(), buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                           0.1), form="text")
    rng = np.random.default_rng(2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.wait(0.02):
            for v in np.where(rng.random(50) < 0.3, rng.uniform(0.2, 0.4, 50), rng.lognormal(np.log(0.004), 0.5, 50)):
                exporter.observe(float(v))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        args = ["report", "scrape", exporter.url, "--metric", "req_duration_seconds", "--interval", "0.2",
                "--count", "4"]
        gates = ["p99 > 150ms", "p99 < 150ms", "p99 > 50ms", "p99 >= 100ms", "p50 > 1s"]
        result = CliRunner().invoke(main, [*args[:1], *(w for g in gates for w in ("--fail-if", g)), *args[1:]])
        as_json = CliRunner().invoke(main, ["report", "--format", "json", *args[1:]])
    finally:
        stop.set()
        thread.join()
        exporter.close()
    assert "p90 ≥100ms  p99 ≥100ms  p999 ≥100ms" in result.stdout
    total = json.loads(as_json.stdout)["streams"][0]["total"]
    assert total["open"] == ["p90_s", "p99_s", "p999_s"] and total["p99_s"] == pytest.approx(0.1)
    assert result.exit_code == 1
    failed = [line for line in result.stderr.splitlines() if "gate failed" in line]
    assert failed == [
        "latencymap: gate failed: 'p99 > 150ms' on stream 'req_duration_seconds': cannot tell: p99 = ≥100ms "
        "(a lower bound only: in the open top bucket)",
        "latencymap: gate failed: 'p99 < 150ms' on stream 'req_duration_seconds': cannot tell: p99 = ≥100ms "
        "(a lower bound only: in the open top bucket)",
        "latencymap: gate failed: 'p99 > 50ms' on stream 'req_duration_seconds': p99 = ≥100ms",
        "latencymap: gate failed: 'p99 >= 100ms' on stream 'req_duration_seconds': p99 = ≥100ms",
    ]


def test_an_otlp_percentile_past_the_top_bound_ends_at_the_largest_value_seen() -> None:
    """OpenTelemetry points carry their max: a percentile in the +Inf bucket lies below it, and is no bound."""
    acc = _source_stream("sec", (0.05, 0.1, float("inf")), [60, 10, 30], seen=(0.001, 0.4))
    from latencymap.outputs.report import build_report

    total = build_report(acc)["streams"][0]["total"]
    assert "open" not in total and 0.1 < total["p99_s"] <= 0.4
    assert len(check_gates(acc, [parse_gate("p99 > 150ms")])) == 1
    assert check_gates(acc, [parse_gate("p99 > 400ms")]) == []


def test_a_rate_the_report_says_is_not_known_is_not_judged(tmp_path: Path) -> None:
    """Raw values without timestamps: "no timestamps: rates are not known", yet `rate > 1` judged 20k/s (how fast
    the file was read). A gate on it cannot tell; the other metrics are judged."""
    path = write_raw(tmp_path / "plain.txt", [200.0] * 100, timestamps=False)
    code, err = run_gates(path, "rate > 1", "rate < 1", "events > 1")
    assert code == 1
    assert err.splitlines() == [
        "latencymap: gate failed: 'rate > 1' on stream 'plain.txt': cannot tell: rate not known (no timestamps)",
        "latencymap: gate failed: 'rate < 1' on stream 'plain.txt': cannot tell: rate not known (no timestamps)",
        "latencymap: gate failed: 'events > 1' on stream 'plain.txt': events = 100",
    ]
    timed = write_raw(tmp_path / "timed.txt", [200.0] * 100)
    assert run_gates(timed, "rate > 1000")[0] == 0 and run_gates(timed, "rate > 1")[0] == 1


def test_a_failure_line_shows_the_value_so_that_it_breaches_in_the_thresholds_unit(tmp_path: Path) -> None:
    """`events > 20000` failed with `events = 20k`, `time > 4502ms` with `time = 4.5s`."""
    path = write_raw(tmp_path / "x.txt", [1500700.0, 1500800.0, 1500900.0])
    code, err = run_gates(path, "time > 4502ms", "time > 4.5s", "time > 1min or time < 4502.5ms", "events > 2")
    assert code == 1
    assert [line.split(": ")[-1] for line in err.splitlines()] == [
        "time = 4502.4ms", "time = 4.502s", "time = 0.075min", "events = 3"]
    many = write_records(tmp_path / "many.txt", [{1: 20_001}])
    assert run_gates(many, "events > 20000")[1].endswith("events = 20,001\n")
    assert run_gates(many, "rate > 20000")[1].endswith("rate = 20001\n")


def test_streams_of_one_label_are_named_apart(tmp_path: Path) -> None:
    """Three streams `io` (bpf/µs, bpf/ms, dtrace/µs) failed with three lines `on stream 'io'`."""
    lines: list[str] = []
    for k in range(2):  # cumulative: the first records are the baseline
        for source, unit in (("bpf", "microsec"), ("bpf", "millisec"), ("dtrace", "microsec")):
            lines += ["<begin record>", f"timestamp, microsec, {(1_700_000_000 + k) * 1_000_000}, t",
                      f"latencyunit, {unit}", "label, io", f"datasource, {source}", f"64, {10 * k}", "<end record>"]
    path = tmp_path / "io.txt"
    path.write_text("\n".join(lines) + "\n")
    code, err = run_gates(path, "events >= 0")
    assert code == 1
    assert sorted(line.split(" on stream ")[1].split(":")[0] for line in err.splitlines()) == [
        "'io' (bpf, ms)", "'io' (bpf, µs)", "'io' (dtrace)"]


@pytest.mark.parametrize(("expr", "expected"), [
    ("tail.events_share < 5", "did you mean '5%'"),
    ("tail.time_share > 50", "did you mean '50%'"),
    ("tail.events_share < 500%", "at most 100%, not 500%"),
    ("tail.events_share < 1.5", "did you mean '1.5%'"),
])
def test_a_share_out_of_its_range_is_a_usage_error(tmp_path: Path, expr: str, expected: str) -> None:
    """`tail.events_share < 5` (5%) was 500%, and always failed; `< 500%` was taken."""
    with pytest.raises(GateError, match=expected):
        parse_gate(expr)
    code, err = run_gates(write_records(tmp_path / "x.txt", [{1: 1}]), expr)
    assert code == 2 and expected in err
    assert parse_gate("tail.events_share < 1").node.value == 1
    assert parse_gate("tail.events_share <= 100%").node.value == 1


def test_long_durations_take_the_units_the_report_writes(tmp_path: Path) -> None:
    """The report writes `42.8min`, `7.73h`, `116 days`; `time > 1min` was a usage error."""
    assert [parse_gate(g).node.value for g in ("time > 1min", "time > 7.73h", "time > 116 days", "p99 > 1 day")] \
        == pytest.approx([60, 27828, 116 * 86400, 86400])
    path = write_raw(tmp_path / "x.txt", [40e6, 40e6])  # 80 s waited
    assert run_gates(path, "time > 1min")[0] == 1 and run_gates(path, "time > 0.1h")[0] == 0
