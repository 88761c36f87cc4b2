"""Where outputs go: a bad `-o` is refused before any input is read, a failed write is one line and exit code 1."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.core.errors import OutputError
from latencymap.outputs.files import check_output, write_text


def test_an_output_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    check_output(None)
    check_output(str(tmp_path / "report.json"))
    with pytest.raises(OutputError, match="no directory") as missing:
        check_output(str(tmp_path / "nope" / "report.json"))
    with pytest.raises(OutputError, match="is a directory") as folder:
        check_output(str(tmp_path))
    assert missing.value.exit_code == folder.value.exit_code == 2


def test_a_write_that_fails_is_one_line_and_exit_code_1(example_data: Path, tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="cannot write the output: Not a directory") as failed:
        write_text("x", str(example_data / "report.txt"))  # under a file: the open fails
    assert failed.value.exit_code == 1
    out = tmp_path / "report.txt"

    def small_files() -> None:  # Python ignores SIGXFSZ: a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))

    r = subprocess.run([sys.executable, "-m", "latencymap", "report", "-o", str(out), str(example_data)],
                       capture_output=True, text=True, preexec_fn=small_files, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr == f"latencymap: {out}: cannot write the output: File too large\n"


@pytest.mark.parametrize("command", [["report"], ["report", "--format", "parquet"], ["diff", "a.txt"]])
def test_output_problems_are_found_before_any_input_is_read(tmp_path: Path, command: list[str]) -> None:
    missing_input = str(tmp_path / "not-there.txt")  # were it read first, its error would be the one told
    bad = [] if "parquet" in command else ["-o", str(tmp_path / "nope" / "out.txt")]
    r = CliRunner().invoke(main, [*command, *bad, missing_input])
    assert r.exit_code == 2
    assert ("needs -o FILE" if "parquet" in command else "cannot create it: no directory") in r.stderr
    assert "not-there.txt" not in r.stderr
