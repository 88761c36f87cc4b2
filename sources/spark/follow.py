"""`--follow`: tail a running application's event log (partial lines kept, rolled files picked up)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
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
        if not self._resolve():
            return []
        assert self.log is not None
        out: list[bytes] = []
        while True:
            files = self.log.files()
            if self._fh is None:
                if self._index >= len(files):
                    return out
                path = files[self._index]
                self._fh = path.open("rb")
                self._decoder = make_decoder(codec_of(path))
            out += self._read_available()
            if self._index + 1 >= len(self.log.files()):
                return out
            out += self._read_available()  # a later file exists: this one is complete
            out += self._split.flush()
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
        out = self.poll()
        if self._fh is not None:
            out += self._split.flush()
        self._close()
        return out


def follow_tasks(path: str, app: str | None = None, poll_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep,
                 parser: EventParser | None = None) -> Iterator[tuple[list[SparkTask], bool]]:
    """(new tasks, ended) after each poll of a live log, until the application ends."""
    tailer = Tailer(path, app)
    parser = parser or EventParser()
    while True:
        tasks = parser.parse(tailer.poll())
        ended = parser.app.ended or tailer.finished()
        if ended:
            tasks += parser.parse(tailer.drain())
        yield tasks, ended
        if ended:
            return
        sleep(poll_s)
