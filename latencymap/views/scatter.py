"""Output that lies in pieces across buffers, written where it lies: `writev(2)` of (address, length) pairs.

Frames composed in bulk are mostly slices of a few NumPy buffers (cell texts, number texts, fixed words).
Describing each piece by its address and length lets NumPy lay out every frame of a batch without a Python
object per piece, and lets the kernel gather the pieces straight into the file or pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from latencymap.outputs.files import writing

#: Bytes of fixed texts `Buffers` keeps from batch to batch at most.
_FIXED_MAX = 8 << 20
#: Pieces per `writev` call (POSIX guarantees at least 16; Linux and the BSDs take 1024).
IOV_MAX = 1024
_Writev = Callable[[int, int, int], int]


class Pieces:
    """Bytes given as (address, length) pairs (`iov`: (pieces, 2) uint64) into the buffers in `keep`."""

    def __init__(self, iov: np.ndarray, keep: list[object]) -> None:
        self.iov = np.ascontiguousarray(iov).view(np.uint64)
        self.keep = keep  # the buffers the addresses point into stay alive as long as this

    def __len__(self) -> int:
        return len(self.iov)

    def tobytes(self) -> bytes:
        """The bytes, joined (slow: one Python object per piece)."""
        return b"".join([ctypes.string_at(address, size) for address, size in self.iov.tolist() if size])


def _load_writev() -> _Writev | None:
    """libc's writev, where pointers and sizes are 64-bit (the iovec layout `Pieces` holds)."""
    if os.name != "posix" or ctypes.sizeof(ctypes.c_void_p) != 8 or ctypes.sizeof(ctypes.c_size_t) != 8:
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).writev
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    function.restype = ctypes.c_ssize_t
    return function


_WRITEV = _load_writev()


def can_scatter() -> bool:
    """Whether `write_pieces` can write here."""
    return _WRITEV is not None


def write_pieces(fd: int, pieces: Pieces) -> None:
    """Write every piece to `fd` in order; short writes go on where they stopped, EINTR is retried."""
    if _WRITEV is None:
        raise OSError(errno.ENOSYS, "writev is not available here")
    iov = pieces.iov
    at, count = 0, len(iov)
    while at < count:
        chunk = iov[at: at + IOV_MAX]
        want = int(chunk[:, 1].sum())
        done = _WRITEV(fd, chunk.ctypes.data, len(chunk))
        if done < 0:
            code = ctypes.get_errno()
            if code == errno.EINTR:
                continue
            raise OSError(code, os.strerror(code))
        if done == want:
            at += len(chunk)
            continue
        # A short write: skip the pieces written whole, start the next call inside the one cut.
        ends = np.cumsum(chunk[:, 1].astype(np.int64))
        whole = int(np.searchsorted(ends, done, side="right"))
        if iov is pieces.iov:
            iov = iov.copy()
        cut = done - (int(ends[whole - 1]) if whole else 0)
        iov[at + whole, 0] += np.uint64(cut)
        iov[at + whole, 1] -= np.uint64(cut)
        at += whole


class Buffers:
    """The buffers a batch's pieces lie in: source 0 holds fixed texts (kept from batch to batch, each stored once),
    the others are given per batch (cell texts, number arenas, columns lines)."""

    def __init__(self) -> None:
        self.fixed = np.empty(1 << 16, dtype=np.uint8)
        self._end = 0  # where the next fixed text goes (those not yet copied in are in `_new`)
        self._new: list[bytes] = []
        self._index: dict[bytes, tuple[int, int]] = {}
        self.buffers: list[np.ndarray] = []

    def start(self) -> None:
        """A new batch: forget the last one's buffers (and the fixed texts, when they take too much room: in a new
        buffer, since batches not yet written may still point into the old one)."""
        if self._end > _FIXED_MAX:
            self._index.clear()
            self._end = 0
            self.fixed = np.empty(1 << 16, dtype=np.uint8)
        self.buffers = [self.fixed]

    def text(self, data: bytes) -> tuple[int, int]:
        """(offset, length) of a fixed text in source 0."""
        got = self._index.get(data)
        if got is None:
            got = self._index[data] = (self._end, len(data))
            self._end += len(data)
            self._new.append(data)
        return got

    def texts(self, items: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Offsets and lengths of fixed texts."""
        at = [self.text(x) for x in items]
        return np.array([o for o, _ in at], dtype=np.int64), np.array([n for _, n in at], dtype=np.int64)

    def buffer(self, data: np.ndarray) -> int:
        """The source number of a buffer (which must not change any more)."""
        self.buffers.append(data)
        return len(self.buffers) - 1

    def bases(self) -> np.ndarray:
        """Each source's address, the fixed texts copied in first."""
        if self._new:
            new = b"".join(self._new)
            self._new = []
            start = self._end - len(new)
            if self._end > len(self.fixed):
                grown = np.empty(max(2 * len(self.fixed), self._end), dtype=np.uint8)
                grown[:start] = self.fixed[:start]
                self.fixed = self.buffers[0] = grown
            self.fixed[start: self._end] = np.frombuffer(new, dtype=np.uint8)
        return np.array([b.ctypes.data for b in self.buffers], dtype=np.int64)


class PieceWriter:
    """`write_pieces` in a thread of its own, so the next batch is composed while this one is written.

    Batches are written in the order given; `put` waits while `depth` of them are pending. A write error is raised
    in the caller's thread by the next `put`, `drain` or `close`; with a `name`, as the OutputError that names it
    (`writing`). The buffers of a batch must not change until it is written: `Pieces.keep` holds them, and every
    buffer a batch points into is either new or only appended to.
    """

    def __init__(self, fd: int, depth: int = 2, *, name: str = "") -> None:
        self.fd = fd
        self.name = name
        self._pending: deque[Pieces | None] = deque()
        self._cond = threading.Condition()
        self._depth = max(1, depth)
        self._busy = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="latencymap-frames", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cond, pending = self._cond, self._pending
        while True:
            with cond:
                while not pending:
                    cond.wait()
                pieces = pending.popleft()
                self._busy = pieces is not None
            if pieces is None:
                return
            try:
                if self._error is None:
                    with writing(self.name, self.fd) if self.name else contextlib.nullcontext():
                        write_pieces(self.fd, pieces)
            except BaseException as err:  # raised again in the caller's thread
                self._error = err
            with cond:
                self._busy = False
                cond.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def put(self, pieces: Pieces) -> None:
        """Write `pieces` after those already given (waits while too many are pending)."""
        self._raise()
        with self._cond:
            while len(self._pending) >= self._depth and self._thread.is_alive():
                self._cond.wait()
            self._pending.append(pieces)
            self._cond.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until everything given is written (at most `timeout` s); whether it was."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while (self._pending or self._busy) and self._thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        self._raise()
        return True

    def close(self, timeout: float | None = None) -> None:
        """Write what is pending (for at most `timeout` s: a reader that stopped reading must not hold an
        interrupted replay), then end the thread."""
        done = False
        try:
            done = self.drain(timeout)
        finally:
            with self._cond:
                if not done:
                    self._pending.clear()
                self._pending.append(None)
                self._cond.notify_all()
            self._thread.join(timeout if done else 0)
