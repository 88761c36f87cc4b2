"""Escape injection: labels, dates and notices that would clear the screen, move the cursor or set the window title
never reach what the TUI draws; the label still shows, neutralised (each control character as `?`).

The hostile text comes both through a reader (a protocol file) and raw from a source plugin (Intervals and Notices
built by hand, as a third-party source may yield them): the TUI must not rely on readers having cleaned it.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from skips_support import requires_binary
from tui_support import run_ended

from latencymap.cli.common import REGISTRY
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import cut_middle
from latencymap.flow.pipeline import input_flow
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.overview import NAME_W

ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x9b31m\x08\u202e"
LABEL = f"evil{ESCAPES}label"
SHOWN = "evil?[2J?[H?]0;pwned??31m??label"  # clean_text: every control character becomes "?"
#: What must never reach the screen: C0 controls but newline, DEL, C1 controls, bidi overrides.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SIZE = (160, 50)


def raw_flow() -> list[Interval | Notice]:
    """Intervals of a stream with a hostile label and dates, interleaved with hostile notices."""
    stream = StreamId(LABEL, f"bpf{ESCAPES}", "microsec")
    out: list[Interval | Notice] = []
    for k in range(30):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[6 + k % 5] = 10 + k
        out.append(Interval(stream, 1.7e9 + k, 1.7e9 + k + 1, counts, date=f"{ESCAPES}date {k}"))
        if k % 10 == 0:
            out.append(Notice(f"bad record {ESCAPES} skipped", skipped=1))
    return out


def file_flow(tmp_path: Path) -> list[Interval | Notice]:
    """The same through the protocol reader: hostile label, date and a malformed record."""
    text = ""
    for k in range(30):
        text += (f"<begin record>\ntimestamp, microsec, {(k + 1) * 1_000_000}, {ESCAPES}date\nlabel, {LABEL}\n"
                 f"8, {k * 5}\n16, {k * 3}\n<end record>\n")
    text += f"<begin record>\n{ESCAPES}bad line\n<end record>\n"
    path = tmp_path / "hostile.txt"
    path.write_text(text)
    return list(input_flow([str(path)], REGISTRY))


def drawn(app: LatencyMapApp) -> str:
    """The text of every segment of the current screen, as `export_screenshot` renders it (controls excluded)."""
    console = Console(width=SIZE[0], height=SIZE[1], file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text(styles=False)


@pytest.mark.parametrize("source", ["raw", "file"])
def test_hostile_text_never_reaches_the_screen_and_the_label_shows_neutralised(
        source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = raw_flow() if source == "raw" else file_flow(tmp_path)
    assert any(isinstance(i, Notice) for i in items)
    app = LatencyMapApp(iter(items), color_mode="truecolor")
    monkeypatch.chdir(tmp_path)
    screens: list[str] = []

    async def scenario(pilot) -> None:
        screens.append(drawn(app))
        screens.append(app.export_screenshot())
        for key in ("left", "i", "i", "p", "question_mark"):
            await pilot.press(key)
            await pilot.pause(0.3)
            screens.append(drawn(app))
        await pilot.press("escape")
        await pilot.press("s")
        await pilot.pause(0.5)

    run_ended(app, scenario, SIZE)
    for screen in screens:
        assert not CONTROL.search(screen), repr(CONTROL.search(screen))
        assert "\x1b" not in screen and "\x9b" not in screen and "\x07" not in screen
    assert SHOWN in screens[0]
    for screen in screens:  # every OSC title sequence shows as inert text: "?]0;pwned"
        assert all(screen[m.start() - 4:m.start()] == "?]0;" for m in re.finditer("pwned", screen))
    saved = [p for p in tmp_path.iterdir() if p.name.startswith("latencymap-") and p.suffix in (".svg", ".txt")]
    assert len(saved) == 2
    for path in saved:
        assert not CONTROL.search(path.read_text().replace("\n", " ")), path.name


def test_hostile_labels_in_the_overview_and_difference_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two hostile streams: the overview (its header names the slow one), its saved frame and the A − B screen."""
    items = raw_flow()
    other = StreamId(f"peer{ESCAPES}", f"bpf{ESCAPES}", "microsec")
    items += [Interval(other, i.start, i.end, i.counts * 3, date=i.date) for i in items if isinstance(i, Interval)]
    app = LatencyMapApp(iter(items), color_mode="truecolor")
    monkeypatch.chdir(tmp_path)
    screens: list[str] = []

    async def scenario(pilot) -> None:
        screens.append(drawn(app))
        await pilot.press("s", "a", "down", "b", "d")
        await pilot.pause(0.4)
        screens.append(drawn(app))

    run_ended(app, scenario, SIZE)
    assert "OVERVIEW" in screens[0] and "DIFFERENCE" in screens[1]
    for screen in screens:
        assert not CONTROL.search(screen), repr(CONTROL.search(screen))
    assert cut_middle(SHOWN, NAME_W) in screens[0] and "peer?[2J" in screens[0]  # names are cut in the middle
    for path in tmp_path.iterdir():
        assert not CONTROL.search(path.read_text().replace("\n", " ")), path.name


CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import latencymap.cli.main as cli
    from latencymap.core.buckets import NSLOTS
    from latencymap.core.model import Interval, Notice, StreamId
    from latencymap.plugins import Source

    ESC = "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x9b31m"

    class Evil(Source):
        name = "evil"
        summary = "hostile labels, dates and notices"

        def items(self):
            stream = StreamId("evil" + ESC + "label", "bpf", "microsec")
            now = time.time()
            for k in range(40):
                counts = np.zeros(NSLOTS, dtype=np.int64)
                counts[7] = k + 1
                yield Interval(stream, now + k, now + k + 1, counts, date=ESC)
                yield Notice("bad " + ESC, skipped=1)
            time.sleep(60)

    cli.main.add_command(cli.source_command(Evil))
    cli.main(sys.argv[1:], prog_name="latencymap")
""")


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_real_terminal_keeps_its_title_and_screen(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    name = f"lmescape-{tmp_path.name[-12:]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50",
                    f"{sys.executable} {child} evil; sleep 30"], check=True)
    try:
        title_before = subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_title}"], capture_output=True,
                                      text=True, check=True).stdout.strip()
        deadline, screen = time.monotonic() + 40, ""
        while "evil?[2J" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                    check=True).stdout
        time.sleep(1.0)
        screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                check=True).stdout
        title = subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_title}"], capture_output=True,
                               text=True, check=True).stdout.strip()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert "evil?[2J?[H?]0;pwned??31mlabel" in screen, screen
    assert "pwned" not in title and title == title_before
    assert "Frequency" in screen and "Intensity" in screen  # not cleared away
