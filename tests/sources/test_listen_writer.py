from __future__ import annotations

import socket
import time
from pathlib import Path

from listen_support import listening

from latencymap.core.model import Interval, Notice
from latencymap.sources.listen import ListenSource
from latencymap.sources.listen_writer import MAX_LINE


def test_a_10_mb_line_is_dropped_and_said_once_and_the_record_after_it_is_read(tmp_path: Path) -> None:
    """One 10 MB line (no record) sent to a real listener gave 78 identical notices and 78 skipped records: every
    64 KiB chunk of it said the line dropped again."""
    path = tmp_path / "lm.sock"
    thread, items = listening(ListenSource(path=str(path), writers=1, idle_timeout=20), path)
    now = int(time.time() * 1e6)
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(path))
        conn.sendall(b"x" * (10 << 20) + b"\n")
        conn.sendall((f"<begin record>\ntimestamp, microsec, {now}, x\ncounts, interval\n"
                      f"start, microsec, {now - 1_000_000}\nlatencyunit, nanosec\nlabel, job/rank0/step\n"
                      "datasource, training\n8388608, 5\n<end record>\n").encode())
    thread.join(20)
    assert not thread.is_alive()
    notices = [n for n in items if isinstance(n, Notice)]
    dropped = [n for n in notices if "line longer than" in n.message]
    assert [n.message for n in dropped] == [f"listen: writer 1: line longer than {MAX_LINE} bytes dropped"]
    assert sum(n.skipped for n in notices) == 1
    assert [int(iv.counts.sum()) for iv in items if isinstance(iv, Interval)] == [5]
