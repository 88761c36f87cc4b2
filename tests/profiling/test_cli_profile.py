"""The --profile options on every viewing command, and what a failed attach looks like in plain modes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from profiling_support import phase_samples

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import Recorder
from latencymap.profiling.persist import TAG, payloads

T0 = 1_700_000_000.0


def latencymap(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_every_viewing_command_offers_the_profile_options() -> None:
    runner = CliRunner()
    for command in ["view", "replay", *REGISTRY.sources]:
        out = runner.invoke(main, [command, "--help"]).output
        assert "--profile PID" in out and "--profile-subprocesses" in out and "--profile-rate HZ" in out, command
    out = runner.invoke(main, ["profile-export", "--help"]).output
    assert "collapsed" in out and "speedscope" in out


def test_bad_profile_rate_is_a_usage_error(example_data: Path) -> None:
    result = CliRunner().invoke(main, ["--plain", "--once", "--profile", "1", "--profile-rate", "0", str(example_data)])
    assert result.exit_code == 2 and "--profile-rate" in result.output


def test_nonexistent_pid_and_missing_pyspy_are_one_line_each_and_the_view_goes_on(example_data: Path) -> None:
    result = latencymap("--plain", "--once", "--profile", "999999999", str(example_data))
    assert result.returncode == 0 and "Frequency heat map" in result.stdout
    assert _profile_lines(result.stderr) == ["latencymap: profile: no process with PID 999999999; going on without "
                                             "profiling"]
    result = latencymap("replay", "--max", "--plain", "--once", "--profile", str(os.getpid()), str(example_data),
                        env={"LATENCYMAP_PY_SPY": "/nonexistent/py-spy"})
    assert result.returncode == 0 and "Frequency heat map" in result.stdout
    (line,) = _profile_lines(result.stderr)
    assert line.startswith("latencymap: profile: py-spy not found at $LATENCYMAP_PY_SPY=/nonexistent/py-spy")


def _profile_lines(stderr: str) -> list[str]:
    """stderr without the sample's note that it has no datasource line (the reader's, not profiling's)."""
    return [line for line in stderr.splitlines() if "--datasource oracle" not in line]


def test_profile_export_of_a_file_without_samples_is_a_usage_error(example_data: Path) -> None:
    result = latencymap("profile-export", str(example_data))
    assert result.returncode == 2 and "no profile samples (record with --profile PID)" in result.stderr


def test_profile_export_of_a_missing_recording_says_it_is_missing(tmp_path: Path) -> None:
    gone = tmp_path / "gone.zst"
    result = latencymap("profile-export", str(gone))
    assert result.returncode == 2 and result.stderr == f"latencymap: {gone}: No such file or directory\n"


def profiled_recording(path: Path) -> Path:
    """Four 1 s intervals from T0, and 3 s of samples at 100 Hz from T0 (the last at 2.99 s)."""
    rec = Recorder(str(path))
    stream = StreamId("s", "bpf", "microsec")
    for k in range(4):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[10] = 1
        rec.write(Interval(stream, T0 + k, T0 + k + 1, counts))
    for payload in payloads(phase_samples(T0, 3.0, "f")):
        rec.annotate(TAG, payload)
    rec.close()
    return path


def test_profile_export_of_start_after_end_is_a_usage_error_naming_both(tmp_path: Path) -> None:
    rec = profiled_recording(tmp_path / "rec.txt")
    result = latencymap("profile-export", str(rec), "--start", "5", "--end", "2")
    assert result.returncode == 2 and result.stdout == ""
    assert "--start 5 is not before --end 2" in result.stderr


def test_profile_export_of_a_range_without_samples_says_what_the_profile_covers(tmp_path: Path) -> None:
    rec = profiled_recording(tmp_path / "rec.txt")
    out = tmp_path / "out.folded"
    for args, words in ((["--start", "100"], "from 100 s on"),
                        (["--start", "3.5", "--end", "4"], "between 3.5 s and 4 s"),
                        (["--end", "-1.25"], "before -1.25 s")):
        result = latencymap("profile-export", str(rec), *args, "-o", str(out))
        assert result.returncode == 1 and result.stdout == "" and not out.exists(), args
        assert result.stderr == f"latencymap: {rec}: no profile samples {words}; the profile covers 0 s to 2.99 s\n"
    result = latencymap("profile-export", str(rec), "--start", "2.5", "--end", "3.5")
    assert result.returncode == 0 and result.stdout.endswith(";f (/app/work.py:10) 50\n"), result.stderr


def test_a_recording_made_of_a_profiled_recording_carries_its_samples(tmp_path: Path) -> None:
    """`replay --record` and `view --record` of a recording with samples used to drop them without a word."""
    from latencymap.profiling.persist import load_profile

    source = profiled_recording(tmp_path / "prof.lmr")
    original, _ = load_profile([str(source)])
    assert original is not None
    want = original.samples(T0, T0 + 10)
    for command in (["replay", "--max"], ["view"]):
        out = tmp_path / f"{command[0]}.lmr"
        result = latencymap(*command, "--plain", "--once", "--record", str(out), str(source))
        assert result.returncode == 0, result.stderr
        lines = out.read_text().splitlines()
        first_record = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        profile = [i for i, line in enumerate(lines) if line.startswith("# latencymap-profile ")]
        assert profile and min(profile) > first_record  # readers identify the file by its first lines
        carried, _ = load_profile([str(out)])
        assert carried is not None and carried.samples(T0, T0 + 10) == want
