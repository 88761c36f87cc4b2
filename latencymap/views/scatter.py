"""Output that lies in pieces across buffers, written where it lies: `writev(2)` of (address, length) pairs.

Frames composed in bulk are mostly slices of a few NumPy buffers (cell texts, number texts, fixed words).
Describing each piece by its address and length lets NumPy lay out every frame of a batch without a Python
object per piece, and lets the kernel gather the pieces straight into the file or pipe.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable

import numpy as np

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
