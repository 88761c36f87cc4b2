"""`report --history`: the report's memory can be bounded as the views' is, and its notes say what it covers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.core.model import StreamId
from latencymap.protocol import format_record


def wide_input(path: Path, columns: int) -> Path:
    rng = np.random.default_rng(4)
    stream = StreamId("wide", "bpf", "microsec")
    with path.open("w") as fh:
        for i in range(columns):
            counts = np.zeros(64, dtype=np.int64)
            counts[2:60] = rng.integers(0, 1 << 30, 58)  # incompressible: about 250 bytes a column
            fh.write(format_record(stream, 1e9 + i + 1, counts, None, start=1e9 + i, per_interval=True))
    return path


@pytest.mark.parametrize(("history", "said"), [
    ("100", "each stream keeps its newest 100 columns (--history 100)"),
    ("1M", "the memory budget (1 MiB, --history) is full"),
])
def test_a_report_under_a_history_limit_says_what_it_dropped_and_covers(tmp_path: Path, history: str,
                                                                       said: str) -> None:
    path = wide_input(tmp_path / "wide.txt", 6000)
    r = CliRunner().invoke(main, ["report", "--format", "json", "--history", history, str(path)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (stream,) = doc["streams"]
    kept = stream["columns"]
    assert kept == 100 if history == "100" else 100 < kept < 6000
    messages = doc["errors"]["messages"]
    assert sum(said in m for m in messages) == 1, messages
    assert messages[-1].endswith(f"{6000 - kept:,} of the 6,000 columns read were dropped, the oldest first; this "
                                 f"report covers the {kept:,} columns kept, not the whole run"), messages
    text = CliRunner().invoke(main, ["report", "--history", history, str(path)])
    assert text.exit_code == 0 and "this report covers the" in text.stdout


def test_report_history_is_parsed_as_the_views(tmp_path: Path) -> None:
    path = wide_input(tmp_path / "wide.txt", 10)
    whole = CliRunner().invoke(main, ["report", "--format", "json", str(path)])
    assert whole.exit_code == 0 and "history" not in " ".join(json.loads(whole.stdout)["errors"]["messages"])
    for bad, why in (("lots", "neither a memory size"), ("0", "whole number >= 1"), ("12K", "under 1 MiB")):
        r = CliRunner().invoke(main, ["report", "--history", bad, str(path)])
        assert r.exit_code == 2 and why in r.output, r.output
