from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap import __version__
from latencymap.cli.main import main
from latencymap.core.units import format_duration

BAD = """<begin record>
timestamp, microsec, 1000000, a
1, 10
<end record>
<begin record>
timestamp, microsec, 2000000, b
3, 10
<end record>
<begin record>
timestamp, microsec, 3000000, c
1, 30
<end record>
"""


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


def drawn_latest(out: str) -> list[float]:
    """The frequency map's latest-values column, top row first (read by column position, NO_COLOR)."""
    return [value for _, value in drawn_rows(out)]


def drawn_rows(out: str) -> list[tuple[str, float]]:
    """(row label, latest value) of the frequency map, top row first."""
    lines = out.split("Intensity heat map")[0].splitlines()
    end = lines[0].index("Latest") + len("Latest")
    rows = [line for line in lines[2:] if len(line) >= end and not line.lstrip().startswith("x=time")]
    return [(line.split()[0], float(_unsuffix(line[end - 9: end].strip()))) for line in rows]


def _unsuffix(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}
    return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text)


def test_version_and_help() -> None:
    r = CliRunner().invoke(main, ["--version"])
    assert __version__ in r.output
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0 and "Examples:" in r.output and "report" in r.output


def test_bad_record_is_skipped_with_line_number_and_stream_continues(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(BAD)
    r = run("report", "--format", "json", str(p))
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    (stream,) = doc["streams"]
    assert doc["errors"]["skipped_records"] == stream["errors"]["report_skipped_records"] == 1
    assert "line 7" in doc["errors"]["messages"][0] and "power of 2" in doc["errors"]["messages"][0]
    assert stream["total"]["events"] == 20


def test_strict_makes_first_error_fatal_with_exit_2(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(BAD)
    r = run("report", "--strict", str(p))
    assert r.returncode == 2
    assert "line 7" in r.stderr
    r = run("--plain", "--once", "--strict", str(p))
    assert r.returncode == 2


def test_missing_file_and_unknown_format_exit_2(tmp_path: Path) -> None:
    r = run("report", str(tmp_path / "nope.txt"))
    assert r.returncode == 2 and "nope.txt" in r.stderr
    p = tmp_path / "junk.txt"
    p.write_text("hello\nworld\n")
    r = run("report", str(p))
    assert r.returncode == 2 and "unrecognised input format" in r.stderr and "pylatencymap" in r.stderr


def test_an_empty_input_reports_no_data_and_fails_a_gate(tmp_path: Path) -> None:
    r = run("report", stdin="")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "No data.\nNotes:\n   <stdin>: empty input, nothing to read\n"
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = run("report", "--fail-if", "p99 > 20ms", str(empty))
    assert r.returncode == 1 and "no stream to check" in r.stderr


def test_plain_once_from_stdin_prints_both_maps_and_latest_matches_report(example_data: Path) -> None:
    text = example_data.read_text()
    for data in (text, text[: text.index("<begin record>", len(text) // 2)]):
        r = run("--plain", "--once", stdin=data, env={"NO_COLOR": "1"})
        assert r.returncode == 0, r.stderr
        assert "Frequency heat map" in r.stdout and "Intensity heat map" in r.stdout
        drawn = drawn_rows(r.stdout)[::-1]
        rep = json.loads(run("report", "--format", "json", stdin=data).stdout)["streams"][0]
        last = np.array(rep["frequency"][-1])
        lows = [format_duration(b["low"]) for b in rep["buckets"]]
        # rows fit the data: each row is labelled with its own bucket (edge rows fold what lies beyond them)
        assert len(drawn) >= 8 and drawn[0][0] in lows and drawn[-1][0] in lows
        for label, value in drawn:
            assert value == pytest.approx(float(last[lows.index(label)]), rel=1e-3, abs=1e-9)
        assert sum(v for _, v in drawn) == pytest.approx(float(last.sum()), rel=1e-3, abs=1e-9)
    assert np.array(json.loads(run("report", "--format", "json", stdin=data).stdout)["streams"][0]
                    ["frequency"][-1]).sum() > 0  # the half file ends on a busy column


def test_pylatencymap_options_are_accepted_in_both_spellings(example_data: Path) -> None:
    for args in (["--num_records=20", "--min_bucket=2", "--max_bucket=8", "--screen_delay=0", "-d", "0"],
                 ["--num-records", "20", "--min-bucket", "2", "--max-bucket", "8", "--frequency-maxval", "100",
                  "--intensity_maxval", "2"]):
        r = run("--plain", "--once", *args, str(example_data), env={"NO_COLOR": "1"})
        assert r.returncode == 0, r.stderr
        freq = r.stdout.split("Intensity heat map")[0].splitlines()
        assert sum(1 for line in freq if "|" not in line and line[:8].strip().startswith(("<", "≥"))) == 2
        assert any(line.strip().startswith("≥256ms") for line in freq)


def test_count_stops_after_n_intervals(example_data: Path) -> None:
    r = run("report", "--format", "json", "--count", "5", str(example_data))
    assert json.loads(r.stdout)["streams"][0]["columns"] == 5


def test_plain_frames_every_interval_when_not_once(example_data: Path) -> None:
    text = example_data.read_text()
    part = "".join(text.split("<end record>")[i] + "<end record>" for i in range(4))
    r = run("--plain", "--screen_delay=0", stdin=part, env={"NO_COLOR": "1"})
    assert r.returncode == 0
    assert r.stdout.count("Frequency heat map") == 3


@pytest.mark.parametrize(("given", "said"), [(["--history", "64M"], "64 MiB"), (["--history", "500"],
                                              "500 columns per stream"), ([], None)])
def test_the_recording_header_says_how_much_history_was_kept(tmp_path: Path, given: list[str],
                                                             said: str | None) -> None:
    from latencymap.core.accumulator import DEFAULT_HISTORY

    rec = tmp_path / "h.rec"
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"
    ran = CliRunner().invoke(main, ["--plain", "--once", *given, "--record", str(rec), str(fixture)])
    assert ran.exit_code == 0, ran.output
    header = json.loads(rec.read_text().splitlines()[0].split(" ", 2)[2])
    assert header["options"]["history"] == (said or str(DEFAULT_HISTORY))


def test_the_recording_header_says_how_the_inputs_were_read(tmp_path: Path) -> None:
    """`--datasource oracle` moves every row an octave: the header lacked it, so nobody could tell how the recorded
    columns were read from the input it names."""
    rec = tmp_path / "d.rec"
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"
    ran = CliRunner().invoke(main, ["--plain", "--once", "--datasource", "oracle", "--format", "pylatencymap",
                                    "--record", str(rec), str(fixture)])
    assert ran.exit_code == 0, ran.output
    options = json.loads(rec.read_text().splitlines()[0].split(" ", 2)[2])["options"]
    assert options["datasource"] == "oracle" and options["input_format"] == "pylatencymap"
    assert options["inputs"] == [str(fixture)]


@pytest.mark.parametrize("args", [[], ["--plain"], ["report"], ["report", "--format", "json"]])
def test_no_input_and_a_terminal_on_stdin_is_a_usage_error_not_a_silent_wait(args: list[str]) -> None:
    main_fd, terminal = os.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "latencymap", *args], stdin=terminal, capture_output=True,
                           text=True, timeout=60)
    finally:
        os.close(terminal)
        os.close(main_fd)
    assert r.returncode == 2
    assert "no input: name INPUT files, pipe records in (some_source | latencymap ...)" in r.stderr


def test_a_dash_still_reads_records_typed_at_the_terminal(example_data: Path) -> None:
    main_fd, terminal = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "-"], stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = example_data.read_bytes()
        two = text[: text.index(b"<end record>", text.index(b"<end record>") + 1)] + b"<end record>\n"
        os.write(main_fd, two + b"\x04")  # two records (less than a terminal's line queue holds), then Ctrl-D
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(terminal)
        os.close(main_fd)
    assert proc.returncode == 0, err
    assert out.startswith("== db file sequential read latency data from gv$event_histogram  [bpf, millisec]\n"
                          "   1 interval over")


@pytest.mark.parametrize(("option", "value"), [("--count", "0"), ("--count", "-5"), ("--duration", "0"),
                                               ("--duration", "-1")])
def test_limits_that_would_read_nothing_are_usage_errors(example_data: Path, option: str, value: str) -> None:
    result = CliRunner().invoke(main, ["report", option, value, str(example_data)])
    assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output


@pytest.mark.parametrize(("args", "said"), [
    (["-n", "0"], "Invalid value for '--num_records'"),
    (["--screen_delay", "-1"], "Invalid value for '--screen_delay'"),
    (["--min_bucket", "-2"], "Invalid value for '--min_bucket'"),
    (["--max_bucket", "99"], "Invalid value for '--max_bucket'"),
    (["--min_bucket", "10", "--max_bucket", "2"], "--min_bucket 10 is above --max_bucket 2: no row would be left")])
def test_pylatencymap_options_that_would_show_nothing_are_usage_errors(example_data: Path, args: list[str],
                                                                       said: str) -> None:
    result = CliRunner().invoke(main, ["--plain", "--once", *args, str(example_data)])
    assert result.exit_code == 2 and said in result.output


@pytest.mark.parametrize("args", [["report"], ["--plain"], ["--emit"], [], ["-"], ["report", "-"]])
def test_a_closed_stdin_is_a_usage_error(args: list[str]) -> None:
    """`latencymap report <&-`: sys.stdin is None, and every mode ended in a traceback (`--emit` after writing its
    header)."""
    closed = ["sh", "-c", 'exec "$0" -m latencymap "$@" <&-', sys.executable, *args]
    done = subprocess.run(closed, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "standard input is closed" in done.stderr and "Traceback" not in done.stderr and done.stdout == ""


def test_dash_on_a_terminal_is_refused_by_the_tui() -> None:
    """`latencymap -` typed at a terminal opened the TUI, which read its keys from the same terminal as the records
    were read from: each key went to whichever read came first (3 presses of q to quit). It is a usage error that
    says what works: --plain, `report -`, a file."""
    import pty

    main_fd, terminal = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "latencymap", "-"], stdin=terminal, stdout=terminal,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(terminal)
        os.close(main_fd)
    assert done.returncode == 2, done.stderr
    assert "--plain" in done.stderr and "report -" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "meant"), [
    (["--Version"], "Did you mean '--version'?"), (["--du", "1"], "Did you mean '--duration'?"),
    (["--Plain"], "Did you mean '--plain'?"), (["--duraton", "1"], "Did you mean '--duration'?"),
    (["diff", "--Format", "json"], "Did you mean '--format'?"),
    (["report", "--Format", "json"], "no such option: --Format. Did you mean '--format'?"),
    (["report", "--du", "1"], "Did you mean '--duration'?")])
def test_an_unknown_option_suggests_the_one_meant(example_data: Path, args: list[str], meant: str) -> None:
    """click's guess (difflib) knows neither case nor prefixes: `--Version` read "Did you mean '--duration'?" and
    `--du 1` `--unit`. The same option in another case comes first, then those it begins; the group's `--version`
    counts where `view` runs as the default command."""
    result = CliRunner().invoke(main, [*args, str(example_data), str(example_data)], prog_name="latencymap")
    assert result.exit_code == 2 and result.output.strip().endswith(meant), result.output
