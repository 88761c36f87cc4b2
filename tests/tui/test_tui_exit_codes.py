"""Exit codes as documented: `q` is 0; Ctrl-C, as a key in the TUI or SIGINT to the process, is 130 (interrupted)."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from skips_support import requires_binary
from tmux_support import Pane as TmuxPane
from tui_support import EXAMPLE, example_items, wait_ended

from latencymap.tui.app import LatencyMapApp

SLOW_PRODUCER = r"""
import sys, time
for i in range(100000):
    sys.stdout.write(f"<begin record>\ntimestamp, microsec, {(i + 1) * 1000000}, x\nlabel, slow\n1, {i}\n"
                     "<end record>\n")
    sys.stdout.flush()
    time.sleep(0.02)
"""


@pytest.mark.parametrize(("key", "code"), [("ctrl+c", 130), ("q", 0)])
def test_key_exit_codes(key: str, code: int) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="mono")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            await pilot.press(key)
            await pilot.pause(0.2)

    asyncio.run(main())
    assert app.return_code == code


@pytest.mark.slow
def test_sigint_to_the_plain_view_exits_130_keeping_the_recording(tmp_path: Path) -> None:
    rec = tmp_path / "int.txt"
    producer = subprocess.Popen([sys.executable, "-c", SLOW_PRODUCER], stdout=subprocess.PIPE)
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--record", str(rec)],
                            stdin=producer.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert producer.stdout is not None
    producer.stdout.close()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not rec.exists() or rec.read_text().count("<end record>") < 5):
            time.sleep(0.05)
        view.send_signal(signal.SIGINT)
        rc = view.wait(15)
    finally:
        producer.kill()
        producer.wait()
        view.kill()
    assert rc == 130
    assert view.stderr is not None and "Traceback" not in view.stderr.read()
    assert rec.read_text().endswith("<end record>\n")


class Pane(TmuxPane):
    """A tmux pane that can find the latencymap process it runs."""

    def viewer_pid(self) -> int:
        """The latencymap process of the pane (a child of the pane's shell)."""
        shell = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{pane_pid}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if stat[stat.rindex(")") + 2:].split()[1] == shell and b"latencymap" in cmdline:
                return int(entry.name)
        raise AssertionError("no latencymap process in the pane")



@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.parametrize("how", ["key", "signal"])
def test_ctrl_c_in_a_real_terminal_exits_130(how: str) -> None:
    pane = Pane(f"cat {shlex.quote(str(EXAMPLE))} | {shlex.quote(sys.executable)} -m latencymap")
    try:
        pane.wait_for("ENDED")
        if how == "key":
            subprocess.run(["tmux", "send-keys", "-t", pane.name, "C-c"], check=True)
        else:
            os.kill(pane.viewer_pid(), signal.SIGINT)
        pane.wait_for("EXIT=130")
    finally:
        pane.close()
