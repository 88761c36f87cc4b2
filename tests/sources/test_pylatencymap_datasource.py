"""Oracle records without a `datasource` line: read with the default (bpf) semantics, said once; `--datasource`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from field_support import EXAMPLE

from latencymap.cli.main import main


def report(*args: str) -> dict:
    r = CliRunner().invoke(main, ["report", "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def sample_total() -> int:
    """Events in the sample by its own rows: last record minus first, every row of every instance."""
    bodies = re.findall(r"<begin record>(.*?)<end record>", EXAMPLE.read_text(), re.S)
    sums = [sum(int(c) for c in re.findall(r"^\d+, (\d+)$", body, re.M)) for body in bodies]
    return sums[-1] - sums[0]


def datasource_notes(doc: dict) -> list[str]:
    return [m for m in doc["errors"]["messages"] if "'datasource'" in m]


def test_the_shipped_oracle_sample_says_which_semantics_it_was_read_with() -> None:
    doc = report(str(EXAMPLE))
    (stream,) = doc["streams"]
    assert stream["stream"]["datasource"] == "bpf" and stream["total"]["events"] == sample_total()
    (note,) = datasource_notes(doc)
    assert str(EXAMPLE) in note and "read as bpf" in note and "[v, 2v)" in note
    assert "'datasource, oracle'" in note and "--datasource oracle" in note
    assert doc["errors"]["skipped_records"] == 0


def test_datasource_option_reads_the_sample_as_oracle_one_octave_lower() -> None:
    bpf, oracle = report(str(EXAMPLE))["streams"][0], report("--datasource", "oracle", str(EXAMPLE))
    assert not datasource_notes(oracle)
    (stream,) = oracle["streams"]
    assert stream["stream"]["datasource"] == "oracle"
    assert stream["total"]["events"] == bpf["total"]["events"] == sample_total()
    # one octave lower, but Oracle's bucket `1` is "< 1": it starts at 0
    assert [b["low"] for b in stream["buckets"]] == [0.0 if b["low"] == 0.001 else b["low"] / 2
                                                     for b in bpf["buckets"]]
    assert stream["frequency"] == bpf["frequency"]
    # a bucket's log-uniform mean scales with it: every estimated time halves
    assert stream["total"]["time_s"] == pytest.approx(bpf["total"]["time_s"] / 2, rel=1e-12)


def test_datasource_option_on_stdin_and_in_the_view() -> None:
    run = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "--datasource", "ORACLE"],
                         input=EXAMPLE.read_text(), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["streams"][0]["stream"]["datasource"] == "oracle"
    env = {**os.environ, "NO_COLOR": "1"}
    view = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--datasource", "oracle",
                           str(EXAMPLE)], capture_output=True, text=True, timeout=60, env=env)
    assert view.returncode == 0 and "datasource" not in view.stderr
    plain = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", str(EXAMPLE)],
                           capture_output=True, text=True, timeout=60, env=env)
    assert plain.stderr.count("--datasource oracle") == 1


def test_a_declared_datasource_wins_and_other_labels_are_not_told(tmp_path: Path) -> None:
    declared = EXAMPLE.read_text().replace("latencyunit, millisec", "latencyunit, millisec\ndatasource, bpf")
    path = tmp_path / "declared.txt"
    path.write_text(declared)
    doc = report("--datasource", "oracle", str(path))
    assert doc["streams"][0]["stream"]["datasource"] == "bpf" and not datasource_notes(doc)
    other = tmp_path / "connector.txt"
    other.write_text(EXAMPLE.read_text().replace("from gv$event_histogram", "from my connector"))
    assert not datasource_notes(report(str(other)))


def test_an_unknown_datasource_name_is_a_usage_error() -> None:
    r = CliRunner().invoke(main, ["report", "--datasource", "oracel", str(EXAMPLE)])
    assert r.exit_code == 2 and "oracel" in r.output
