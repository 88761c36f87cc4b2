from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main

LAYOUTS = ("plain", "rolling", "zstd", "lz4", "snappy")


def report(*args: str) -> dict:
    r = CliRunner().invoke(main, ["report", "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_report_runs_a_source_and_every_spark_layout_gives_the_same_report(fixtures: Path) -> None:
    reports = [report("spark", str(fixtures / "spark" / layout)) for layout in LAYOUTS]
    assert all(r == reports[0] for r in reports[1:])
    plain = next((fixtures / "spark" / "plain").iterdir())
    task_ends = sum(1 for line in plain.read_text().splitlines() if '"Event":"SparkListenerTaskEnd"' in line)
    assert sum(s["total"]["events"] for s in reports[0]["streams"]) == task_ends
    assert all(s["intensity_exact"] for s in reports[0]["streams"])
    expected = json.loads((fixtures / "spark" / "expected.json").read_text())["stragglers"]
    found = [{k: s[k] for k in ("stage", "attempt", "index")} for s in reports[0]["source"]["stragglers"]]
    assert found == expected


def test_source_options_pass_through_report(fixtures: Path) -> None:
    per_stage = report("spark", str(fixtures / "spark" / "zstd"), "--per-stage")
    assert len(per_stage["streams"]) == 5
    text = CliRunner().invoke(main, ["report", "spark", str(fixtures / "spark" / "zstd")]).output
    assert "Stragglers: 2" in text


def test_unknown_options_on_plain_inputs_are_usage_errors(example_data: Path) -> None:
    r = CliRunner().invoke(main, ["report", "--bogus", str(example_data)])
    assert r.exit_code == 2 and "no such option: --bogus" in r.output


@pytest.mark.parametrize("args", [["spark", "--metric", "nope", "x"], ["spark"]])
def test_bad_source_arguments_are_usage_errors(args: list[str]) -> None:
    r = CliRunner().invoke(main, ["report", *args])
    assert r.exit_code == 2
