"""The plain view's loop: the last frame of a run shows what the whole input gave."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from latencymap.cli.common import REGISTRY
from latencymap.core.errors import SourceError
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.protocol import format_record
from latencymap.views import printer
from latencymap.views.options import ViewOptions

STREAM = StreamId("io", "bpf", "microsec")
#: What follows the last good record: a record cut by a producer that died in it, or a bad one.
ENDINGS = {"cut": "<begin record>\ntimestamp, microsec, 1700000009000000, r9\nlatencyunit, microsec\n64, 9",
           "bad": "<begin record>\ntimestamp, microsec, 1700000009000000, r9\nlatencyunit, microsec\nlabel, io\n"
                  "64, many\n<end record>\n"}


def frames(path: Path, once: bool, delay: float) -> str:
    """What `latencymap --plain [--once]` writes for `path`, not on a terminal."""
    out = io.StringIO()
    flow = input_flow([str(path)], REGISTRY)
    printer.run_plain(flow, ViewOptions(color=False), once=once, screen_delay=delay, history=1000, out=out)
    return out.getvalue()


@pytest.mark.parametrize("delay", [0.0, 1e-9])
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_the_last_frame_counts_a_record_skipped_after_the_last_interval(tmp_path: Path, ending: str,
                                                                          delay: float) -> None:
    """The input ended in a cut or bad record: the last frame said `skipped records: 0` (it was drawn before the
    skip was counted) while `--once` said 1. The end of input now draws the frame again, with the final count."""
    path = tmp_path / "cut.txt"
    path.write_text("".join(format_record(STREAM, 1_700_000_000.0 + k, np.full(4, 10 * k, dtype=np.int64),
                                          date=f"r{k}") for k in range(1, 5)) + ENDINGS[ending])
    shown = frames(path, once=False, delay=delay)
    last = frames(path, once=True, delay=delay)
    assert "skipped records: 1" in last
    assert shown.endswith(last) and shown.count("Columns: 3") == 2


@pytest.mark.parametrize("once", [False, True])
def test_a_source_that_fails_before_its_first_column_says_its_error_alone(tmp_path: Path, once: bool) -> None:
    """`latencymap spark --plain` of a log that is not there printed `latencymap: no data yet (skipped records: 0)`
    and then the error: as if the source had run and found nothing. The error now comes alone, with its exit code;
    an input that runs and gives nothing still says `no data yet`."""
    import subprocess
    import sys

    missing = tmp_path / "no-such-log"
    run = subprocess.run([sys.executable, "-m", "latencymap", "spark", "--plain", *(["--once"] * once), str(missing)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"latencymap: {missing}: no such file or directory\n"
    out = io.StringIO()
    assert printer.run_plain(iter([]), ViewOptions(), once=once, screen_delay=0.0, history=10, out=out) == 0
    assert out.getvalue() == "latencymap: no data yet (skipped records: 0)\n"

    def failing() -> Iterator[Interval]:
        raise SourceError("the source died")
        yield

    out = io.StringIO()
    with pytest.raises(SourceError):
        printer.run_plain(failing(), ViewOptions(), once=once, screen_delay=0.0, history=10, out=out)
    assert out.getvalue() == ""


def test_a_terminal_sees_no_data_yet_before_the_first_record(tmp_path: Path) -> None:
    """Live `--plain` drew nothing until its first frame, so a slow producer looked like a hung tool (PyLatencyMap
    draws an empty frame at once). On a terminal (tmux) it now says "no data yet" before any record comes, and the
    first frame clears it; to a pipe it writes the frames alone, as before."""
    import shlex
    import subprocess
    import sys
    import time

    from tests.support.formats_support import FIXTURES
    from tests.support.tmux_support import Pane

    example = shlex.quote(str(FIXTURES / "pylatencymap" / "example_latency_data.txt"))
    lm = f"{shlex.quote(sys.executable)} -m latencymap --plain"
    started = time.monotonic()
    pane = Pane(f"(sleep 5; cat {example}) | {lm}")
    try:
        screen = ""
        while "no data yet" not in screen and "Latency" not in screen and time.monotonic() < started + 20:
            time.sleep(0.05)
            screen = pane.capture()
        assert "no data yet (skipped records: 0)" in screen and "Latency" not in screen, screen
        assert time.monotonic() - started < 5, "not before the producer's first record"
        screen = pane.wait_for("Latency Frequency heat map")
        assert "no data yet" not in screen, screen
    finally:
        pane.close()
    piped = subprocess.run(f"(sleep 0.5; cat {example}) | {lm} | head -c 300", shell=True, capture_output=True,
                           text=True, timeout=60, check=False, cwd=tmp_path)
    assert piped.stdout.startswith("Latency Frequency heat map"), piped.stdout
