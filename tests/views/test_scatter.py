"""Pieces written with writev(2) land in order, whole, even when the kernel takes them a part at a time."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from skips_support import NOT_LINUX, reason

from latencymap.views import scatter
from latencymap.views.scatter import Buffers, Pieces, PieceWriter, write_pieces

pytestmark = pytest.mark.skipif(not scatter.can_scatter(),
                                reason=reason(NOT_LINUX, "writev", "not a 64-bit POSIX system"))


def pieces_of(chunks: list[bytes]) -> tuple[Pieces, bytes]:
    """Pieces pointing into two buffers, in an order that jumps between them, and the bytes they make."""
    left = np.frombuffer(b"".join(chunks[0::2]), dtype=np.uint8)
    right = np.frombuffer(b"".join(chunks[1::2]), dtype=np.uint8)
    iov, at = [], [0, 0]
    for i, chunk in enumerate(chunks):
        buf = (left, right)[i % 2]
        iov.append((buf.ctypes.data + at[i % 2], len(chunk)))
        at[i % 2] += len(chunk)
    return Pieces(np.array(iov, dtype=np.int64), [left, right]), b"".join(chunks)


def test_pieces_in_a_file_and_as_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    chunks = [bytes(rng.integers(0, 256, int(n)).astype(np.uint8)) for n in rng.integers(0, 300, 5000)]
    pieces, whole = pieces_of(chunks)
    assert pieces.tobytes() == whole
    path = tmp_path / "out"
    with path.open("wb") as out:
        out.write(b"head ")
        out.flush()
        write_pieces(out.fileno(), pieces)
    assert path.read_bytes() == b"head " + whole


def test_short_writes_go_on_where_they_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writev that takes at most 1,000 bytes a call (as a pipe or a signal can cut it) still writes everything."""
    real = scatter._WRITEV
    assert real is not None
    calls = []

    def short(fd: int, iov: int, count: int) -> int:
        calls.append(count)
        table = np.ctypeslib.as_array((scatter.ctypes.c_uint64 * (2 * count)).from_address(iov)).reshape(count, 2)
        data = b"".join(scatter.ctypes.string_at(int(a), int(n)) for a, n in table)[:1000]
        return os.write(fd, data)

    monkeypatch.setattr(scatter, "_WRITEV", short)
    chunks = [bytes([65 + i % 26]) * (i % 97) for i in range(3000)]
    pieces, whole = pieces_of(chunks)
    before = pieces.iov.copy()
    path = tmp_path / "out"
    with path.open("wb") as out:
        write_pieces(out.fileno(), pieces)
    assert path.read_bytes() == whole
    assert len(calls) > len(whole) // 1000
    assert (pieces.iov == before).all()  # the caller's pieces are left as they were


def test_a_pipe_read_while_written() -> None:
    chunks = [os.urandom(n % 700) for n in range(4000)]
    pieces, whole = pieces_of(chunks)
    read_fd, write_fd = os.pipe()
    got = bytearray()

    def drain() -> None:
        while data := os.read(read_fd, 65536):
            got.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    write_pieces(write_fd, pieces)
    os.close(write_fd)
    reader.join(timeout=30)
    os.close(read_fd)
    assert bytes(got) == whole


def test_a_writer_thread_writes_batches_in_order_while_the_next_is_given(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    batches = [pieces_of([os.urandom(int(n)) for n in rng.integers(0, 400, 300)]) for _ in range(12)]
    path = tmp_path / "out"
    with path.open("wb") as out:
        out.write(b"head ")
        out.flush()
        writer = PieceWriter(out.fileno(), depth=2)
        for pieces, _ in batches:
            writer.put(pieces)
        writer.drain()
        out.write(b"|between|")
        out.flush()
        writer.put(batches[0][0])
        writer.close()
    assert path.read_bytes() == b"head " + b"".join(w for _, w in batches) + b"|between|" + batches[0][1]


def test_a_writer_threads_error_is_raised_in_the_callers_thread() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # writing now fails with EPIPE (Python ignores SIGPIPE)
    writer = PieceWriter(write_fd)
    pieces, _ = pieces_of([b"frame"] * 10)
    writer.put(pieces)
    with pytest.raises(BrokenPipeError):
        writer.close()
    os.close(write_fd)


def test_fixed_texts_start_afresh_in_a_new_buffer_that_pending_batches_do_not_point_into(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scatter, "_FIXED_MAX", 10)
    sources = Buffers()
    sources.start()
    offset, size = sources.text(b"the first batch's words")
    base = int(sources.bases()[0])
    kept = Pieces(np.array([[base + offset, size]], dtype=np.int64), list(sources.buffers))
    sources.start()  # past _FIXED_MAX: forgets the texts
    sources.text(b"XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX")
    sources.bases()
    assert kept.tobytes() == b"the first batch's words"


def test_closing_with_a_timeout_gives_up_on_a_reader_that_stopped_reading() -> None:
    """An interrupted replay into a pipe nobody reads any more: close(timeout) returns, the pending batch dropped."""
    read_fd, write_fd = os.pipe()
    writer = PieceWriter(write_fd)
    pieces, _ = pieces_of([os.urandom(1000)] * 2000)  # 2 MB: far past the pipe's buffer, so writev blocks
    writer.put(pieces)
    writer.put(pieces)
    closing = threading.Thread(target=writer.close, args=(0.2,), daemon=True)
    closing.start()
    closing.join(timeout=20)
    assert not closing.is_alive()
    os.close(read_fd)  # the blocked writev now fails with EPIPE and the writer's thread ends
    writer._thread.join(timeout=20)
    assert not writer._thread.is_alive()
    os.close(write_fd)
