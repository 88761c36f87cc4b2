"""`open_session`: which inputs' recorded samples a command loads."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from profiling_support import phase_samples

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import Recorder
from latencymap.profiling.persist import TAG, encode
from latencymap.profiling.session import open_session

T0 = 1_700_000_000.0


def profiled_recording(path: Path) -> Path:
    """Three intervals with the samples of one phase between them."""
    rec = Recorder(str(path))
    for k in range(3):
        rec.write(Interval(StreamId("s", "bpf", "microsec"), T0 + k, T0 + k + 1, np.ones(NSLOTS, dtype=np.int64)))
        rec.annotate(TAG, encode(phase_samples(T0 + k, 0.1, "f")))
    rec.close()
    return path


@pytest.mark.timeout(30)
def test_recorded_samples_are_loaded_from_files_only(tmp_path: Path) -> None:
    """`replay FIFO` in the TUI hung with a blank screen, and `replay <(cmd)` lost records: the profile loader opened
    the input again, and waited for a FIFO's writer that had gone, or took a pipe's bytes from the replay. An input
    that can be read once is left to the view's one read."""
    data = profiled_recording(tmp_path / "rec.txt").read_bytes()
    session = open_session({}, [str(tmp_path / "rec.txt")])
    assert session is not None and len(session.store) > 0
    fifo = tmp_path / "rec.fifo"
    os.mkfifo(fifo)
    assert open_session({}, [str(fifo)]) is None  # not opened: it would wait for a writer
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert open_session({}, [f"/dev/fd/{read}"]) is None
        assert pipe.read() == data  # every byte left for the view
