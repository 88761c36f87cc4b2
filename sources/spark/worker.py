"""A worker process reading part of an event log: `python -m latencymap.sources.spark.worker SPANS FD` reads the spans
given as JSON ([[path, start, stop], ...]) and writes Answers as they fill, as msgpack frames (each after its
4-byte big-endian length) to the file open as FD, ringing the parent (a byte on stdout) after each one; the last
answer is `final`. A file, not a pipe: the worker never waits for the parent, which reads frames when it has time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import msgspec

from .blocks import Span
from .parse import EventParser, SparkTask

#: Tasks per answer before the last: the parent takes them in while the worker reads on.
FRAME_TASKS = 4096


class Answer(msgspec.Struct, array_like=True, gc=False):
    """Tasks in log order; in the final answer also the application, executor and stage lines read (file, line
    number, line), the first unreadable lines (file, line number, what, why) and the counts."""

    tasks: list[SparkTask]
    kept: list[tuple[str, int, bytes]] = []
    problems: list[tuple[str, int, str, str]] = []
    bad_lines: int = 0
    task_end_lines: int = 0
    final: bool = False
    task_start_lines: int = 0
    #: The stretches of compressed files skipped (blocks.Damage's fields, in order).
    damage: list[tuple[str, int, str, int | None, int]] = []


class WorkerFailed(Exception):
    """The worker ended without its final answer."""


class Worker:
    """The parent's side: starts the worker with an unlinked temporary file for its answers."""

    def __init__(self, spans: list[Span]) -> None:
        spec = msgspec.json.encode([[str(s.path), s.start, s.stop] for s in spans]).decode()
        self._file = tempfile.TemporaryFile(prefix="latencymap-spark-")  # noqa: SIM115 (closed by close())
        fd = self._file.fileno()
        self.proc = subprocess.Popen([sys.executable, "-m", __name__, spec, str(fd)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=(fd,))

    def answers(self) -> Iterator[Answer]:
        """The worker's answers as they come, the final one last; WorkerFailed when it ends without it."""
        assert self.proc.stdout is not None
        decode = msgspec.msgpack.Decoder(Answer).decode
        fd, pos = self._file.fileno(), 0
        while self.proc.stdout.read(1):
            size = int.from_bytes(os.pread(fd, 4, pos), "big")
            frame = os.pread(fd, size, pos + 4)
            pos += 4 + size
            try:
                answer = decode(frame)
            except (msgspec.DecodeError, msgspec.ValidationError) as err:
                raise WorkerFailed(str(err)) from None
            yield answer
            if answer.final:
                return
        raise WorkerFailed(f"the worker ended ({self.proc.wait()}) without its final answer")

    def close(self) -> None:
        """Stop the worker if it still runs; reap it; drop its file."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._file.close()


def _send(out: IO[bytes], bell: IO[bytes], answer: Answer) -> None:
    data = msgspec.msgpack.encode(answer)
    out.write(len(data).to_bytes(4, "big"))
    out.write(data)
    out.flush()
    bell.write(b"\x01")
    bell.flush()


def answers_for(spans: list[Span], frame_tasks: int = FRAME_TASKS) -> Iterator[Answer]:
    """What a worker reading `spans` answers, in order (the worker process sends them; tests take them here)."""
    parser = EventParser()
    parser.kept = []
    pending: list[SparkTask] = []
    for tasks in parser.iter_spans(spans):
        pending += tasks
        if len(pending) >= frame_tasks:
            yield Answer(pending)
            pending = []
    yield Answer(pending, parser.kept, parser.problems, parser.bad_lines, parser.task_end_lines, True,
                 parser.task_start_lines, [(d.path, d.at, d.what, d.resumed, d.lost) for d in parser.damage])


def main() -> None:
    """Read the spans, answer through the file and ring on stdout."""
    spans = [Span(Path(p), start, stop)
             for p, start, stop in msgspec.json.decode(sys.argv[1], type=list[tuple[str, int, int | None]])]
    with open(int(sys.argv[2]), "wb") as out:
        for answer in answers_for(spans):
            _send(out, sys.stdout.buffer, answer)


if __name__ == "__main__":
    main()
