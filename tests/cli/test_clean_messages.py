"""Text from outside in a message on stderr (a file name, an option value) reaches the terminal cleaned: escape
sequences (OSC with BEL, CSI), C1 controls and bidi overrides show as `?`, whichever part of latencymap says it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: A window title set (OSC ... BEL), the screen cleared (CSI), a C1 CSI, a right-to-left override.
NASTY = "x\x1b]0;TITLE\x07\x1b[2J\x9b31m\u202eevil"
CLEANED = "x?]0;TITLE??[2J?31m?evil"
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")

BAD_RECORD = "<begin record>\nlabel, x\n1, 2\nbad line\n<end record>\n"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NO_COLOR": "1"}, stdin=subprocess.DEVNULL)


def clean(stderr: str) -> str:
    """`stderr`, having checked that no control character of NASTY is in it."""
    assert not [c for c in CONTROLS if c in stderr], repr(stderr)
    return stderr


def test_an_input_that_does_not_exist(tmp_path: Path) -> None:
    r = run("report", tmp_path / NASTY)
    assert r.returncode == 2
    assert clean(r.stderr).strip() == f"latencymap: {tmp_path}/{CLEANED}: No such file or directory"


def test_the_summary_of_an_input_of_which_no_record_could_be_read(tmp_path: Path) -> None:
    bad = tmp_path / f"{NASTY}.txt"
    bad.write_text(BAD_RECORD)
    for args in (["report", bad], ["--plain", "--once", bad]):  # the report, and the plain view's notices too
        r = run(*args)
        assert r.returncode == 1
        lines = clean(r.stderr).strip().splitlines()
        assert lines[-1].startswith(f"latencymap: {tmp_path}/{CLEANED}.txt: no record could be read (1 skipped); "
                                    f"the first: {tmp_path}/{CLEANED}.txt: line 4: ")


@pytest.mark.parametrize("option", ["-o", "--record"])
def test_an_output_or_a_recording_that_cannot_be_created(tmp_path: Path, example_data: Path, option: str) -> None:
    args = ["report", "-o"] if option == "-o" else ["--plain", "--once", "--record"]
    r = run(*args, tmp_path / NASTY / "out", example_data)
    assert r.returncode == 2
    assert clean(r.stderr).startswith(f"latencymap: {tmp_path}/{CLEANED}/out: cannot create")


def test_clicks_errors_too(tmp_path: Path, example_data: Path) -> None:
    r = run("report", f"--{NASTY}", example_data)  # a usage error raised in a command, shown by click
    assert r.returncode == 2 and f"no such option: --{CLEANED}" in clean(r.stderr)
    r = run("--history", NASTY, example_data)  # a value click's own parameter type refuses
    assert r.returncode == 2 and "Invalid value for '--history'" in clean(r.stderr)


@pytest.mark.parametrize("args", [["--history", NASTY], [f"--history={NASTY}"], ["--datasource", NASTY],
                                  ["report", "--unit", NASTY], ["report", "--fail-if", f"p99>{NASTY}"]])
def test_an_option_value_shows_its_controls_as_question_marks(example_data: Path, args: list[str]) -> None:
    """As the README says, not as Python quotes them (`'x\\x1b]0;TITLE'`)."""
    r = run(*args, example_data)
    assert r.returncode == 2 and CLEANED in clean(r.stderr) and "\\x1b" not in r.stderr, r.stderr


def test_multi_line_messages_keep_their_lines(tmp_path: Path) -> None:
    unknown = tmp_path / NASTY
    unknown.write_text("no format reads this\n")
    r = run("report", unknown)
    assert r.returncode == 2
    lines = clean(r.stderr).splitlines()
    assert lines[0].startswith(f"latencymap: {tmp_path}/{CLEANED}: unrecognised input format.")
    assert len(lines) > 3 and lines[1].startswith("  ")  # the list of formats, a line each
