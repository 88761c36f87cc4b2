from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from listen_support import listening
from skips_support import requires_module

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


WORKERS_FIRST = """
import sys, time
from torch.utils.data import DataLoader, Dataset
from latencymap.instrument import Timings
timings = Timings("unix:" + sys.argv[1], run="dl", rank=0, interval=0.2)  # a spawned worker makes its own here
fetch, step = timings.timer("fetch"), timings.timer("step")
class Items(Dataset):
    def __len__(self): return 80
    def __getitem__(self, i):
        with fetch:
            time.sleep(0.01)
        return i
if __name__ == "__main__":
    loader = DataLoader(Items(), batch_size=2, num_workers=2, persistent_workers=True,
                        multiprocessing_context=sys.argv[2])
    batches = list(loader)  # the workers time and connect; this process times nothing yet
    with step:
        pass
    timings.close()  # the parent connects last
"""


@pytest.mark.slow
@requires_module("torch", remedy=".ci/install-system.sh installs torch==2.13.0 (CPU)")
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_dataloader_worker_connecting_before_its_parent_is_the_one_labelled_by_pid(tmp_path: Path,
                                                                                     context: str) -> None:
    """The first connection of a run and rank took its plain label: a DataLoader worker connecting first was
    `dl/rank0/fetch` and the training process `dl/rank0.pid<N>/step`. A forked writer's hello names its parent; a
    spawned one's did not (it has no copy of its parent's Timings: it made its own), and it was taken for the
    training process."""
    path, script = tmp_path / "lm.sock", tmp_path / "workers_first.py"  # a file: a spawned worker imports it
    script.write_text(WORKERS_FIRST)
    thread, items = listening(ListenSource(path=str(path), writers=3, idle_timeout=20), path)
    done = subprocess.run([sys.executable, str(script), str(path), context], capture_output=True, text=True,
                          timeout=120)
    thread.join(30)
    assert done.returncode == 0 and not thread.is_alive(), done.stderr
    said = [n.message for n in items if isinstance(n, Notice)]
    connected = [re.search(r"\(pid (\d+)\) connected(.*)", m) for m in said]
    order = [(int(m.group(1)), m.group(2)) for m in connected if m]
    parent = next(pid for pid, note in order if not note)
    workers = [pid for pid, note in order if note == f"; a child of pid {parent}: its streams are labelled by pid"]
    assert len(order) == 3 and order[-1][0] == parent and len(workers) == 2, said  # the workers came first
    got = [iv for iv in items if isinstance(iv, Interval)]
    assert {iv.stream.label for iv in got} == {"dl/rank0/step", *(f"dl/rank0.pid{w}/fetch" for w in workers)}
    assert sum(int(iv.counts.sum()) for iv in got if iv.stream.label.endswith("/fetch")) == 80
