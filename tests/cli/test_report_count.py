"""`report --count N` keeps N intervals of each stream, whatever input or place in it the stream comes from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from latencymap.core.model import StreamId
from latencymap.protocol import format_record


def disk(label: str, median_us: float, n: int = 20, seed: int = 1) -> str:
    """`n` intervals of 1,000 lognormal events of disk `label` (µs) as cumulative protocol records."""
    rng = np.random.default_rng(seed)
    stream = StreamId(label, "bpf", "microsec")
    counts = np.zeros(24, dtype=np.int64)
    out = [format_record(stream, 1_700_000_000.0, counts.copy(), date="r0")]
    for k in range(1, n + 1):
        slots = np.floor(np.log2(rng.lognormal(np.log(median_us), 0.3, 1000))).astype(int)
        counts += np.bincount(slots, minlength=24)[:24]
        out.append(format_record(stream, 1_700_000_000.0 + k, counts.copy(), date=f"r{k}"))
    return "".join(out)


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", "report", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_gate_sees_every_input_and_every_stream_under_count(tmp_path: Path) -> None:
    """`report --count 10 --fail-if 'p99 > 10ms' in_a.txt in_b.txt` reported in_a's `sda` alone and passed (exit 0):
    in_b's `sdb`, p99 126 ms, was never read; so with both disks in one file, one after the other."""
    fast, slow = tmp_path / "in_a.txt", tmp_path / "in_b.txt"
    fast.write_text(disk("sda", 200))
    slow.write_text(disk("sdb", 50_000, seed=2))
    both = tmp_path / "both.txt"
    both.write_text(fast.read_text() + slow.read_text())
    for inputs in ([str(fast), str(slow)], [str(both)]):
        done = report("--count", "10", "--fail-if", "p99 > 10ms", *inputs)
        assert done.returncode == 1, done.stdout
        assert "gate failed: 'p99 > 10ms' on stream 'sdb'" in done.stderr
        assert "--count 10: 'sdb' (bpf, microsec) had 10 more intervals after its first 10: left out" in done.stdout
        got = json.loads(report("--count", "10", "--format", "json", *inputs).stdout)
        assert {s["stream"]["label"]: s["columns"] for s in got["streams"]} == {"sda": 10, "sdb": 10}


SPARK_LOG = Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain"


def test_a_finished_spark_log_read_by_its_source_says_what_count_left_out() -> None:
    """`report spark --count 20 LOG` kept 20 columns of a finished log without a word, as if the source were live,
    where `report --count 20 LOG` says what it left out; the Spark sections cover the whole log either way."""
    as_input = report("--count", "20", "--format", "json", str(SPARK_LOG))
    by_source = report("--count", "20", "--format", "json", "spark", str(SPARK_LOG))
    assert as_input.returncode == by_source.returncode == 0, by_source.stderr
    whole = json.loads(report("--format", "json", str(SPARK_LOG)).stdout)
    (stream,) = whole["streams"]
    label, left = stream["stream"]["label"], stream["columns"] - 20
    assert left > 50
    for done in (as_input, by_source):
        got = json.loads(done.stdout)
        assert [s["columns"] for s in got["streams"]] == [20]
        assert got["errors"]["messages"] == [
            f"--count 20: '{label}' (spark, millisec) had {left} more intervals after its first 20: left out",
            "spark: its analysis covers all it read, the intervals --count left out of the maps too"]
        assert got["source"]["stragglers"] == whole["source"]["stragglers"]


def test_the_spark_view_of_a_finished_log_says_what_count_left_out() -> None:
    done = subprocess.run([sys.executable, "-m", "latencymap", "spark", "--count", "20", "--once", "--plain",
                           str(SPARK_LOG)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "more intervals after its first 20: left out" in done.stdout + done.stderr
