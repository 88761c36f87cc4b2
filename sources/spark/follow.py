"""`--follow`: tail a running application's event log (partial lines kept, rolled files picked up)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .codecs import Decoder, codec_of, make_decoder
from .eventlog import EventLog, EventLogError, LineSplitter, find_event_log
from .parse import EventParser, SparkTask


class Tailer:
    """New complete lines of a growing event log at each `poll()`; waits for the log to appear."""

    def __init__(self, path: str, app: str | None = None) -> None:
        self._path, self._app = path, app
        self.log: EventLog | None = None
        self._index = 0
        self._fh: BinaryIO | None = None
        self._decoder: Decoder | None = None
        self._split = LineSplitter()
        self._path_now = Path()

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
            out += self._split.feed(self._decoder.feed(data))
        return out

    def poll(self) -> list[bytes]:
        """Lines completed since the last call, across rolled files in order."""
        return [line for _, lines in self.poll_files() for line in lines]

    def poll_files(self) -> list[tuple[Path, list[bytes]]]:
        """`poll`, file by file: (file, its lines completed since the last call)."""
        if not self._resolve():
            return []
        assert self.log is not None
        out: list[tuple[Path, list[bytes]]] = []
        while True:
            files = self.log.files()
            if self._fh is None:
                if self._index >= len(files):
                    return out
                self._path_now = files[self._index]
                self._fh = self._path_now.open("rb")
                self._decoder = make_decoder(codec_of(self._path_now))
            lines = self._read_available()
            if self._index + 1 >= len(self.log.files()):
                return [*out, (self._path_now, lines)]
            lines += self._read_available()  # a later file exists: this one is complete
            lines += self._split.flush()
            out.append((self._path_now, lines))
            self._close()
            self._index += 1

    def _close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh, self._decoder, self._split = None, None, LineSplitter()

    def finished(self) -> bool:
        """True once Spark has marked the application as ended."""
        return self.log is not None and self.log.finished()

    def drain(self) -> list[bytes]:
        """Everything left, the kept partial line included; closes the files."""
        return [line for _, lines in self.drain_files() for line in lines]

    def drain_files(self) -> list[tuple[Path, list[bytes]]]:
        """`drain`, file by file."""
        out = self.poll_files()
        if self._fh is not None:
            out.append((self._path_now, self._split.flush()))
        self._close()
        return out


def follow_tasks(path: str, app: str | None = None, poll_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep,
                 parser: EventParser | None = None) -> Iterator[tuple[list[SparkTask], bool]]:
    """(new tasks, ended) after each poll of a live log, until the application ends."""
    tailer = Tailer(path, app)
    parser = parser or EventParser()
    current: Path | None = None

    def parse(files: list[tuple[Path, list[bytes]]]) -> list[SparkTask]:
        nonlocal current
        tasks: list[SparkTask] = []
        for file, lines in files:
            if file != current:
                parser.begin(str(file))
                current = file
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
