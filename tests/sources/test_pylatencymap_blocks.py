from __future__ import annotations

import itertools
import re

import numpy as np
from formats_support import FIXTURES, intervals, report_json

from latencymap.core.deltas import Differ
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


def test_oracle_overflow_bucket_is_dropped(tmp_path) -> None:
    records = "".join(
        f"<begin record>\ntimestamp, microsec, {t}000000, x\nlabel, db file sequential read\n"
        f"latencyunit, millisec\ndatasource, oracle\n1, {c1}\n1024, {c2}\n4294967295, {c3}\n<end record>\n"
        for t, c1, c2, c3 in [(1, 10, 5, 7), (2, 15, 9, 70)])
    path = tmp_path / "overflow.txt"
    path.write_text(records)
    (stream,) = report_json(path)["streams"]
    assert stream["total"]["events"] == (15 - 10) + (9 - 5)
    assert [b["high"] for b in stream["buckets"]][-1] == 1024.0 * 1e-3
