"""Real-terminal tests in tmux: `cat fixture | latencymap`, keys, exit code, a live slow producer."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from skips_support import requires_binary
from tui_support import EXAMPLE

pytestmark = [pytest.mark.slow, requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")]

SLOW_PRODUCER = """
import sys, time
cum = [0] * 8
for k in range(400):
    for i in range(8):
        cum[i] += (k * 7 + i * 13) % 50 + i
    lines = ["<begin record>", f"timestamp, microsec, {1_700_000_000_000_000 + k * 50_000}, t{k}",
             "label, slow producer", "latencyunit, millisec", "datasource, bpf"]
    lines += [f"{1 << i}, {c}" for i, c in enumerate(cum)] + ["<end record>"]
    sys.stdout.write("\\n".join(lines) + "\\n")
    sys.stdout.flush()
    time.sleep(0.05)
"""


class Pane:
    """A detached tmux session running one shell command at 160x50."""

    def __init__(self, command: str) -> None:
        self.name = f"lmtest-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "160", "-y", "50",
                        f"{command}; echo EXIT=$?; sleep 30"], check=True)

    def capture(self, escapes: bool = False) -> str:
        args = ["tmux", "capture-pane", "-p", "-t", self.name] + (["-e"] if escapes else [])
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{self.capture()}")

    def alternate_screen(self) -> bool:
        out = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{alternate_on}"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def latencymap_command() -> str:
    return f"{shlex.quote(sys.executable)} -m latencymap"


@pytest.fixture
def pane_factory():
    panes: list[Pane] = []

    def make(command: str) -> Pane:
        pane = Pane(command)
        panes.append(pane)
        return pane

    yield make
    for pane in panes:
        pane.close()


def test_piped_fixture_draws_both_maps_answers_keys_and_quits(pane_factory) -> None:
    pane = pane_factory(f"TERM=xterm-256color COLORTERM=truecolor cat {shlex.quote(str(EXAMPLE))} | "
                        f"{latencymap_command()}")
    screen = pane.wait_for("ENDED")
    assert "Frequency: events per second" in screen and "Intensity: time waited" in screen
    assert "columns 71" in screen
    rows = [line for line in pane.capture(escapes=True).splitlines() if "16ms" in line]
    assert rows and all(re.search("\x1b\\[48;[25];", line) for line in rows)
    pane.keys("f")
    time.sleep(0.5)
    assert "Intensity: time waited" not in pane.capture()
    pane.keys("f", "space")
    pane.wait_for("PAUSED")
    pane.keys("space")
    pane.wait_for("ENDED")
    assert pane.alternate_screen()
    pane.keys("q")
    pane.wait_for("EXIT=0")
    assert not pane.alternate_screen()


def test_slow_producer_updates_the_screen_live(pane_factory, tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_PRODUCER)
    pane = pane_factory(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} | {latencymap_command()}")
    first = _columns(pane.wait_for("LIVE"))
    time.sleep(1.5)
    second = _columns(pane.wait_for("LIVE"))
    assert second > first
    pane.keys("q")
    pane.wait_for("EXIT=0")


def _columns(screen: str) -> int:
    for line in screen.splitlines():
        if "columns " in line:
            return int(line.split("columns ")[1].split()[0])
    raise AssertionError(f"no column count on screen:\n{screen}")
