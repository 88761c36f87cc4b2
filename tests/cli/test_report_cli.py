"""`latencymap report --fail-if` over an input of which no record could be read: the gate says it had no stream."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})


GATE_LINE = "latencymap: gate failed: 'p99 > 1s': no stream to check (no data)"


def test_a_gate_over_an_unreadable_input_says_it_had_no_stream_to_check(tmp_path: Path) -> None:
    # The run failed for the unreadable input (exit 1) without the gate's line, which an empty input gets.
    bad = tmp_path / "bad.txt"
    bad.write_text("<begin record>\ntimestamp, microsec, 1700000000000000, t\nlatencyunit, microsec\nlabel, io\n"
                   "1, x\n<end record>\n")
    done = run("report", "--fail-if", "p99 > 1s", str(bad))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == GATE_LINE
    assert lines[1].startswith(f"latencymap: {bad}: no record could be read (1 skipped)")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    done = run("report", "--fail-if", "p99 > 1s", str(empty))
    assert done.returncode == 1 and done.stderr.splitlines() == [GATE_LINE]


def test_a_gate_over_a_readable_input_beside_an_unreadable_one_checks_its_streams(tmp_path: Path,
                                                                                   example_data: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("<begin record>\nlabel, io\n1, x\n<end record>\n")
    done = run("report", "--fail-if", "p99 > 1ms", "--fail-if", "p99 > 100s", str(example_data), str(bad))
    assert done.returncode == 1
    assert "gate failed: 'p99 > 1ms'" in done.stderr and "'p99 > 100s'" not in done.stderr
    assert "no record could be read" in done.stderr.splitlines()[-1]


#: `python -c PACED N`: N records of one stream on stdout, one every 0.1 s, then silence (a live producer).
PACED = ("import sys, time\n"
         "for k in range(1, int(sys.argv[1]) + 1):\n"
         "    print(f'<begin record>\\ntimestamp, microsec, {1700000000000000 + k * 1000000}, r{k}\\n'\n"
         "          f'latencyunit, microsec\\nlabel, io\\ndatasource, bpf\\n64, {10 * k}\\n<end record>', flush=True)\n"
         "    time.sleep(0.1)\n"
         "time.sleep(60)\n")


def test_a_report_hung_up_writes_what_was_read(tmp_path: Path) -> None:
    """SIGHUP (the terminal closed, ssh dropped: how a remote `... | latencymap report -o x` usually dies) killed the
    report with nothing written (exit 129); it now ends as SIGTERM does, with the report of what was read."""
    out = tmp_path / "report.json"
    producer = subprocess.Popen([sys.executable, "-c", PACED, "5"], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "--format", "json", "-o", str(out)],
                                stdin=producer.stdout, stderr=subprocess.PIPE, text=True)
        producer.stdout.close()
        time.sleep(4)  # started, and the 5 records read
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=30)
    finally:
        producer.kill()
        producer.wait()
    assert proc.returncode == 129 and "Traceback" not in err, err
    doc = json.loads(out.read_text())
    assert doc["streams"][0]["columns"] == 4
    assert any("hung up (SIGHUP)" in m and "covers what was read until then" in m for m in doc["errors"]["messages"])


@pytest.mark.parametrize("unreadable", [False, True])
def test_a_signal_while_the_report_is_written_lets_it_be_written(tmp_path: Path, example_data: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 unreadable: bool) -> None:
    """The inputs read to their end (beside one that is unreadable: the report of the readable one is written, then
    the run fails), a first SIGTERM as the report is being written: the report is written whole, and the exit code is
    the signal's. It raised inside the writing, and no report was written (seen as `report listen --otlp --duration 1`
    ended, under load: test_otlp_stop.py's race)."""
    from latencymap.cli import report as report_cli

    inputs = [str(example_data)]
    if unreadable:
        bad = tmp_path / "bad.txt"
        bad.write_text("<begin record>\nlabel, io\n1, x\n<end record>\n")
        inputs.append(str(bad))
    whole = tmp_path / "whole.json"
    assert CliRunner().invoke(main, ["report", "--format", "json", "-o", str(whole), *inputs]).exit_code == unreadable
    write = report_cli._write

    def signalled(*args: Any, **kw: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs in this thread, at the next bytecode
        write(*args, **kw)

    monkeypatch.setattr(report_cli, "_write", signalled)
    out = tmp_path / "report.json"
    done = CliRunner().invoke(main, ["report", "--format", "json", "-o", str(out), *inputs])
    assert done.exit_code == 143, done.output
    assert out.read_text() == whole.read_text()
