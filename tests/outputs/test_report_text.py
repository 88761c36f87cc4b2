"""The text report's numbers: durations in human units (minutes, hours, days past a minute), counts with thousands
separators, a non-empty bucket's tiny share as `<0.01%`, and no made-up rate for values read without timestamps."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.outputs.report import duration_text, share_text


def _report(*args: str) -> str:
    result = CliRunner().invoke(main, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_time_waited_and_counts_read_as_a_person_writes_them(example_data: Path) -> None:
    """PyLatencyMap's Oracle sample waited 27,840 s: `7.73h`, not `2.784e+04s`; its 1,237,243 events and bucket
    counts are grouped by thousands; the 20 events of 256ms–512ms are `<0.01%` of them, not `0.00%`."""
    text = _report(str(example_data))
    assert "71 intervals over 3.57min: 1,237,243 events (5.77k/s), 7.73h waited (estimated from bucket midpoints)" \
        in text
    assert re.search(r"\n   256ms–512ms +20 +<0\.01% +0\.03%\n", text)
    assert re.search(r"\n   16ms–32ms +425,973 +34\.43% +36\.72%\n", text)
    assert "e+0" not in text and "1237243" not in text and " 0.00%" not in text
    doc = json.loads(_report("--format", "json", str(example_data)))
    assert doc["streams"][0]["total"]["events"] == 1237243  # the JSON keeps plain numbers
    assert doc["streams"][0]["total"]["time_s"] == pytest.approx(27840, rel=1e-3)


def test_days_long_values_and_rows_read_in_days(tmp_path: Path) -> None:
    """A value of 1e13 µs (116 days) in a 30 s run: the time waited and the rows past a minute are in minutes, hours
    and days (`102 days–204 days`), never `10001000s` or `8796093s–17592186s`."""
    lines = [f"{t / 200:.3f} 1000" for t in range(6000)] + ["10.5 600000000", "20.5 10000000000000"]
    path = tmp_path / "huge.txt"
    path.write_text("\n".join(lines) + "\n")
    text = _report("--unit", "us", str(path))
    head = text.splitlines()[1]
    assert head.endswith("6,002 events (200/s), 116 days waited (exact)"), head
    rows = text.split("%time\n")[1]
    assert re.search(r"^   8\.95min–17\.9min +1 ", rows, re.M)
    assert re.search(r"^   102 days–204 days +1 ", rows, re.M)
    assert not re.search(r"\d{4,}s", rows)


def test_share_and_duration_texts() -> None:
    assert share_text(20, 1_237_243) == " <0.01%"
    assert share_text(0, 1_237_243) == "  0.00%"
    assert share_text(1, 200) == "  0.50%"
    assert share_text(0, 0) == "  0.00%"
    assert duration_text(0) == "0s" and duration_text(8.885e-08) == "88.8ns" and duration_text(0.002001) == "2ms"
    assert duration_text(27840) == "7.73h"


def test_values_without_timestamps_get_no_rate(tmp_path: Path) -> None:
    """Plain values carry no time: read from a file they all arrive at once, so `5000 events (5k/s)` over `1.0s`
    was made up. The report says the rate is not known; values with their times keep theirs."""
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(f"{1 + (k % 7) / 10}\n" for k in range(5000)))
    text = _report("--unit", "ms", str(plain))
    head = text.splitlines()[1]
    assert head == "   1 interval by arrival (no timestamps: rates are not known): 5,000 events, 6.5s waited (exact)"
    assert "/s" not in text
    piped = CliRunner().invoke(main, ["report", "--unit", "ms"], input=plain.read_text())
    assert "no timestamps: rates are not known" in piped.output
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("".join(f"{k / 1000:.3f} 1.5\n" for k in range(5000)))
    timed = _report("--unit", "ms", str(pairs))
    assert "5 intervals over 5s: 5,000 events (1k/s)" in timed and "no timestamps" not in timed


#: The hunter's input: one interval of 1e17 events in each of two buckets (`100 * part` overflows int64 past 9.2e16).
HUGE_RECORD = """<begin record>
timestamp, microsec, 1795000010000000, a
counts, interval
start, microsec, 1795000000000000
latencyunit, microsec
label, big
256, {0}
512, {1}
<end record>
"""


def test_shares_of_counts_past_int64_range_of_100_times_are_exact() -> None:
    """`share_text` of NumPy int64 counts near 2**53 and 2**63: exact, no overflow (it read -42.23%), no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert share_text(np.int64(10**17), np.int64(2 * 10**17 + 1)) == " 50.00%"
        assert share_text(np.int64(2**62 - 1), np.int64(2**63 - 2)) == " 50.00%"
        assert share_text(np.int64(2**53 + 1), np.int64(2**53 + 1)) == "100.00%"
        assert share_text(np.int64(1), np.int64(2**63 - 1)) == " <0.01%"
        assert share_text(np.int64(2**62), 2**64) == " 25.00%"  # a whole summed as Python integers


@pytest.mark.parametrize(("counts", "rate"), [((10**17, 10**17 + 1), "20P/s"),
                                              ((2**62 - 1, 2**62 - 1), "922P/s")])
def test_a_report_of_huge_counts_reads_right_and_warns_nothing(tmp_path: Path, counts: tuple[int, int],
                                                                  rate: str) -> None:
    """The report of 1e17 events a bucket (and of 2**62 - 1: a stream of 2**63 - 2 events): each bucket 50.00% of the
    events, the events column as wide as its counts, the rate in P (not `20000000G/s`), nothing on stderr (a NumPy
    overflow warning with a source path was)."""
    path = tmp_path / "huge.txt"
    path.write_text(HUGE_RECORD.format(*counts))
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", str(path)], capture_output=True, text=True,
                          check=True)
    assert done.stderr == ""
    text = done.stdout
    assert f"{sum(counts):,} events ({rate}), " in text
    head, *rows = text.split("\n   bucket")[1].splitlines()
    assert len("   bucket" + head) == len(rows[0]) == len(rows[1]), text  # `events` aligned over the counts
    for row, n, time_share in zip(rows, counts, ("33.33%", "66.67%"), strict=True):
        assert row.split() == [row.split()[0], f"{n:,}", "50.00%", time_share]


def test_no_modes_line_restates_a_bucket_table_of_one_row(fixtures: Path) -> None:
    """A key of a bpftrace map of 1-2 ms sleeps (`ramp`) fills one bucket: `unimodal: 100% of events in 1.02ms–2.05ms`
    was the table's one row again."""
    text = _report(str(fixtures / "bpftrace" / "sleeps_keyed_cumulative.txt"))
    assert "unimodal" not in text and text.count("   1.02ms–2.05ms ") == 2
    assert "unimodal: 99.98% of events in 8.19µs–131µs" in _report(
        str(fixtures / "hdrhistogram" / "hiccup.140623.1028.10646.hlog"))
