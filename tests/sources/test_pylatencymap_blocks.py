from __future__ import annotations

import itertools
import re

import numpy as np
from field_support import dtrace_capture, systemtap_keyed_capture
from formats_support import FIXTURES, intervals, report_json, totals_by_label

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice
from latencymap.protocol import ProtocolReader

SYSTEMTAP = FIXTURES / "pylatencymap" / "test_SystemTap_data.txt"
DTRACE = FIXTURES / "formats" / "dtrace_quantize.txt"


def block_records(path) -> list[dict[int, int]]:
    """Per record, the `value |@@@ count` rows as {value: count} (values >= 0), by regex."""
    records: list[dict[int, int]] = []
    for body in re.findall(r"<begin record>(.*?)<end record>", path.read_text(), re.S):
        rows = {int(v): int(c) for v, c in re.findall(r"^\s*(\d+) \|[@ ]*?\s(\d+)\s*$", body, re.M)}
        records.append(rows)
    return records


def cumulative_total(records: list[dict[int, int]]) -> int:
    first, last = records[0], records[-1]
    for before, after in itertools.pairwise(records):
        assert all(after.get(v, 0) >= c for v, c in before.items())  # no counter resets in these samples
    return sum(last.values()) - sum(first.values())


def test_systemtap_hist_log_records_total_equals_the_rows() -> None:
    records = block_records(SYSTEMTAP)
    assert len(records) == 48
    (stream,) = report_json(SYSTEMTAP)["streams"]
    assert stream["stream"]["datasource"] == "systemtap" and stream["stream"]["unit"] == "microsec"
    assert stream["total"]["events"] == cumulative_total(records)
    assert stream["columns"] == 47


def test_dtrace_quantize_records_total_and_buckets() -> None:
    records = block_records(DTRACE)
    report = report_json(DTRACE)
    (stream,) = report["streams"]
    assert stream["stream"]["datasource"] == "dtrace" and stream["stream"]["unit"] == "nanosec"
    assert stream["total"]["events"] == cumulative_total(records)
    cols = intervals(list(Differ().run(ProtocolReader("d").read(DTRACE.open()))))
    counts = np.sum([c.counts for c in cols], axis=0)
    assert counts[0] == 2  # the `0` row is [0, 1)
    assert counts[11] == 2  # 1024 ns is [1024, 2048)
    assert report["errors"]["skipped_records"] == 0  # the `-1` row is dropped silently, not an error


def test_oracle_overflow_bucket_is_left_out_of_the_map_and_totals(tmp_path) -> None:
    records = "".join(
        f"<begin record>\ntimestamp, microsec, {t}000000, x\nlabel, db file sequential read\n"
        f"latencyunit, millisec\ndatasource, oracle\n1, {c1}\n1024, {c2}\n4294967295, {c3}\n<end record>\n"
        for t, c1, c2, c3 in [(1, 10, 5, 7), (2, 15, 9, 70)])
    path = tmp_path / "overflow.txt"
    path.write_text(records)
    (stream,) = report_json(path)["streams"]
    assert stream["total"]["events"] == (15 - 10) + (9 - 5)
    assert [b["high"] for b in stream["buckets"]][-1] == 1024.0 * 1e-3


def _read_both(text: str) -> list:
    """Diffed items of `text` by the line reader, checked equal to the bulk reader's."""
    by_lines = list(Differ(name="d").run(ProtocolReader("d").read(text.splitlines(True))))
    in_bulk = list(Differ(name="d").run(ProtocolReader("d").read_chunks([text], runs=True)))

    def key(i):  # type: ignore[no-untyped-def]
        return (i.message,) if isinstance(i, Notice) else (i.stream, i.start, i.end, i.counts.tolist())

    assert [key(i) for i in in_bulk] == [key(i) for i in by_lines]
    return by_lines


def _growing(keys: dict[str, dict[int, int]], records: int) -> list[dict[str, dict[int, int]]]:
    """Cumulative tables: each record adds the base counts again (times its index + 1)."""
    return [{k: {v: c * (n + 1) for v, c in table.items()} for k, table in keys.items()} for n in range(records)]


def test_raw_dtrace_output_with_probe_lines_and_the_key_line_is_read(tmp_path) -> None:
    """`dtrace -s pread_tracedata.d` as printed: probe lines between records, `timestamp,musec,...`, the key line
    (`  myhistogram`) above each quantize table. Each record used to be skipped whole."""
    records = _growing({"myhistogram": {16384: 2, 262144: 12889, 524288: 23806, 1048576: 5253}}, 6)
    path = tmp_path / "pread.txt"
    path.write_text(dtrace_capture(records))
    report = report_json(path)
    assert report["errors"]["skipped_records"] == 0
    (stream,) = report["streams"]
    assert stream["stream"]["label"] == "pread latency measured with DTrace [myhistogram]"
    assert stream["stream"]["unit"] == "nanosec" and stream["columns"] == 5
    assert stream["total"]["events"] == 5 * sum(records[0]["myhistogram"].values())
    assert stream["buckets"][0]["low"] == 16384e-9  # value v is the bucket [v, 2v) in ns
    items = _read_both(path.read_text())
    assert all(isinstance(i, Interval) for i in items)


def test_a_record_holding_several_keyed_tables_gives_one_stream_per_key(tmp_path) -> None:
    """`@h[probefunc] = quantize(...)`: printa prints one key line and table per key; numeric keys (pids) too."""
    keys = {"pread64": {8192: 3, 262144: 900}, "pread": {4096: 1, 65536: 40}, "4242": {1024: 7}}
    records = _growing(keys, 4)
    path = tmp_path / "keys.txt"
    path.write_text(dtrace_capture(records, label="pread by function"))
    report = report_json(path)
    assert report["errors"]["skipped_records"] == 0
    totals = totals_by_label(report)
    assert totals == {f"pread by function [{k}]": 3 * sum(t.values()) for k, t in keys.items()}
    items = _read_both(path.read_text())
    by_stream: dict[str, int] = {}
    for iv in items:
        by_stream[iv.stream.label] = by_stream.get(iv.stream.label, 0) + int(iv.counts.sum())
    assert by_stream == totals


def test_systemtap_hist_log_printed_per_key_gives_one_stream_per_key(tmp_path) -> None:
    keys = {"sda": {256: 2, 4096: 800, 8192: 400}, "dm-0": {512: 16, 2048: 229}}
    records = _growing(keys, 5)
    path = tmp_path / "stap.txt"
    path.write_text(systemtap_keyed_capture(records))
    report = report_json(path)
    assert report["errors"]["skipped_records"] == 0
    assert totals_by_label(report) == {f"block I/O latency per device [{k}]": 4 * sum(t.values())
                                       for k, t in keys.items()}
    assert {s["stream"]["datasource"] for s in report["streams"]} == {"systemtap"}
    _read_both(path.read_text())


def test_a_line_that_is_not_a_key_still_skips_its_record_with_its_line_number() -> None:
    """Only a line right above a histogram header is a key; any other unknown line is an error, as before."""
    text = ("<begin record>\ntimestamp, microsec, 1000000, a\nnonsense here\n1, 5\n<end record>\n"
            "<begin record>\ntimestamp, microsec, 2000000, b\n1, 7\nstray\n<end record>\n")
    items = _read_both(text)
    messages = [i.message for i in items if isinstance(i, Notice)]
    assert len(messages) == 2 and "line 3" in messages[0] and "line 9" in messages[1]
    assert all("nonsense here" in m or "stray" in m for m in messages)
