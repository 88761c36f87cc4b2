"""`python -m latencymap.sources.spark.worker SPANS`: reads the event-log spans given as JSON ([[path, start, stop],
...]) and writes an Answer to stdout as msgpack (see ingest.py, which starts it)."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from .blocks import Span
from .parse import EventParser, SparkTask


class Answer(msgspec.Struct, array_like=True, gc=False):
    """What a worker read: tasks in log order, the application and executor lines it read (file, line number,
    line), its first unreadable lines (file, line number, what, why) and its counts."""

    tasks: list[SparkTask]
    kept: list[tuple[str, int, bytes]]
    problems: list[tuple[str, int, str, str]]
    bad_lines: int
    task_end_lines: int


def decode_answer(data: bytes) -> Answer | None:
    """The worker's Answer; None when it is not one (the worker died writing it)."""
    try:
        return msgspec.msgpack.decode(data, type=Answer)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def main() -> None:
    """Read the spans, answer on stdout."""
    spans = [Span(Path(p), start, stop)
             for p, start, stop in msgspec.json.decode(sys.argv[1], type=list[tuple[str, int, int | None]])]
    parser = EventParser()
    parser.kept = []
    tasks = parser.read_spans(spans)
    answer = Answer(tasks, parser.kept, parser.problems, parser.bad_lines, parser.task_end_lines)
    sys.stdout.buffer.write(msgspec.msgpack.encode(answer))


if __name__ == "__main__":
    main()
