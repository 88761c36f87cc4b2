"""`Spool`: an input that can be read once (stdin, a FIFO) read once for two readers, each of which gets it all."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from latencymap.core.errors import InputError, NothingReadable
from latencymap.core.model import Interval
from latencymap.flow.pipeline import column_flow, input_flow
from latencymap.flow.spool import Spool
from latencymap.plugins import load_registry


def paced(fd: int, data: bytes, pieces: int, pace: float) -> None:
    """`data` written to pipe `fd` in `pieces`, `pace` seconds apart (a live producer), then the pipe closed."""
    step = -(-len(data) // pieces)
    try:
        for at in range(0, len(data), step):
            os.write(fd, data[at:at + step])
            time.sleep(pace)
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
def test_two_readers_of_one_live_pipe_each_get_every_record(example_data: Path) -> None:
    """`replay -` in the TUI showed no data: its burst scan opened stdin again and took the records. Read through a
    Spool, the replay and the scan each read all 72 records (71 intervals), while the pipe is still being written."""
    read, write = os.pipe()
    producer = threading.Thread(target=paced, args=(write, example_data.read_bytes(), 5, 0.1), daemon=True)
    producer.start()
    with os.fdopen(read, "rb") as stdin, Spool("-", stdin) as spool:
        got: dict[str, int] = {}

        def count(name: str) -> None:
            got[name] = sum(isinstance(i, Interval) for i in input_flow(["-"], load_registry(), stdin=spool.reader()))

        readers = [threading.Thread(target=count, args=(name,)) for name in ("replay", "scan")]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(30)
    assert got == {"replay": 71, "scan": 71}


@pytest.mark.timeout(60)
def test_a_named_fifo_read_through_a_spool_keeps_its_name(tmp_path: Path) -> None:
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    lines = b"<begin record>\nlabel, io\nlatencyunit, microsec\n8, x\n<end record>\n"

    def feed() -> None:
        with fifo.open("wb") as out:
            out.write(lines)

    threading.Thread(target=feed, daemon=True).start()
    with Spool(str(fifo)) as spool, pytest.raises(NothingReadable) as err:
        list(column_flow([str(fifo)], load_registry(), stdin=spool.reader()))
    assert str(err.value).startswith(f"{fifo}: no record could be read (1 skipped); the first: {fifo}: line 4: ")


def test_an_input_that_cannot_be_opened_fails_as_read_input_does(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r": No such file or directory$"):
        Spool(str(tmp_path / "missing.txt"))


@pytest.mark.timeout(60)
def test_close_removes_the_copy_and_ends_its_readers() -> None:
    """The spool's temporary file was never closed: the full suite failed at random with `ResourceWarning: unclosed
    file <_io.BufferedRandom>` when a Spool was collected, and a long TUI session kept the input on disk until it
    ended. `close` removes it, and a reader waiting for bytes that will not come now reads the end."""
    read, write = os.pipe()
    os.write(write, b"first bytes\n")
    with os.fdopen(read, "rb") as stdin, os.fdopen(write, "wb"):  # the writer stays until the end
        open_files = len(os.listdir("/proc/self/fd"))
        spool = Spool("-", stdin)
        reader = spool.reader()
        assert reader.readline() == b"first bytes\n"
        rest: list[bytes] = []
        waiting = threading.Thread(target=lambda: rest.append(reader.read()), daemon=True)
        waiting.start()
        time.sleep(0.2)
        spool.close()
        spool.close()
        assert len(os.listdir("/proc/self/fd")) == open_files  # the temporary file's is closed
        waiting.join(10)
        assert not waiting.is_alive() and rest == [b""]
