"""`guarded`: a command ends with its signal's exit code, and a repeated signal cuts short an end-of-command hook
that cannot finish (a recording into a pipe no one reads)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _records(path: Path, n: int = 2000) -> None:
    """`n` PyLatencyMap records of 20 buckets each: far more than a pipe holds."""
    ts = 1_700_000_000_000_000
    rows = "".join(f"{1 << b}, {{}}\n" for b in range(20))
    path.write_text("".join(f"<begin record>\ntimestamp, microsec, {ts + i * 1_000_000}, t{i}\nlatencyunit, microsec\n"
                            f"label, s\n" + rows.format(*(i * (b + 1) for b in range(20))) + "<end record>\n"
                            for i in range(n)))


@pytest.mark.slow
@pytest.mark.parametrize(("second", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_a_second_signal_ends_a_command_whose_recording_cannot_be_finished(tmp_path: Path, second: int,
                                                                           code: int) -> None:
    """Ctrl-C while `--record` writes into a FIFO whose reader has stopped reading: closing the recording (an
    end-of-command hook) waits on that pipe; a second signal ends the command there, with the first one's exit code
    and no traceback. Before, every signal during the hooks was only noted: the process could not be stopped."""
    data, fifo = tmp_path / "in.txt", tmp_path / "rec.fifo"
    _records(data)
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # held open, never read
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--screen_delay=0", "--record",
                               str(fifo), "--force", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        time.sleep(3)  # the pipe is full: the thread that writes the recording waits
        assert viewer.poll() is None, viewer.communicate()[1]
        viewer.send_signal(signal.SIGINT)
        time.sleep(1)
        assert viewer.poll() is None, "the recording's close did not wait on the full pipe: the test tests nothing"
        viewer.send_signal(second)
        _, err = viewer.communicate(timeout=10)
    finally:
        if viewer.poll() is None:
            viewer.kill()
            viewer.wait(10)
        os.close(reader)
    assert viewer.returncode == code, err
    assert "Traceback" not in err and "Aborted" not in err, err
