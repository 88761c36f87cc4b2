"""`--follow`: tail a running application's event log (partial lines kept, rolled files picked up, a file truncated
or replaced under the follower read again from its start)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from latencymap.core.sanitize import clean_text

from .codecs import Decoder, codec_of, make_decoder
from .eventlog import EventLog, EventLogError, LineSplitter, find_event_log
from .parse import EventParser, SparkTask

#: Bytes at the start of a followed file kept to notice it was truncated and written again past the position read.
HEAD = 4096

#: A file's lines completed since the last poll: (file, lines, whether they start at the file's first line).
Chunk = tuple[Path, list[bytes], bool]


class Tailer:
    """New complete lines of a growing event log at each `poll()`; waits for the log to appear. A file that got
    shorter than what was read, or whose start changed (truncated in place, as logrotate's copytruncate does), or
    that another file replaced (another inode, not a copy of what was read), is read again from its start, and
    `note` is told once."""

    def __init__(self, path: str, app: str | None = None, note: Callable[[str], None] | None = None) -> None:
        self._path, self._app = path, app
        self._note: Callable[[str], None] = note or (lambda _message: None)
        self.log: EventLog | None = None
        self._index = 0
        self._fh: BinaryIO | None = None
        self._decoder: Decoder | None = None
        self._split = LineSplitter()
        self._path_now = Path()
        self._fresh = True  # the next lines given start at the file's first line
        self._pos = 0  # raw bytes read from the open file
        self._seen = hashlib.blake2b()  # of those bytes
        self._head = b""  # their first HEAD bytes

    def _resolve(self) -> bool:
        if self.log is None:
            try:
                self.log = find_event_log(self._path, self._app)
            except EventLogError:
                return False
        return True

    def _read_available(self) -> list[bytes]:
        assert self._fh is not None and self._decoder is not None
        out: list[bytes] = []
        while data := self._fh.read(1 << 20):
            self._pos += len(data)
            self._seen.update(data)
            if len(self._head) < HEAD:
                self._head += data[:HEAD - len(self._head)]
            out += self._split.feed(self._decoder.feed(data))
        return out

    def _chunk(self, lines: list[bytes]) -> Chunk:
        fresh, self._fresh = self._fresh, False
        return self._path_now, lines, fresh

    def poll(self) -> list[bytes]:
        """Lines completed since the last call, across rolled files in order."""
        return [line for _, lines, _ in self.poll_files() for line in lines]

    def poll_files(self) -> list[Chunk]:
        """`poll`, file by file: (file, its lines completed since the last call, whether they start at its first
        line: a file opened, or read again from its start)."""
        if not self._resolve():
            return []
        assert self.log is not None
        out: list[Chunk] = []
        while True:
            files = self.log.files()
            if self._fh is None:
                if self._index >= len(files):
                    return out
                self._path_now = files[self._index]
                self._start(self._path_now.open("rb"))
            out += self._read_current(files[self._index])
            if self._index + 1 >= len(self.log.files()):
                return out
            lines = self._read_available()  # a later file exists: this one is complete
            lines += self._split.flush()
            out.append(self._chunk(lines))
            self._close()
            self._index += 1

    def _start(self, fh: BinaryIO) -> None:
        """Read `fh` from its start."""
        self._fh, self._decoder, self._split = fh, make_decoder(codec_of(self._path_now)), LineSplitter()
        self._fresh, self._pos, self._seen, self._head = True, 0, hashlib.blake2b(), b""

    def _read_current(self, current: Path) -> list[Chunk]:
        """The open file's new lines, once `current` (the file now at its place) is checked to be still that file
        and not shorter than what was read; otherwise what is left of the old one, then the new content."""
        assert self._fh is not None
        try:
            now = current.stat()
        except OSError:  # between Spark's rename of `X.inprogress` to `X`, or gone: the open file is read on
            return [self._chunk(self._read_available())]
        opened = os.fstat(self._fh.fileno())
        where = clean_text(str(current), 200)
        out: list[Chunk] = []
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            lines = self._read_available()  # the replaced file, to its end
            new = current.open("rb")
            if self._continues(new, now.st_size):
                self._fh.close()
                self._fh = new
                return [self._chunk(lines + self._read_available())]
            out.append(self._chunk(lines + self._split.flush()))
            self._fh.close()
            self._start(new)
            self._note(f"spark: {where} was replaced by another file while it was followed: the old one was read to "
                       "its end, the new one is read from its start")
        elif now.st_size < self._pos or not self._same_head():
            partial = self._split.pending
            self._note(f"spark: {where} was truncated while it was followed (as logrotate's copytruncate does): it "
                       f"is read again from its start; what was written to it after the {self._pos} bytes read and "
                       "before the truncation is only in the rotated copy, if one was kept"
                       + (f"; the unfinished line last read ({partial} bytes) is left out" if partial else ""))
            self._fh.seek(0)
            self._start(self._fh)
        out.append(self._chunk(self._read_available()))
        return out

    def _same_head(self) -> bool:
        """Whether the open file still starts with the bytes read at its start."""
        assert self._fh is not None
        return os.pread(self._fh.fileno(), len(self._head), 0) == self._head

    def _continues(self, new: BinaryIO, size: int) -> bool:
        """Whether `new` starts with every byte read so far (a copy that replaced the file); if so it is left at the
        position read, else at its start."""
        if size < self._pos:
            return False
        seen, left = hashlib.blake2b(), self._pos
        while left and (data := new.read(min(left, 1 << 20))):
            seen.update(data)
            left -= len(data)
        if not left and seen.digest() == self._seen.digest():
            return True
        new.seek(0)
        return False

    def _close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh, self._decoder, self._split = None, None, LineSplitter()

    def finished(self) -> bool:
        """True once Spark has marked the application as ended."""
        return self.log is not None and self.log.finished()

    def drain(self) -> list[bytes]:
        """Everything left, the kept partial line included; closes the files."""
        return [line for _, lines, _ in self.drain_files() for line in lines]

    def drain_files(self) -> list[Chunk]:
        """`drain`, file by file."""
        out = self.poll_files()
        if self._fh is not None:
            out.append(self._chunk(self._split.flush()))
        self._close()
        return out


def follow_tasks(path: str, app: str | None = None, poll_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep,
                 parser: EventParser | None = None,
                 note: Callable[[str], None] | None = None) -> Iterator[tuple[list[SparkTask], bool]]:
    """(new tasks, ended) after each poll of a live log, until the application ends; `note` is told of a file
    truncated or replaced while it was followed."""
    tailer = Tailer(path, app, note)
    parser = parser or EventParser()

    def parse(files: list[Chunk]) -> list[SparkTask]:
        tasks: list[SparkTask] = []
        for file, lines, fresh in files:
            if fresh:
                parser.begin(str(file))
            tasks += parser.parse(lines)
        return tasks

    while True:
        tasks = parse(tailer.poll_files())
        ended = parser.app.ended or tailer.finished()
        if ended:
            tasks += parse(tailer.drain_files())
        yield tasks, ended
        if ended:
            return
        sleep(poll_s)
