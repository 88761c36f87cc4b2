"""Where outputs go: a bad `-o` is refused before any input is read, a failed write is one line and exit code 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from process_support import run_file_size_limited

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
    r = run_file_size_limited(1000, [sys.executable, "-m", "latencymap", "report", "-o", str(out), str(example_data)],
                              capture_output=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr == f"latencymap: {out}: cannot write the output: File too large\n"
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing half-written left, not even the temporary file


def test_a_file_output_is_replaced_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    """`-o` writes beside the file and renames over it: one who had the old file open (or a hard link: a reader
    mid-read) keeps the old text whole, and never sees half of the new one (node_exporter's textfile collector
    reads `*.prom` files so). Its mode stays; a FIFO is written in place."""
    out = tmp_path / "latencymap.prom"
    out.write_text("old\n")
    out.chmod(0o640)
    held = tmp_path / "held"
    os.link(out, held)
    write_text("new\n", str(out))
    assert out.read_text() == "new\n" and held.read_text() == "old\n"
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held", "latencymap.prom"]
    link = tmp_path / "link.prom"
    link.symlink_to(out)
    write_text("newer\n", str(link))
    assert link.is_symlink() and out.read_text() == "newer\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    write_text("through\n", str(fifo))
    assert reader.communicate(timeout=10)[0] == "through\n"


@pytest.mark.parametrize("command", [["report"], ["report", "--format", "parquet"], ["diff", "a.txt"]])
def test_output_problems_are_found_before_any_input_is_read(tmp_path: Path, command: list[str]) -> None:
    missing_input = str(tmp_path / "not-there.txt")  # were it read first, its error would be the one told
    bad = [] if "parquet" in command else ["-o", str(tmp_path / "nope" / "out.txt")]
    r = CliRunner().invoke(main, [*command, *bad, missing_input])
    assert r.exit_code == 2
    assert ("needs -o FILE" if "parquet" in command else "cannot create it: no directory") in r.stderr
    assert "not-there.txt" not in r.stderr


def test_a_child_capped_at_a_file_size_leaves_every_module_importable(tmp_path: Path) -> None:
    """A capped run compiles no module: a .pyc cut at the cap would fail every later import of it, in any process."""
    (tmp_path / "big.py").write_text("NUMBERS = [" + ", ".join(map(str, range(2000))) + "]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    capped = run_file_size_limited(1000, [sys.executable, "-c", "import big"], env=env, cwd=tmp_path,
                                   capture_output=True)
    assert capped.returncode == 0, capped.stderr
    again = subprocess.run([sys.executable, "-c", "import big; print(len(big.NUMBERS))"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == "2000\n", again.stderr


@pytest.mark.parametrize("args", [
    ["report", "DATA"], ["report", "--format", "json", "DATA"], ["report", "--format", "openmetrics", "DATA"],
    ["diff", "DATA", "DATA"], ["--plain", "--once", "DATA"], ["--plain", "--screen-delay", "0", "DATA"],
    ["replay", "--plain", "DATA"], ["--help"], ["--version"], ["report", "--help"],
])
def test_stdout_that_cannot_be_written_is_one_line_and_exit_code_1(tmp_path: Path, example_data: Path,
                                                                    args: list[str]) -> None:
    """stdout on a full disk, or closed (`>&-`): one line naming it, exit code 1, no traceback (it was an OSError or,
    closed, an AttributeError on None)."""
    command = [sys.executable, "-m", "latencymap", *[str(example_data) if a == "DATA" else a for a in args]]
    with (tmp_path / "out.txt").open("w") as out:  # a disk with no space left: files of 0 bytes at most
        full = run_file_size_limited(0, command, stdout=out, stderr=subprocess.PIPE)
    closed = subprocess.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", *command], stderr=subprocess.PIPE, text=True,
                            timeout=60)
    for r, reason in ((full, "File too large"), (closed, "it is closed")):
        assert r.returncode == 1, r.stderr
        assert r.stderr.splitlines()[-1] == f"latencymap: standard output: cannot write the output: {reason}"
        assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


@pytest.mark.parametrize("args", [["report"], ["--plain", "--screen-delay", "0"], ["--help"]])
def test_a_reader_that_went_away_still_ends_the_command_quietly(example_data: Path, args: list[str]) -> None:
    """`| head`: no failure of latencymap's (exit code 0, nothing said)."""
    r = subprocess.run(["/bin/bash", "-c", '"$@" | head -c 1 >/dev/null; exit "${PIPESTATUS[0]}"', "sh",
                        sys.executable, "-m", "latencymap", *args, str(example_data)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "cannot write" not in r.stderr
