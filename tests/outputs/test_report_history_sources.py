"""A report under `--history` that dropped columns: its percentiles come from the source's own buckets of the columns
kept, as its text says its figures cover them, in the text, the JSON and the gates alike (an HdrHistogram log
written by the real library, PyPI `hdrhistogram`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hdr_support import Logged, library_histogram, write_library_log

from latencymap.cli.main import main

START = 1_700_000_000.0
SLOW = 250_000  # ns: 2% of each kept interval's values; none of the dropped ones'


def run_log(tmp_path: Path) -> tuple[Path, list[Logged]]:
    """30 one-second intervals: 20 of 100 values at 140 µs, then 10 with 98 at 140 µs and 2 at 250 µs."""
    logged = [Logged(None, START + k, 1.0, [140_000] * 100 if k < 20 else [140_000] * 98 + [SLOW] * 2)
              for k in range(30)]
    return write_library_log(tmp_path / "run.hlog", logged, START), logged


def report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_percentiles_of_the_columns_kept_come_from_their_own_sub_buckets(tmp_path: Path) -> None:
    path, logged = run_log(tmp_path)
    kept = library_histogram([v for item in logged[20:] for v in item.values])
    truth = kept.get_value_at_percentile(99)  # the library's: in 250 µs's sub-bucket
    code, text = report("--history", "10", str(path))
    assert code == 0
    assert "the figures here cover the 10 columns kept" in text
    assert "percentiles come from the source's buckets (linear inside each)" in text, text
    assert "p90 140µs  p99 250µs" in text, text
    code, out = report("--format", "json", "--history", "10", str(path))
    stream = json.loads(out)["streams"][0]
    assert stream["dropped_columns"] == 20 and stream["total"]["events"] == 1000
    own = stream["source_buckets"]
    assert own["events"] == own["stream_events"] == 1000 and own["whole_stream"]
    assert kept.get_lowest_equivalent_value(truth) <= stream["total"]["p99_s"] * 1e9 <= truth + 1
    assert own["p99_s"] == stream["total"]["p99_s"]
    # the whole run's (no column dropped): 20 slow values of 3,000 put its p99 at 140 µs
    assert "p90 140µs  p99 140µs" in report(str(path))[1]


@pytest.mark.parametrize(("gate", "code"), [("p99 < 200us", 0), ("p99 > 200us", 1)])
def test_a_gate_on_the_columns_kept_reads_the_percentile_the_report_prints(tmp_path: Path, gate: str,
                                                                           code: int) -> None:
    path, _ = run_log(tmp_path)
    assert report("--history", "10", "--fail-if", gate, str(path))[0] == code
