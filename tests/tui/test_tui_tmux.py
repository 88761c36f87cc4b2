"""Real-terminal tests in tmux: `cat fixture | latencymap`, keys, exit code, a live slow producer."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from process_support import bpf_unavailable
from skips_support import requires_binary
from tmux_support import Pane
from tui_support import EXAMPLE

from latencymap.tui.overview_axis import GAP

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

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


def latencymap_command() -> str:
    return f"{shlex.quote(sys.executable)} -m latencymap"


@pytest.fixture
def pane_factory():
    panes: list[Pane] = []

    def make(command: str, size: tuple[int, int] = (160, 50)) -> Pane:
        pane = Pane(command, size)
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
    pane.wait_gone("Intensity: time waited")  # as soon as the app has drawn it: a loaded machine takes longer
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


def test_overview_of_12_ranks_shows_them_all_and_the_slow_one_first(pane_factory) -> None:
    """A real recording of 12 instrumented processes, rank 7 slow at the end: the first screen is the overview."""
    ranks = FIXTURES / "training" / "ranks12.txt"
    pane = pane_factory(f"TZ=UTC TERM=xterm-256color COLORTERM=truecolor {latencymap_command()} "
                        f"{shlex.quote(str(ranks))}", size=(180, 50))
    pane.wait_for("OVERVIEW · ENDED")
    screen = pane.wait_for("▲")  # the ratio column settles on the repaint after the input ends
    labels = [line for line in screen.splitlines() if "train/rank" in line and "/step" in line]
    names = {re.search(r"train/rank\d+/step", line)[0] for line in labels}
    assert len(names) >= 8
    first = next(line for line in screen.splitlines() if line.startswith(">"))
    assert "train/rank7/step" in first and "▲" in first  # sorted by p99 now: the slow peer on top, marked
    strips = [line for line in pane.capture(escapes=True).splitlines() if "train/rank" in line]
    assert all(re.search("\x1b\\[48;[25];", line) for line in strips)  # every stream has its heat strip
    pane.keys("Enter")
    screen = pane.wait_for("Frequency: events per second")
    assert "train/rank7/step" in screen.splitlines()[0]
    pane.keys("Escape")
    pane.wait_for("OVERVIEW · ENDED")
    pane.keys("q")
    pane.wait_for("EXIT=0")


def test_fast_disk_recording_rows_are_its_own_buckets(pane_factory) -> None:
    """A real `latencymap bpf block --record` capture of a virtio disk (p50 ~27 µs), no options: its I/Os sit in
    rows labelled with their own buckets, not in a folded `<256µs` row."""
    recording = FIXTURES / "bpftrace" / "block_fast_disk.zst"
    pane = pane_factory(f"TERM=xterm-256color COLORTERM=truecolor {latencymap_command()} "
                        f"{shlex.quote(str(recording))}", size=(180, 50))
    screen = pane.wait_for("ENDED")
    freq = screen.split("Intensity:")[0].splitlines()
    labels = [line.split()[0] for line in freq if re.match(r"^ +[<≥]?[\d.]+[µnm]?s ", line)]
    assert {"16.4µs", "32.8µs", "65.5µs"} <= set(labels), screen
    assert not any(label.startswith("<") for label in labels), screen
    coloured = {_plain(line).split()[0] for line in pane.capture(escapes=True).split("Intensity:")[0].splitlines()
                if re.search("\x1b\\[48;[25];", line) and re.match(r"^ +[\d.]+µs", _plain(line))}
    assert {"16.4µs", "32.8µs"} <= coloured  # the I/Os are drawn in those rows
    pane.keys("q")
    pane.wait_for("EXIT=0")


@pytest.mark.skipif(bpf_unavailable() is not None, reason=bpf_unavailable() or "")
def test_live_bpf_block_of_a_fast_disk_in_a_real_terminal(pane_factory, tmp_path: Path) -> None:
    """`latencymap bpf block` live in tmux 180x50 while dd does direct 4 KiB I/O on /var/tmp: rows of its buckets."""
    target = Path("/var/tmp") / f"lm-tui-{uuid.uuid4().hex[:8]}"
    load = (f"for i in $(seq 1 200); do dd if=/dev/zero of={target} bs=4k count=200 oflag=direct status=none; "
            f"dd if={target} of=/dev/null bs=4k count=200 iflag=direct status=none; done; rm -f {target}")
    pane = pane_factory(f"TERM=xterm-256color {latencymap_command()} bpf block --backend bpftrace --duration 12",
                        size=(180, 50))
    pane.wait_for("LIVE", timeout=40)
    worker = subprocess.Popen(["bash", "-c", load])
    try:
        deadline = time.monotonic() + 30
        labels: set[str] = set()
        while time.monotonic() < deadline and not {"16.4µs", "32.8µs"} & labels:
            freq = pane.capture(escapes=True).split("Intensity:")[0].splitlines()
            labels = {_plain(line).split()[0] for line in freq
                      if re.search("\x1b\\[48;[25];", line) and re.match(r"^ +[\d.]+[µn]s ", _plain(line))}
            time.sleep(0.5)
        assert {"8.19µs", "16.4µs", "32.8µs", "65.5µs"} & labels, pane.capture()
        assert not any(line.lstrip().startswith("<") for line in pane.capture().split("Intensity:")[0].splitlines())
    finally:
        worker.kill()
        worker.wait()
        target.unlink(missing_ok=True)
    pane.wait_for("ENDED", timeout=30)
    pane.keys("q")
    pane.wait_for("EXIT=0")


def _plain(line: str) -> str:
    return re.sub("\x1b\\[[0-9;]*m", "", line)


def test_spark_source_shows_its_stragglers_panel(pane_factory) -> None:
    """`latencymap spark LOG` in a real terminal: the maps, and the straggler tasks the report would list."""
    log = FIXTURES / "spark" / "plain"
    pane = pane_factory(f"TERM=xterm-256color {latencymap_command()} spark {shlex.quote(str(log))}", size=(160, 50))
    screen = pane.wait_for("2 stragglers in 1 of 5 stage attempts")
    assert "task 5 (id 9) in stage 2.0: 2.55s, 7.5× the stage median without warm-up (338ms)" in screen
    pane.keys("q")
    pane.wait_for("EXIT=0")


def test_80x24_terminal_keeps_both_maps_whole_and_the_help_scrolls(pane_factory) -> None:
    """A real 80x24 terminal: no inspector (`v` shows a compact one), both maps with their rows and axes, the
    status lines unwrapped; the help fits, scrolls, and `q` closes it rather than the app."""
    # (as Oracle's, as it is: no note that it was read as bpf in the footer's place)
    pane = pane_factory(f"TERM=xterm-256color COLORTERM=truecolor {latencymap_command()} --datasource oracle "
                        f"{shlex.quote(str(EXAMPLE))}", size=(80, 24))
    pane.wait_for("ENDED", timeout=60)  # "findings" is on the screen while it waits for data too (a loaded machine)
    lines = pane.wait_for("findings").splitlines()
    assert lines[0].startswith(" ENDED ") and lines[1].startswith(" latest ") and "overall" in lines[1]
    assert sum(line.startswith((" Frequency:", " Intensity:")) for line in lines) == 2
    assert sum("max " in line for line in lines) == 2 and "bucket" not in "".join(lines)
    assert all(line.index("max ") > 60 for line in lines if "max " in line)  # the maps span the width
    pane.keys("v")
    lines = pane.wait_for("bucket events").splitlines()
    assert sum(line.startswith((" Frequency:", " Intensity:")) for line in lines) == 2
    pane.keys("?")
    lines = pane.wait_for("latencymap keys").splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    pane.keys("PageDown")
    pane.wait_for("current directory")
    pane.keys("End")
    pane.wait_for("Ctrl-C")
    pane.keys("q")
    screen = pane.wait_for("Frequency:")
    assert "latencymap keys" not in screen and "EXIT=" not in screen
    pane.keys("q")
    pane.wait_for("EXIT=0")


def test_a_burst_of_notices_under_load_leaves_nothing_over_the_header(pane_factory, tmp_path: Path) -> None:
    """`plus minus bracketleft bracketright` typed as letters say a dozen notices in 4 s (`t` stragglers, `m a b c`
    profile, `g n` replay, `s` saves). As toasts they were more than the screen holds, the first laid out above its
    top, and on a loaded machine (busy processes here, as on the machine it was found on) the end of one stayed
    over the header for good once they had all gone. They are said on the bottom line now, one after another: the
    header reads whole."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(min(24, 3 * (os.cpu_count() or 1)))]
    try:
        # `s` (in "plus") saves the screen in the working directory
        pane = pane_factory(f"cd {shlex.quote(str(tmp_path))} && {latencymap_command()} {shlex.quote(str(EXAMPLE))}",
                            (120, 40))
        pane.wait_for("overall", timeout=60)
        for key in ("Left", "Left"):
            pane.keys(key)
            time.sleep(1)
        for word in ("plus", "minus", "bracketleft", "bracketright"):
            pane.keys("-l", word)
            time.sleep(1)
        for key in ("l", "l", "Left", "Left", "Left", "Left"):
            pane.keys(key)
            time.sleep(1)
        time.sleep(12)  # every notice gone (6 s each), with time to spare under load
        head = pane.capture().splitlines()[:2]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert "▌" not in "".join(head), head
    # the note that the sample was read as bpf is counted there (it ranks above the columns' count, which goes)
    assert "1 note (w)" in head[0] and "overall 5.77k ev/s  mean 22.5ms  p50 14.9ms  p99 100ms" in head[1], head


def test_80x24_a_note_is_said_in_the_footers_place_and_the_help_saves_itself(pane_factory, tmp_path: Path) -> None:
    """A real 80x24 terminal: the sample's datasource note was a toast of 15 lines over both maps' newest columns and
    legends for 10 s. It is said on the bottom line, in the footer's place, the maps whole around it; `w` lists it
    and gives the footer back. On the help, `s` saves it, as its own footer says."""
    pane = pane_factory(f"cd {shlex.quote(str(tmp_path))} && TERM=xterm-256color COLORTERM=truecolor "
                        f"{latencymap_command()} {shlex.quote(str(EXAMPLE))}", size=(80, 24))
    pane.wait_for("reading (w)", timeout=60)
    lines = pane.wait_for("ENDED").splitlines()  # the note comes with the data, and stays 6 s
    assert lines[-1].startswith(" reading (w)  example_latency_data.txt: 'db file"), lines[-1]
    assert "1 note (w)" in lines[0] and "▌" not in "".join(lines)  # no toast's edge anywhere
    assert sum(line.startswith((" Frequency:", " Intensity:")) for line in lines) == 2
    assert sum("max " in line for line in lines) == 2 and all(line.index("max ") > 60 for line in lines
                                                             if "max " in line)  # the legends, not covered
    assert sum(bool(re.match(r" +[<≥]?\d+ms +│ ", line)) for line in lines) == 12, lines  # every row of both maps
    pane.keys("w")
    pane.wait_for("What reading said: 1 message")
    pane.keys("w")
    assert pane.wait_for("Quit").splitlines()[-1].startswith(" tab Stream  q Quit")
    pane.keys("?")
    pane.wait_for("latencymap keys")
    footer = pane.wait_for("Close").splitlines()[-1]
    assert "Close" in footer and "s Save" in footer and "Pause" not in footer, footer
    pane.keys("s")
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob("latencymap-*.txt")) and time.monotonic() < deadline:
        time.sleep(0.1)
    saved = list(tmp_path.glob("latencymap-*.txt"))
    assert len(saved) == 1 and saved[0].read_text().startswith("latencymap keys")
    assert saved[0].with_suffix(".svg").exists()
    pane.keys("q")
    pane.wait_gone("latencymap keys")
    pane.keys("q")
    pane.wait_for("EXIT=0")


def test_overview_of_recordings_years_apart_in_a_real_terminal(pane_factory, tmp_path: Path) -> None:
    """The SystemTap sample (2015) read with the 12-rank recording (2026): every strip was one cell of an axis
    labelled `00:00:00` three times. Each recording has its part of the strips, its date under its first cell, and
    the silence between them one cell marked in every strip."""
    both = tmp_path / "years.txt"
    both.write_text((FIXTURES / "pylatencymap" / "test_SystemTap_data.txt").read_text()
                    + (FIXTURES / "training" / "ranks12.txt").read_text())
    pane = pane_factory(f"TZ=UTC TERM=xterm-256color COLORTERM=truecolor {latencymap_command()} "
                        f"{shlex.quote(str(both))}", size=(120, 30))
    pane.wait_for("OVERVIEW · ENDED", timeout=60)
    lines = pane.wait_for("2026-11-23").splitlines()
    strips = [line for line in lines[2:] if "train/rank" in line or "SystemTap" in line]
    assert len(strips) == 13
    gap = {line.index(GAP) for line in strips}
    assert len(gap) == 1, strips  # the same cell in every strip
    axis = next(line for line in lines if "2026-11-23" in line)
    assert axis.index("╵2015-03-14") < gap.pop() == axis.index(GAP) < axis.index("╵2026-11-23"), axis
    coloured = next(line for line in pane.capture(escapes=True).splitlines() if "SystemTap" in line)
    assert len(set(re.findall("\x1b\\[48;[25];[0-9;]+m", coloured))) >= 3, coloured  # its cells, in several colours
    pane.keys("q")
    pane.wait_for("EXIT=0")
