from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner
from process_support import bpf_unavailable
from prometheus_support import Serving, reply

from latencymap.cli.main import main
from latencymap.cli.report import _report_source, split_source_args
from latencymap.cli.report import report as report_command

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


def test_after_a_source_name_its_own_options_win_and_reports_options_still_work() -> None:
    args = ["--format", "json", "scrape", "http://127.0.0.1:9/metrics", "--metric", "m", "--interval", "0.5",
            "--count", "4", "--fail-if", "p99 > 1s", "--match=job=api", "-o", "out.json", "--sum"]
    kept, source = split_source_args(report_command.params, args)
    assert kept == ["--format", "json", "--count", "4", "--fail-if", "p99 > 1s", "-o", "out.json"]
    assert source == ["scrape", "http://127.0.0.1:9/metrics", "--metric", "m", "--interval", "0.5",
                      "--match=job=api", "--sum"]
    # `--interval` is also the 10046 format's option: here it is the scrape's; scrape stops itself at whole scrapes
    scrape = _report_source(source, {"count": 4, "duration": None})
    assert scrape is not None and scrape.interval == 0.5 and scrape.count == 4
    assert split_source_args(report_command.params, ["--interval", "7", "trace.trc"]) == (
        ["--interval", "7", "trace.trc"], [])
    assert split_source_args(report_command.params, ["-o", "scrape", "x.txt"]) == (["-o", "scrape", "x.txt"], [])



def test_a_live_source_s_notices_reach_stderr_as_they_come() -> None:
    with socket.socket() as probe:  # a port nothing listens on: every scrape is refused
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/metrics"
    r = CliRunner().invoke(main, ["report", "scrape", url, "--metric", "m", "--interval", "0.05", "--duration", "0.3",
                                  "--timeout", "0.2"])
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith(f"latencymap: scrape: {url}: connection refused")
    assert r.stdout.startswith(f"No data.\nNotes:\n   scrape: {url}: connection refused")


def test_a_path_with_no_event_log_is_an_input_error_not_a_failed_source(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["report", "spark", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert r.stderr == (f"latencymap: {tmp_path}: no Spark event log here (a file, an eventlog_v2_* directory, or "
                        "their directory)\n")


@pytest.mark.parametrize(("args", "option"), [
    (["bpf", "block", "--interval", "0"], "--interval"),  # was read as the default, 1 s
    (["listen", "--idle-timeout", "-1"], "--idle-timeout"), (["listen", "--writers", "0"], "--writers"),
    (["spark", "LOG", "--straggler-ratio", "0.5"], "--straggler-ratio"),
    (["spark", "LOG", "--interval", "-5"], "--interval"),
    (["spark", "LOG", "--poll", "0"], "--poll")])
def test_source_values_that_make_no_sense_are_usage_errors(args: list[str], option: str) -> None:
    r = CliRunner().invoke(main, ["report", *args])
    assert r.exit_code == 2 and f"Invalid value for '{option}'" in r.output


def test_a_report_of_several_spark_logs_gives_each_its_analysis(fixtures: Path, tmp_path: Path) -> None:
    """Two runs given as inputs: each log's stragglers and stages, under its input and application, as each alone
    gives them (the report used to drop them all without a word)."""
    plain = next((fixtures / "spark" / "plain").iterdir())
    other = tmp_path / "local-2"
    other.write_bytes(plain.read_bytes().replace(b'"App ID":"' + plain.name.encode() + b'"', b'"App ID":"local-2"')
                      .replace(b'"App Name":"latencymap-fixture"', b'"App Name":"second-run"'))
    alone = [report(str(p))["source"] for p in (plain, other)]
    both = report(str(plain), str(other))
    assert "source" not in both
    assert both["sources"] == [{**one, "input": str(p)} for one, p in zip(alone, (plain, other), strict=True)]
    assert [s["application"] for s in both["sources"]] == [
        {"id": plain.name, "name": "latencymap-fixture"}, {"id": "local-2", "name": "second-run"}]
    text = CliRunner().invoke(main, ["report", str(plain), str(other)]).output
    heads = [line for line in text.splitlines() if line.startswith("== spark analysis of ")]
    assert heads == [f"== spark analysis of {plain} (latencymap-fixture {plain.name}):",
                     f"== spark analysis of {other} (second-run local-2):"]
    mine = text.split(heads[1])
    alone_text = CliRunner().invoke(main, ["report", str(plain)]).output
    analysis = alone_text[alone_text.index("Application:"):]  # the application's time, stragglers, stages
    assert mine[0].endswith(heads[0] + "\n" + analysis) and mine[1] == "\n" + analysis


def _run_report(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", "report", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_a_source_that_fails_before_any_column_gives_its_error_not_a_report(tmp_path: Path) -> None:
    """A real endpoint serving only a gauge: `report scrape` fails at its first scrape. Its error alone (exit 1),
    as when the source cannot run here at all: no "No data." report whose note says the source ran and failed,
    and no report file."""

    class Gauge(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            reply(self, 200, "text/plain; version=0.0.4", b"# TYPE app_up gauge\napp_up 1\n")

        def log_message(self, *args: object) -> None:
            pass

    served = Serving(Gauge)
    try:
        for out in ([], ["--format", "json", "-o", str(tmp_path / "r.json")]):
            r = _run_report(*out, "scrape", served.url, "--metric", "app_up", "--count", "2")
            assert r.returncode == 1, r.stderr
            assert r.stdout == "" and "No data" not in r.stderr and "this report covers" not in r.stderr
            assert r.stderr.startswith("latencymap: scrape: ") and "app_up is a gauge, not a histogram" in r.stderr
        assert not (tmp_path / "r.json").exists()
    finally:
        served.close()


@pytest.mark.slow
@pytest.mark.skipif(bpf_unavailable() is not None, reason=bpf_unavailable() or "")
def test_report_bpf_with_its_forced_backend_unusable_gives_the_one_no_backend_error() -> None:
    """`report bpf --backend bcc` where bcc cannot compile: the error of no backend, as where none is installed,
    not an empty report noting that bpf ran and failed."""
    r = _run_report("bpf", "block", "--backend", "bcc", "--count", "1", env={"BCC_KERNEL_SOURCE": "/nonexistent"})
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert r.stderr.startswith("latencymap: bpf: no BPF backend works here (tried bcc, in this order) — bcc: "
                               "BCC_KERNEL_SOURCE=/nonexistent is not a complete kernel headers tree"), r.stderr
