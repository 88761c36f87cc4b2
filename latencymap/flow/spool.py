"""An input that can be read only once (stdin, a FIFO, `<(cmd)`), read once for several readers."""

from __future__ import annotations

import io
import tempfile
import threading
from typing import IO, Any

from latencymap.flow.inputs import CHUNK, open_raw


class Spool:
    """Copies input `path` (`-`: stdin), as its bytes arrive, into a temporary file that each `reader()` reads from
    its start, waiting where the bytes so far end until the input ends: two readers of one pipe (replay's and its
    burst scan's) both see every record, instead of each taking some. Opening fails here as `read_input` fails.
    `close` (or the end of a `with` block) removes the copy: its readers then read nothing more."""

    def __init__(self, path: str, stdin: IO[bytes] | None = None) -> None:
        self._source, self.name = open_raw(path, stdin)
        self._file = tempfile.TemporaryFile(prefix="latencymap-spool-")  # noqa: SIM115 (closed by `close`)
        self._size = 0
        self._ended = self._closed = False
        self._error: OSError | None = None
        self._arrived = threading.Condition()
        self._thread = threading.Thread(target=self._copy, name="latencymap-spool", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        read = getattr(self._source, "read1", self._source.read)
        try:
            while data := read(CHUNK):
                with self._arrived:
                    if self._closed:
                        break
                    self._file.seek(0, io.SEEK_END)
                    self._file.write(data)
                    self._file.flush()
                    self._size += len(data)
                    self._arrived.notify_all()
        except OSError as err:  # said by the readers, after the bytes that came before it
            self._error = err
        finally:
            with self._arrived:
                self._ended = True
                self._arrived.notify_all()
            self._source.close()

    def close(self) -> None:
        """Remove the copy (idempotent); the input is no longer read once the bytes being read now have come."""
        with self._arrived:
            self._closed = True
            self._file.close()
            self._arrived.notify_all()

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reader(self) -> IO[bytes]:
        """A reader of every byte of the input from its start, as `read_input`'s `stdin`."""
        return io.BufferedReader(_SpoolReader(self))

    def read_at(self, at: int, size: int) -> bytes:
        """Up to `size` bytes from offset `at`, once some are there; b"" once the input ended before `at`."""
        with self._arrived:
            while at >= self._size and not self._ended and not self._closed:
                self._arrived.wait()
            if self._closed:
                return b""
            if at >= self._size:
                if self._error is not None:
                    raise self._error
                return b""
            self._file.seek(at)
            return self._file.read(min(size, self._size - at))


class _SpoolReader(io.RawIOBase):
    """One reader of a Spool."""

    def __init__(self, spool: Spool) -> None:
        self._spool = spool
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._spool.read_at(self._at, len(buffer))
        buffer[:len(data)] = data
        self._at += len(data)
        return len(data)
