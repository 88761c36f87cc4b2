"""`producer | latencymap`: the TUI leaves the terminal to the producer until the first bytes come down the pipe."""

from __future__ import annotations

import io
import os
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest
from skips_support import requires_binary
from tmux_support import Pane

from latencymap.flow.stdin import WAITING, wait_for_pipe

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"


def test_waits_for_the_first_bytes_reads_none_and_says_so_once_after_the_quiet_time():
    r, w = os.pipe()
    err = io.StringIO()
    threading.Timer(0.6, os.write, (w, b"<begin record>\n")).start()
    began = time.monotonic()
    try:
        wait_for_pipe(r, quiet_s=0.2, err=err)
        waited = time.monotonic() - began
        assert os.read(r, 100) == b"<begin record>\n"  # nothing was taken from the pipe
    finally:
        os.close(r)
        os.close(w)
    assert 0.5 < waited < 5 and err.getvalue() == WAITING + "\n"


def test_data_already_there_or_a_closed_pipe_returns_at_once_in_silence():
    for data in (b"x", None):
        r, w = os.pipe()
        if data:
            os.write(w, data)
        else:
            os.close(w)
        err = io.StringIO()
        began = time.monotonic()
        wait_for_pipe(r, quiet_s=5, err=err)
        assert time.monotonic() - began < 1 and err.getvalue() == ""
        os.close(r)
        if data:
            os.close(w)


@pytest.mark.parametrize("most", [0.1, 0.5])
def test_a_silent_pipe_is_waited_for_no_longer_than_the_runs_duration(most: float) -> None:
    """`sleep 20 | latencymap --duration 2`: the TUI waited the 20 s for the pipe before its flow (and its deadline)
    began."""
    r, w = os.pipe()
    err = io.StringIO()
    began = time.monotonic()
    try:
        wait_for_pipe(r, quiet_s=0.2, err=err, most=most)
        waited = time.monotonic() - began
    finally:
        os.close(r)
        os.close(w)
    assert most - 0.05 < waited < most + 1 and err.getvalue() == ("" if most < 0.2 else WAITING + "\n")


# -- in a real terminal ------------------------------------------------------------------------------------------

PASSWORD_PRODUCER = """
read -s pw                      # from the terminal, as SQL*Plus reads its password (-S: no prompt text)
printf '%s' "$pw" > {got}
cat {example}
"""


@pytest.fixture
def pane():
    panes: list[Pane] = []

    def make(command: str) -> Pane:
        panes.append(Pane(command))
        return panes[-1]

    yield make
    for made in panes:
        made.close()


def latencymap() -> str:
    return f"{shlex.quote(sys.executable)} -m latencymap"


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_producer_that_asks_for_a_password_on_the_terminal_gets_it_then_the_tui_starts(pane, tmp_path):
    got = tmp_path / "got.txt"
    script = tmp_path / "producer.sh"
    script.write_text(PASSWORD_PRODUCER.format(got=shlex.quote(str(got)), example=shlex.quote(str(EXAMPLE))))
    p = pane(f"bash {shlex.quote(str(script))} | {latencymap()}")
    p.wait_for("waiting for the first record from the pipe")
    assert not p.alternate_screen()  # the terminal is still the producer's
    p.keys("pw quit", "Enter")  # Enter is a carriage return: a terminal in raw mode would not end the line
    screen = p.wait_for("ENDED")
    assert got.read_text() == "pw quit" and "columns 71" in screen
    p.keys("q")
    p.wait_for("EXIT=0")


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_producer_that_writes_at_once_starts_the_tui_with_no_wait_said(pane):
    p = pane(f"cat {shlex.quote(str(EXAMPLE))} | {latencymap()}")
    began = time.monotonic()
    p.wait_for("ENDED")
    assert time.monotonic() - began < 10
    p.keys("q")
    screen = p.wait_for("EXIT=0")
    assert "waiting for the first record" not in screen
