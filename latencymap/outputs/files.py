"""Where a command's output goes: a file, or stdout."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from latencymap.core.errors import HungUp, OutputError
from latencymap.core.tty import terminal_gone


def check_output(output: str | None) -> None:
    """Refuse an output file that cannot be created, before any input is read: a long run is not lost at its end."""
    if not output:
        return
    path = Path(output)
    parent = path.parent
    if path.is_dir():
        raise OutputError(f"{output}: is a directory (expected a file to write the output to)")
    if not parent.is_dir():
        raise OutputError(f"{output}: cannot create it: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(f"{output}: cannot create it: permission denied")


#: How messages name stdout.
STDOUT = "standard output"


@contextmanager
def writing(output: str, fd: int | None = None) -> Iterator[None]:
    """A failure to write `output` as one OutputError line (exit code 1), not a traceback. A reader that went away
    (`| head`) stays a BrokenPipeError, which ends a command quietly; a terminal (on `fd`) that hung up is HungUp,
    which ends it as SIGHUP does."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        if fd is not None and terminal_gone(fd):
            raise HungUp(f"{output}: the terminal hung up") from None
        raise OutputError(f"{output}: cannot write the output: {err.strerror or err}", exit_code=1) from None


class _Closed(io.TextIOBase):
    """stdout when descriptor 1 was closed (`>&-`): a write fails as one to a closed descriptor does."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")


class GuardedStdout:
    """`sys.stdout` of the command line: a failure to write it (disk full, an I/O error, closed with `>&-`) is an
    OutputError that names it (`writing`), said in one line with exit code 1, not a traceback. Once failed, every
    later write fails the same way (one that a library tried and let pass must not hide it), and what could not be
    written is dropped, so that the interpreter's last flush passes; the rest of the stream's
    interface is the stream's own."""

    name = STDOUT

    def __init__(self, stream: TextIO | None) -> None:
        self._stream: Any = _Closed() if stream is None else stream
        self._failure: OutputError | None = None

    def write(self, text: str) -> int:
        with self._failing():
            written: int = self._stream.write(text)
        return written

    def flush(self) -> None:
        if self._failure is None:  # after a failure nothing is held: the interpreter's last flush passes
            with self._failing():
                self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    @contextmanager
    def _failing(self) -> Iterator[None]:
        if self._failure is not None:  # the same failure (a hang-up stays one)
            raise self._failure.with_traceback(None)
        try:
            with writing(STDOUT, self._fileno()):
                yield
        except OutputError as err:
            self._failure = err
            self._drop_pending()
            raise

    def _fileno(self) -> int | None:
        try:
            fd: int = self._stream.fileno()
        except (OSError, ValueError, AttributeError):
            return None
        return fd

    def _drop_pending(self) -> None:
        """Point descriptor 1 at the null device and flush into it what the stream still holds."""
        with contextlib.suppress(OSError, ValueError):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
            self._stream.flush()


def write_text(text: str, output: str | None) -> None:
    """`text` into the file `output` (UTF-8, `replaced`), or onto stdout when there is none."""
    if not output:
        sys.stdout.write(text)
        return
    with writing(output):
        replaced(Path(os.path.realpath(output)), text)


def replaced(path: Path, text: str) -> None:
    """Write `text` to a file beside `path`, then rename it over `path`: a reader (node_exporter's textfile
    collector, a job polling the report) sees the old file or the new one whole, never half of it, and a write that
    fails leaves the old one. Its mode is the old file's, else what the umask gives a new file. What is not a
    regular file (a FIFO, /dev/stdout) is written in place."""
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_umask()
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    """The process's umask (read by setting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
