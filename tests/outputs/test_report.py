from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from diagnosis_support import day_long_accumulator
from formats_support import open_top_records

from latencymap.analysis.bands import MIN_EVENTS_SHARE, MIN_TIME_SHARE
from latencymap.analysis.tail import MAX_EVENTS_SHARE, TIME_FRACTION
from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main
from latencymap.core.buckets import bounds_seconds
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.protocol import format_record
from latencymap.protocol.grammar import NOTE_PREFIX


def parse_records(path: Path) -> list[tuple[int, dict[int, int]]]:
    """Independent reading of the example data: (timestamp µs, {bucket value: summed count})."""
    records = []
    for block in re.findall(r"<begin record>(.*?)<end record>", path.read_text(), re.S):
        ts = int(re.search(r"timestamp,\s*microsec,\s*(\d+)", block).group(1))
        counts: dict[int, int] = {}
        for v, c in re.findall(r"^(\d+),\s*(\d+)\s*$", block, re.M):
            counts[int(v)] = counts.get(int(v), 0) + int(c)
        records.append((ts, counts))
    return records


def expected_tail(pooled: dict[tuple[float, float], float]) -> dict:
    """The tail as tail.py documents it, over {(low_s, high_s): events}: whole buckets from the slowest down while
    they hold under TIME_FRACTION of the time, then the slowest part of the next that brings it there (log-uniform
    inside it, uniform from 0), time estimated at bucket midpoints (the inputs here have no sums)."""
    buckets = sorted(((low, high, n) for (low, high), n in pooled.items() if n > 0), reverse=True)
    total_n = sum(n for _, _, n in buckets)
    total_t = sum(n * (low + high) / 2 for low, high, n in buckets)
    goal = TIME_FRACTION * total_t
    events = spent = 0.0
    for low, high, n in buckets:
        held = n * (low + high) / 2
        if spent + held >= goal:
            part = (goal - spent) / held
            start = high - part * (high - low) if low > 0 else high * math.sqrt(1 - part)
            events += n * (math.log(high / start) / math.log(high / low) if low > 0 else 1 - start / high)
            break
        events, spent = events + n, spent + held
    return {"threshold_s": start, "events_share": events / total_n, "time_share": TIME_FRACTION, "events": events,
            "time_s": goal, "dominant": events / total_n <= MAX_EVENTS_SHARE}


def assert_tail(got: dict, expected: dict) -> None:
    assert got["dominant"] is expected["dominant"]
    for key in ("threshold_s", "events_share", "time_share", "events", "time_s"):
        assert got[key] == pytest.approx(expected[key], rel=1e-9), key


def mode_word(bands: list[dict]) -> str:
    """The first word(s) of a stream's diagnosis, by bands.py's rule: bands that hold >= 3% of the events or
    >= 10% of the time count; two or more of them make the stream bimodal (multimodal past two)."""
    major = [b for b in bands if b["events_share"] >= MIN_EVENTS_SHARE or b["time_share"] >= MIN_TIME_SHARE]
    return "unimodal" if len(major) < 2 else "bimodal" if len(major) == 2 else f"multimodal ({len(major)} bands)"


@pytest.fixture
def report(example_data: Path) -> dict:
    result = CliRunner().invoke(main, ["report", "--format", "json", str(example_data)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_total_events_equal_last_minus_first_cumulative(report: dict, example_data: Path) -> None:
    records = parse_records(example_data)
    first, last = records[0][1], records[-1][1]
    expected = sum(last[v] - first.get(v, 0) for v in last)
    (stream,) = report["streams"]
    assert stream["total"]["events"] == expected
    assert stream["columns"] == len(records) - 1


def test_each_column_frequency_is_delta_count_over_delta_t(report: dict, example_data: Path) -> None:
    records = parse_records(example_data)
    (stream,) = report["streams"]
    lows = [b["low"] for b in stream["buckets"]]
    for col, ((t0, c0), (t1, c1)) in enumerate(itertools.pairwise(records)):
        dt = (t1 - t0) / 1e6
        for v in c1:
            if c1[v] == c0.get(v, 0) and v * 1e-3 not in lows:
                continue
            j = lows.index(pytest.approx(v * 1e-3))
            assert stream["frequency"][col][j] == pytest.approx((c1[v] - c0.get(v, 0)) / dt, rel=1e-12)


def test_each_column_says_its_length_so_that_rates_give_back_the_counts(report: dict, example_data: Path) -> None:
    """Columns of uneven length (a late record, a log's hole) give rates alone; `column_s` gives back every count."""
    records = parse_records(example_data)
    (stream,) = report["streams"]
    assert stream["column_s"] == pytest.approx([(t1 - t0) / 1e6 for (t0, _), (t1, _) in itertools.pairwise(records)],
                                               rel=1e-12)
    counts = np.array(stream["frequency"]) * np.array(stream["column_s"])[:, None]
    assert counts.sum() == pytest.approx(stream["total"]["events"], rel=1e-9)


def test_bucket_ranges_follow_default_datasource_semantics(report: dict) -> None:
    (stream,) = report["streams"]
    assert stream["stream"]["datasource"] == "bpf"
    for b in stream["buckets"]:  # bpf: value v (ms) means [v, 2v)
        assert b["high"] == pytest.approx(2 * b["low"])
    assert stream["buckets"][0] == {"low": pytest.approx(0.001), "high": pytest.approx(0.002)}


def test_json_contract_keys(report: dict) -> None:
    (stream,) = report["streams"]
    assert set(stream) >= {"stream", "columns", "start", "end", "buckets", "frequency", "intensity",
                           "intensity_exact", "total", "errors"}
    assert set(stream["total"]) >= {"events", "time_s", "mean_s", "p50_s", "p90_s", "p99_s", "p999_s"}
    assert stream["intensity_exact"] is False
    assert report["errors"]["skipped_records"] == stream["errors"]["report_skipped_records"] == 0
    assert [m for m in report["errors"]["messages"] if "--datasource oracle" not in m] == []  # only the note
    f = np.array(stream["frequency"])
    i = np.array(stream["intensity"])
    assert f.shape == i.shape == (stream["columns"], len(stream["buckets"]))
    assert stream["total"]["p50_s"] <= stream["total"]["p90_s"] <= stream["total"]["p99_s"]


def test_several_labels_give_several_streams(tmp_path: Path) -> None:
    text = ""
    for ts in (1, 2, 3):
        for label in ("a", "b"):
            text += f"<begin record>\ntimestamp, microsec, {ts * 1000000}, x\nlabel, {label}\n1, {ts}\n<end record>\n"
    p = tmp_path / "two.txt"
    p.write_text(text)
    result = CliRunner().invoke(main, ["report", "--format", "json", str(p)])
    streams = json.loads(result.output)["streams"]
    assert [s["stream"]["label"] for s in streams] == ["a", "b"]
    assert all(s["total"]["events"] == 2 for s in streams)


def test_text_report_summarises(example_data: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(example_data)])
    assert result.exit_code == 0
    assert "71 intervals" in result.output and "p99" in result.output


def test_report_states_its_findings_on_the_example_data(report: dict, example_data: Path) -> None:
    (stream,) = report["streams"]
    assert stream["bimodal"] is True
    assert {"low_s", "high_s", "events_share", "time_share"} == set(stream["bands"][0])
    assert sum(b["events_share"] for b in stream["bands"]) == pytest.approx(1.0, abs=1e-9)
    records = parse_records(example_data)  # bpf datasource, millisec: value v is [v, 2v) ms
    first, last = records[0][1], records[-1][1]
    pooled = {(v * 1e-3, 2 * v * 1e-3): float(last[v] - first.get(v, 0)) for v in last}
    assert_tail(stream["tail"], expected_tail(pooled))
    text = CliRunner().invoke(main, ["report", str(example_data)]).output
    assert "multimodal (3 bands)" in text and "not one spread: the mean describes none of the 3 bands" in text
    assert "tail" not in text  # 15% of the events hold half of the time: too many for a tail finding


@pytest.mark.parametrize("capture", ["bcc/biolatency_usecs_T.txt", "bpftrace/block_usecs_interval.txt",
                                     "bpftrace/block_usecs_interval.json"])
def test_report_states_findings_on_real_bpf_captures(fixtures: Path, capture: str) -> None:
    r = CliRunner().invoke(main, ["report", "--format", "json", str(fixtures / capture)])
    assert r.exit_code == 0, r.output
    busy = [s for s in json.loads(r.output)["streams"] if s["total"]["events"] > 0]
    assert busy
    pooled: dict[str, dict[tuple[float, float], float]] = {}
    for item in input_flow([str(fixtures / capture)], REGISTRY):
        if isinstance(item, Interval):
            low, high = bounds_seconds(item.stream.datasource, item.stream.unit)
            into = pooled.setdefault(item.stream.label, {})
            for slot in map(int, np.flatnonzero(item.counts)):
                into[(low[slot], high[slot])] = into.get((low[slot], high[slot]), 0.0) + float(item.counts[slot])
    text = CliRunner().invoke(main, ["report", str(fixtures / capture)]).output
    sections = {block.split("  [")[0]: block for block in text.split("== ")[1:]}
    for stream in busy:
        label = stream["stream"]["label"]
        assert stream["bands"] and sum(b["events_share"] for b in stream["bands"]) == pytest.approx(1.0, abs=1e-6)
        word = mode_word(stream["bands"])
        assert stream["bimodal"] is (word != "unimodal")
        assert_tail(stream["tail"], expected_tail(pooled[label]))
        lines = [line.strip() for line in sections[label].splitlines()]
        assert lines[3].startswith(word + ": "), lines[3]  # after the heading, totals and percentiles
        for f in stream["findings"]:  # a tail is a finding only as a minority of the events
            assert f["kind"] != "tail" or f["events_share"] <= 0.10
    tails = [f for s in busy for f in s["findings"] if f["kind"] == "tail"]
    assert ("tail dominates" in text) == bool(tails)


def test_whole_history_diagnosis_is_computed_once_per_history_state() -> None:
    import numpy as np

    from latencymap.analysis.summary import stream_diagnosis
    from latencymap.core.accumulator import StreamHistory
    from latencymap.core.model import Interval, StreamId

    hist = StreamHistory(StreamId("memo", "bpf", "microsec"))
    counts = np.zeros(64, dtype=np.int64)
    counts[8] = 100
    hist.extend([Interval(hist.stream, float(i), float(i + 1), counts) for i in range(5)])
    first = stream_diagnosis(hist)
    assert stream_diagnosis(hist) is first
    slow = counts.copy()
    slow[16] = 100
    hist.extend([Interval(hist.stream, 5.0, 6.0, slow)])
    again = stream_diagnosis(hist)
    assert again is not first
    assert sum(b.events_share for b in again.bands) == pytest.approx(1.0)


def test_the_text_report_says_what_reading_assumed_even_when_nothing_was_skipped(example_data: Path) -> None:
    """The example has no datasource line: it is read as bpf, and the text report says so, remedy included."""
    result = CliRunner().invoke(main, ["report", str(example_data)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "Skipped records" not in result.output and "Notes:" in lines
    (note,) = lines[lines.index("Notes:") + 1:]
    assert "has no 'datasource' line: read as bpf" in note and note.endswith("one octave lower")


def test_the_text_report_counts_the_messages_it_does_not_print(tmp_path: Path) -> None:
    lines = []
    for i in range(30):  # every other record has a bad count: 15 skipped, 15 messages
        lines += ["<begin record>", f"timestamp, microsec, {(i + 1) * 1_000_000}, t", "label, a",
                  "1, x" if i % 2 else f"1, {5 * i}", "<end record>"]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    text = CliRunner().invoke(main, ["report", str(path)]).output
    assert text.count("record skipped") == 10 and text.endswith("   ... and 5 more (--format json lists up to 100)\n")
    doc = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(path)]).output)
    assert len(doc["errors"]["messages"]) == doc["errors"]["skipped_records"] == 15


@pytest.mark.parametrize("skipped", [[1] * 121, [300] + [0] * 120])
def test_the_text_report_counts_every_message_left_out_whatever_it_says(tmp_path: Path, skipped: list[int]) -> None:
    """121 messages of a recorded run (a time line ignored, each a record skipped; or one message for 300 records and
    120 that skip none): 10 printed, 100 in the JSON, 111 left out of the text and 21 of the JSON, whatever the
    messages end with and however many records they skipped."""
    notes = [NOTE_PREFIX + json.dumps({"message": f"bt.txt line {i}: time line ignored", "skipped": n}) + "\n"
             for i, n in enumerate(skipped)]
    path = tmp_path / "rec.txt"
    path.write_text("".join(notes) + "".join(
        format_record(StreamId("io", "bpf", "microsec"), 101.0 + i, np.arange(64) % 3, start=100.0 + i,
                      per_interval=True) for i in range(3)))
    text = CliRunner().invoke(main, ["report", str(path)]).output
    assert f"Skipped records: {sum(skipped)}" in text and text.count("time line ignored") == 10
    assert text.endswith("   ... and 111 more (--format json lists up to 100)\n")
    errors = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(path)]).output)["errors"]
    assert len(errors["messages"]) == 100 and errors["messages_left_out"] == 21
    diff = CliRunner().invoke(main, ["diff", str(path), str(path)]).output
    assert diff.count("   ... and 111 more (--format json lists up to 100)\n") == 2


def test_rates_are_per_second_observed_gap_columns_left_out(tmp_path: Path) -> None:
    """Four 1 s columns of 100 events and six 1 s gap columns (a scrape target down): 100 events/s, not 40/s, in the
    text report and the gate; the time line still spans all ten columns."""
    records = []
    for k in range(10):
        gap = 4 <= k < 10
        body = "" if gap else "1024, 100\n"
        records.append(f"<begin record>\ntimestamp, microsec, {(k + 2) * 1_000_000}, d\ncounts, interval\n"
                       f"label, svc\nlatencyunit, microsec\n{'flags, gap' + chr(10) if gap else ''}{body}"
                       "<end record>\n")
    path = tmp_path / "gaps.txt"
    path.write_text("".join(records))
    text = CliRunner().invoke(main, ["report", str(path)])
    assert text.exit_code == 0, text.output
    assert "4 intervals and 6 gaps over 10s: 400 events (100/s)" in text.output
    gate = CliRunner().invoke(main, ["report", "--fail-if", "rate < 90", str(path)])
    assert gate.exit_code == 0, gate.output


def _record(k: int, body: str, flags: str = "", label: str = "svc") -> str:
    return (f"<begin record>\ntimestamp, microsec, {(k + 2) * 1_000_000}, d\ncounts, interval\nlabel, {label}\n"
            f"latencyunit, microsec\n{'flags, ' + flags + chr(10) if flags else ''}{body}<end record>\n")


def test_a_gap_column_holding_events_counts_its_time_and_empty_streams_say_so(tmp_path: Path) -> None:
    """A gap column with events (a counter's increase across an outage) counted them over its span: its time stays
    in the rate. A stream of one empty column says "1 interval ...: no events"; one of gaps only, "no data". Gap
    columns are counted apart from the intervals, as the gap line lists them (they were counted as intervals)."""
    path = tmp_path / "mixed.txt"
    path.write_text(_record(0, "1024, 100\n") + _record(1, "1024, 100\n", "gap, reset") + _record(2, "", "gap")
                    + _record(0, "", label="quiet") + _record(0, "", "gap", label="down") + _record(1, "", "gap",
                                                                                                     label="down"))
    out = CliRunner().invoke(main, ["report", str(path)]).output
    assert "1 interval and 2 gaps over 3s: 200 events (100/s)" in out
    assert "gap (data missing from the column): columns 1, 2" in out
    assert "== quiet" in out and "1 interval over 1s: no events" in out
    assert "   2 gaps over 2s: no data (every column is a gap: data missing)" in out
    assert "mean nan" not in out and "p50 nan" not in out


def test_skipped_records_are_the_reports_not_charged_to_every_stream(tmp_path: Path) -> None:
    """Issue #23 (fleet hunt #10): 20 streams and 4 bad records gave each stream `skipped_records: 4` and all 4
    messages. A skipped record is named by its line, not its stream, so the report's `errors` holds it once; each
    stream's `errors` keeps its keys, empty, and points at the report's count."""
    lines = []
    for i in range(6):
        for label in ("a", "b", "c"):
            count = "x" if (label, i) in (("b", 2), ("c", 4)) else str(10 * (i + 1))
            lines += ["<begin record>", f"timestamp, microsec, {(i + 1) * 1_000_000}, t", f"label, {label}",
                      "datasource, bpf", f"8, {count}", "<end record>"]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    doc = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(path)]).output)
    assert doc["errors"]["skipped_records"] == 2
    assert [m.split(": ")[1] for m in doc["errors"]["messages"]] == ["line 47", "line 89"]
    assert [s["stream"]["label"] for s in doc["streams"]] == ["a", "b", "c"]
    for stream in doc["streams"]:
        assert stream["errors"] == {"skipped_records": 0, "messages": [], "report_skipped_records": 2}
    text = CliRunner().invoke(main, ["report", str(path)]).output
    assert text.count("Skipped records: 2") == 1 and text.count("record skipped") == 2


def _run_report(*args: str) -> str:
    result = CliRunner().invoke(main, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_open_top_bucket_and_a_long_run_of_empty_buckets_read_as_they_are(tmp_path: Path) -> None:
    """One raw value of 10**20 µs among values of ~100 µs: the text table listed 53 empty rows up to the top
    bucket, `53,375,996 days–106,751,991 days`, and the JSON gave that bucket a `max_s` of 10**14 s above its `high`.
    The top bucket is open: the table writes it `≥53,375,996 days`, a run of more than MAX_EMPTY_ROWS empty buckets
    is one line that says how many it holds, and the JSON marks the top bucket `open` (every bucket kept); SVG below."""
    from latencymap.outputs.report import MAX_EMPTY_ROWS

    path = tmp_path / "v.txt"
    path.write_text("100\n200\n150\n300\n1e20\n")
    table = _run_report(str(path)).split("%time\n")[1].split("Notes:\n")[0]
    assert table.splitlines() == [
        "   64µs–128µs                     1    20.00%   <0.01%",
        "   128µs–256µs                    2    40.00%   <0.01%",
        "   256µs–512µs                    1    20.00%   <0.01%",
        "   512µs–53,375,996 days          0     0.00%    0.00%  (53 empty buckets in one line)",
        "   ≥53,375,996 days               1    20.00%  100.00%"]
    (stream,) = json.loads(_run_report("--format", "json", str(path)))["streams"]
    buckets = stream["buckets"]
    assert len(buckets) == len(stream["frequency"][0]) == 57
    assert buckets[-1] == {"low": 2.0**62 * 1e-6, "high": 2.0**63 * 1e-6, "open": True, "min_s": 1e14, "max_s": 1e14}
    assert not any("open" in b for b in buckets[:-1])
    # Below the top bucket: a run of exactly MAX_EMPTY_ROWS empty buckets is listed, one more is one line.
    for gap, value in ((MAX_EMPTY_ROWS, 2**23), (MAX_EMPTY_ROWS + 1, 2**24)):
        path.write_text(f"100\n{value}\n")
        rows = _run_report(str(path)).split("%time\n")[1].splitlines()
        assert len(rows) == (gap + 2 if gap == MAX_EMPTY_ROWS else 3), rows
        assert "≥" not in "".join(rows) and ("empty buckets" in rows[1]) == (gap > MAX_EMPTY_ROWS)
    assert rows[1] == "   128µs–16.8s                   0     0.00%    0.00%  (17 empty buckets in one line)"
    (stream,) = json.loads(_run_report("--format", "json", str(path)))["streams"]
    assert len(stream["buckets"]) == 19 and not any("open" in b for b in stream["buckets"])


def test_the_report_of_a_day_long_stream_holds_no_dense_matrix_of_its_columns() -> None:
    """A day of one-second columns (6 buckets): the totals, the bucket table and the diagnosis read the history a
    chunk at a time; the JSON holds its two (columns x 6) arrays. One dense (86,400 x 64) matrix is 44 MB: the report
    held 250 MB before."""
    import tracemalloc

    from latencymap.outputs.report import build_report, report_text

    n = 86_400
    acc = day_long_accumulator(n)
    peaks = []
    for write in (lambda: report_text(acc), lambda: build_report(acc, arrays=True)):
        tracemalloc.start()
        try:
            write()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    text, json_doc = peaks
    assert text < 20e6
    assert json_doc < 20e6 + 2 * n * 6 * 8  # and the frequency and intensity arrays (columns x buckets used)


def test_the_report_of_a_short_stream_decodes_each_chunk_of_its_history_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream whose columns fit in `DENSE_BYTES` as dense arrays is read from them, built once for its report: the
    totals, the maps, the bucket table and the diagnosis go over the columns many times, and decode each sealed chunk
    of the history once (each of its parts: counts, time, metadata); the report is the one read a chunk at a time."""
    from latencymap.core.columns import Chunk
    from latencymap.outputs import report
    from latencymap.outputs.json_text import dumps

    acc = day_long_accumulator(5000)
    (hist,) = acc.streams.values()
    chunks = len(hist._chunks)
    decoded: list[str] = []
    decode_part = Chunk.decode_part

    def counted(self: Chunk, part: str) -> dict[str, np.ndarray | None]:
        decoded.append(part)
        return decode_part(self, part)

    monkeypatch.setattr(Chunk, "decode_part", counted)
    whole = (dumps(report.build_report(acc, arrays=True)), report.report_text(acc))
    assert chunks >= 4 and len(decoded) <= 2 * 3 * chunks  # its counts, time and metadata, for each report
    monkeypatch.setattr(report, "DENSE_BYTES", 0)
    read_in_chunks = (dumps(report.build_report(day_long_accumulator(5000), arrays=True)),
                      report.report_text(day_long_accumulator(5000)))
    assert whole == read_in_chunks


def test_percentiles_in_the_open_top_bucket_say_what_is_known_of_them(tmp_path: Path) -> None:
    """PyLatencyMap records (counts only) with 1.5% of the events in the top bucket: p99 read `66,785 days`, a number
    interpolated inside a bucket whose values may lie anywhere past its low. Now the text says `≥53,376 days` and the
    JSON keeps the low as the number, listing the key under `open`. Raw values, whose largest is seen, read among
    them (past the nominal end) and are not open."""
    path = open_top_records(tmp_path / "top.txt")
    text = _run_report(str(path))
    assert "p90 1.93µs  p99 ≥53,376 days  p999 ≥53,376 days" in text and "in ≥53,376 days own" in text
    (stream,) = json.loads(_run_report("--format", "json", str(path)))["streams"]
    total = stream["total"]
    assert total["open"] == ["p99_s", "p999_s"] and total["p99_s"] == total["p999_s"] == 2.0**62 * 1e-9
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join(["200"] * 98 + ["2e19", "5e19"]) + "\n")
    (stream,) = json.loads(_run_report("--format", "json", "--unit", "ns", str(raw)))["streams"]
    assert "open" not in stream["total"] and 2e10 <= stream["total"]["p999_s"] <= 5e10
    assert "p999 ≥" not in _run_report("--unit", "ns", str(raw))


def _stage(stage: int, wasted: float, utilisation: float, cores: int = 2) -> dict[str, Any]:
    return {"stage": stage, "attempt": 0, "tasks": 4, "median_s": 0.3, "max_s": 0.4, "skew": 1.3,
            "max_over_wall": 0.5, "wall_s": 1.0, "cores": cores, "wasted_core_s": wasted, "utilisation": utilisation,
            "task_time_s": cores * utilisation}


def test_a_stage_line_counts_its_cores_in_words() -> None:
    from latencymap.outputs.report import source_lines

    (one,) = [line for line in source_lines({"stages": [_stage(0, 0.5, 0.5, cores=1)]}) if "stage 0.0" in line]
    assert "; 1 core, 0.5 core-s wasted (50%)" in one, one
    (two,) = [line for line in source_lines({"stages": [_stage(0, 1.0, 0.5)]}) if "stage 0.0" in line]
    assert "; 2 cores, 1 core-s wasted (50%)" in two, two


def test_the_costliest_stage_is_marked_only_when_it_wasted_a_material_share() -> None:
    """A few % idle cores is how every stage ends: marking the largest such is trivia (stage 4.0 of the Spark
    fixture, 2%, was marked); a stage that left 30% of its cores idle is worth pointing at."""
    from latencymap.outputs.report import source_lines

    marked = [line for line in source_lines({"stages": [_stage(0, 0.02, 0.99), _stage(1, 0.04, 0.98)]})
              if "◀" in line]
    assert marked == []
    lines = source_lines({"stages": [_stage(0, 0.02, 0.99), _stage(1, 0.6, 0.7)]})
    assert [line.split(":")[0].strip() for line in lines if "◀" in line] == ["stage 1.0"]


def spark_straggler(executor: str = "1", slow: bool = False, read_ratio: float | None = None,
                    stage: int = 2, time_ratio: float | None = None) -> dict[str, Any]:
    """A straggler as Spark's analysis gives it (sources/spark/summary.py), with what says its cause: it took
    `time_ratio` (default `read_ratio`, else 5) times its stage's median task's time."""
    ratio = time_ratio or read_ratio or 5.0
    return {"stage": stage, "attempt": 0, "executor": executor, "slow_executor": slow, "read_ratio": read_ratio,
            "read_bytes": None if read_ratio is None else int(1000 * read_ratio), "duration_s": 0.2 * ratio,
            "stage_median_s": 0.2}


def test_a_finding_names_its_stragglers_cause_where_the_log_gives_one() -> None:
    from latencymap.outputs.report import findings_cause

    on_1 = spark_straggler(slow=True)
    assert findings_cause([on_1], 1) == "it is a straggler on executor 1, slow in its stage (see Stragglers and Stages)"
    assert findings_cause([on_1, spark_straggler(slow=True), spark_straggler(slow=True)], 3) == \
        "all 3 are stragglers on executor 1, slow in their stage (see Stragglers and Stages)"
    assert findings_cause([on_1, spark_straggler("12", slow=True, stage=3)], 5) == \
        ("2 of these 5 tasks are stragglers on executors 1 and 12, each slow in its stage (see Stragglers and "
         "Stages)")
    assert findings_cause([on_1], 3) == \
        "1 of these 3 tasks is a straggler on executor 1, slow in its stage (see Stragglers and Stages)"
    assert findings_cause([spark_straggler(read_ratio=40.0)], 1) == \
        ("it is a straggler that read 40× its stage's median task's bytes: a skewed, larger partition (see "
         "Stragglers)")
    assert findings_cause([spark_straggler(read_ratio=8.5), spark_straggler(read_ratio=40.0)], 2) == \
        ("both are stragglers that read 8.50×–40× their stage's median task's bytes: skewed, larger partitions (see "
         "Stragglers)")
    assert findings_cause([on_1, spark_straggler("2", read_ratio=9.0), spark_straggler("2", read_ratio=1.1)], 3) == \
        ("all 3 are stragglers (see Stragglers and Stages): 1 on executor 1, slow in its stage; 1 read 9.00× its "
         "stage's median task's bytes: a skewed, larger partition; 1 of no cause the log gives")


def test_a_finding_whose_stragglers_have_no_cause_in_the_log_keeps_its_own() -> None:
    """Reading about as much as the stage's median task (under 1.5 times), or no bytes logged: no cause."""
    from latencymap.outputs.report import findings_cause

    assert findings_cause([], 2) is None
    assert findings_cause([spark_straggler(read_ratio=1.4), spark_straggler()], 2) is None


def test_a_straggler_whose_extra_bytes_explain_little_of_its_time_is_not_a_larger_partition() -> None:
    """8.7x its stage's median time with 1.6x its bytes (a real log: 4.3 s of sleep beside 0.3 s, 1.6x the lines):
    the bytes would explain 1.6x, not 8.7x; the log gives no cause, so the finding keeps its own and the straggler
    line says what is known. 3x its time with 1.6x its bytes is within twice the bytes: a larger partition."""
    from latencymap.outputs.report import _straggler_cause, findings_cause

    s = spark_straggler(read_ratio=1.6, time_ratio=8.7)
    s["read_bytes"] = 120_000
    assert findings_cause([s], 1) is None
    assert _straggler_cause(s) == ("read 1.6x its stage's median bytes (117 KiB vs 73.2 KiB), which explains little "
                                   "of its 8.7x the stage median's time")
    assert findings_cause([s, spark_straggler(read_ratio=40.0)], 2) == \
        ("both are stragglers (see Stragglers and Stages): 1 read 40× its stage's median task's bytes: a skewed, "
         "larger partition; 1 of no cause the log gives")
    scaled = spark_straggler(read_ratio=1.6, time_ratio=3.0)
    assert findings_cause([scaled], 1) == \
        "it is a straggler that read 1.60× its stage's median task's bytes: a skewed, larger partition (see Stragglers)"
    assert _straggler_cause(scaled).endswith(": a larger partition")
