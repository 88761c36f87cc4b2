"""`latencymap diff`: its limits and inputs; its `--help` and `profile-export`'s end, like every command's, with
the exit codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.common import EXIT_CODES
from latencymap.cli.main import main


@pytest.mark.parametrize("command", ["diff", "profile-export"])
def test_help_ends_with_its_own_examples_and_every_exit_code(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.endswith(" ".join(EXIT_CODES.replace("\b", "").split()))
    examples = text.split("Examples:", 1)[1].split("Exit codes:", 1)[0]
    commands = re.findall(r"latencymap [\w-]+", examples)
    assert commands and set(commands) == {f"latencymap {command}"}, examples


def _diff(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", "diff", *args], capture_output=True, text=True,
                          input=stdin, timeout=timeout, env={**os.environ, "NO_COLOR": "1"})


def test_diff_takes_the_limits_every_command_that_reads_data_takes(example_data: Path, tmp_path: Path) -> None:
    """`diff --strict`, `--count` and `--duration` were "No such option", though the README says every command that
    reads data takes them: each input is now read up to them."""
    bad = tmp_path / "bad.txt"
    bad.write_text(example_data.read_text().replace("\n1, ", "\n1, x", 1))
    plain = _diff(str(example_data), str(bad))
    assert plain.returncode == 0 and "Skipped records (candidate): 1\n" in plain.stdout, plain.stderr
    strict = _diff("--strict", str(example_data), str(bad))
    assert strict.returncode == 2 and strict.stdout == "", strict.stdout
    assert strict.stderr == (f"latencymap: {bad}: line 5: expected integers in '<bucket value>, <count>', got "
                             "'1, x4129312'\n")
    counted = _diff("--count", "3", str(example_data), str(example_data))
    assert counted.returncode == 0, counted.stderr
    assert "baseline 54,769 events in 3 intervals; candidate 54,769 events in 3 intervals" in counted.stdout
    timed = _diff("--duration", "60", str(example_data), str(example_data))
    assert timed.returncode == 0 and "candidate 1,237,243 events in 71 intervals" in timed.stdout, timed.stderr


def test_stdin_for_both_sides_is_a_usage_error(example_data: Path) -> None:
    """`cat FILE | latencymap diff - -` read it all as the baseline and compared it with nothing, exit code 0."""
    done = _diff("-", "-", stdin=example_data.read_text())
    assert done.returncode == 2 and done.stdout == ""
    assert "Error: '-' (stdin) can be read once: give it as BASELINE or CANDIDATE, not both" in done.stderr


@pytest.mark.timeout(60)
def test_one_fifo_or_pipe_for_both_sides_is_a_usage_error(example_data: Path, tmp_path: Path) -> None:
    """`diff ff ff` with `ff` a FIFO waited forever: the second side opened it again, for a writer that had gone.
    The same input that can be read once, by one name or two (`- /dev/stdin`), is refused as `- -` is."""
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    done = _diff("--datasource", "oracle", str(fifo), str(fifo), timeout=30)  # no writer: it must not open it
    assert done.returncode == 2 and done.stdout == ""
    assert (f"Error: '{fifo}' is one input that can be read once (a pipe, a FIFO): give it as BASELINE or "
            "CANDIDATE, not both") in done.stderr
    done = _diff("-", "/dev/stdin", stdin=example_data.read_text(), timeout=30)
    assert done.returncode == 2 and "Error: '-' and '/dev/stdin' are one input that can be read once" in done.stderr
    done = _diff("--datasource", "oracle", "-", str(example_data), stdin=example_data.read_text())
    assert done.returncode == 0 and "no change" in done.stdout, done.stderr


def test_fail_on_change_exits_1_on_a_change_or_a_stream_on_one_side(example_data: Path, tmp_path: Path) -> None:
    """`diff` exited 0 whatever it found: a CI job could not fail on it. `--fail-on-change` exits 1 when a pair
    changed or a stream is on one side only (the diff is written either way), 0 when nothing changed; its help
    says so before the exit codes."""
    same = _diff("--fail-on-change", str(example_data), str(example_data))
    assert same.returncode == 0 and "no change" in same.stdout, same.stderr
    slower = tmp_path / "slower.txt"
    slower.write_text(re.sub(r"(?m)^(\d+)(, \d+)$", lambda m: f"{4 * int(m.group(1))}{m.group(2)}",
                             example_data.read_text()))
    plain = _diff(str(example_data), str(slower))
    assert plain.returncode == 0 and "latency shifted +2.00 octaves" in plain.stdout, plain.stdout
    failed = _diff("--fail-on-change", str(example_data), str(slower))
    assert failed.returncode == 1 and failed.stdout == plain.stdout and failed.stderr == ""
    other = tmp_path / "other.txt"
    other.write_text(example_data.read_text() + example_data.read_text().replace("label, ", "label, more "))
    assert _diff("--fail-on-change", str(example_data), str(other)).returncode == 1
    text = " ".join(CliRunner().invoke(main, ["diff", "--help"], terminal_width=120).output.split())
    assert ("With --fail-on-change, exit code 1 also when a pair of streams changed, a stream is on one side only, "
            "or no stream was read on either side (as a failed --fail-if gate of 'report'). Exit codes: 0 done;"
            in text)


def test_count_reads_every_stream_of_each_side(tmp_path: Path) -> None:
    """`diff --count 10` of sda+sdb against three `io` streams paired `sda → io` (each side's flow ended at its first
    stream's 11th interval, leaving one stream each); it now finds no stream in common and says so."""
    from latencymap.core.model import StreamId
    from latencymap.protocol import format_record

    def records(streams: list[StreamId]) -> str:
        return "".join(format_record(s, 1_700_000_000.0 + k, np.full(4, 10 * k, dtype=np.int64), date=f"r{k}")
                       for s in streams for k in range(21))

    base, cand = tmp_path / "base.txt", tmp_path / "cand.txt"
    base.write_text(records([StreamId(d, "bpf", "microsec") for d in ("sda", "sdb")]))
    cand.write_text(records([StreamId("io", d, u) for d, u in (("bpf", "microsec"), ("bpf", "millisec"),
                                                                ("dtrace", "microsec"))]))
    done = _diff("--count", "10", str(base), str(cand))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Nothing compared: no stream is on both sides (2 only in the baseline, 3 only in "
                                  "the candidate).\n"), done.stdout
    assert "→" not in done.stdout
