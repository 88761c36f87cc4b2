"""A whole event log's tasks, read in blocks; a big log is split with a worker process that reads its second part.

The parent reads the first half of the log's bytes (a little more: see `share`) while a worker (worker.py) reads
the rest (each line in exactly one part: see blocks.Span) and sends back its tasks as it goes, then the application
and executor lines it read and its unreadable lines. The parent takes in what the worker read as if it had read it
itself: the same tasks in log order, the same application state, line numbers counted across both parts. Should
the worker fail, the parent reads its part too: nothing is lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .blocks import Damage, Span
from .codecs import codec_of, cut_at
from .eventlog import EventLog
from .parse import TOLD_BAD_LINES, EventParser, SparkTask

if TYPE_CHECKING:
    from .worker import Answer

#: Logs of fewer bytes (a compressed file counts EXPANSION times its size) are read in one process: below this
#: starting the worker (~0.07 s) costs about what it saves.
PARALLEL_MIN = 128 << 20
#: Bytes the parent reads while the worker starts: its part is larger by half of them.
STARTUP_BYTES = 48 << 20
#: What a compressed event log's bytes expand to, roughly, for balancing the two parts.
EXPANSION = 8
#: Set to 0 to never start a worker (or 1 to start one for any log of two lines or more).
WORKER_ENV = "LATENCYMAP_SPARK_WORKER"


def read_tasks(log: EventLog, parser: EventParser, worker: bool | None = None) -> list[SparkTask]:
    """Every TaskEnd of the log as a SparkTask, in log order; `parser` keeps the rest (app, executors, problems, the
    tasks launched with no end read).

    `worker`: read the second part in a worker process (None: when the log is big and a second core exists)."""
    spans = [Span(p) for p in log.files()]
    mine, theirs = split(spans) if _wants_worker(spans, worker) else (spans, [])
    if not theirs or not mine:
        tasks = parser.read_spans(spans)
    else:
        from .worker import Worker

        helper = Worker(theirs)
        try:
            tasks = parser.read_spans(mine)
            tasks += take_in(helper.answers(), theirs, parser)
        finally:
            helper.close()
    if parser.task_start_lines > len(tasks):  # some launched with no end read (a running or cut log): which
        parser.find_running(spans, {t.task_id for t in tasks})
    else:
        parser.started = {}  # (block reading keeps the TaskStarts of other layouts, ended or not)
    return tasks


def _weight(span: Span) -> int:
    size = span.path.stat().st_size
    return size * EXPANSION if codec_of(span.path) is not None else size


def _wants_worker(spans: list[Span], worker: bool | None) -> bool:
    setting = os.environ.get(WORKER_ENV, "")
    if setting == "0" or worker is False:
        return False
    if setting == "1" or worker:
        return True
    try:
        import msgspec  # noqa: F401  (the worker's answer is msgpack)
    except ImportError:
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores > 1 and sum(_weight(s) for s in spans) >= PARALLEL_MIN


def share(total: int) -> float:
    """The parent's share of a log of `total` bytes (weights): half, and half of what it reads while the worker
    starts (taking in the worker's answer and binning, after, are about what the worker spends sending it)."""
    return min(0.75, 0.5 + STARTUP_BYTES / 2 / max(total, 1))


def split(spans: list[Span], part: float | None = None) -> tuple[list[Span], list[Span]]:
    """(first part, second part), the first `part` of the weight (default: `share`): whole files, and the file
    where the parts meet cut there (a compressed one where a frame or block starts: `cut_at`)."""
    weights = [_weight(s) for s in spans]
    goal, before = sum(weights) * (share(sum(weights)) if part is None else part), 0
    for k, (span, weight) in enumerate(zip(spans, weights, strict=True)):
        if before + weight >= goal:
            codec = codec_of(span.path)
            at = int(goal - before) if codec is None else cut_at(span.path, codec, int((goal - before) / EXPANSION))
            if not at:  # no place to cut: the whole file to the part it fits better
                cut = k + 1 if goal - before > before + weight - goal else k
                return spans[:cut], spans[cut:]
            return [*spans[:k], Span(span.path, 0, at)], [Span(span.path, at, None), *spans[k + 1:]]
        before += weight
    return spans, []


def take_in(answers: Iterable[Answer], spans: list[Span], parser: EventParser) -> list[SparkTask]:
    """The tasks, application and executor lines and problems a worker read from `spans` taken into `parser` as if
    read here after the parent's part (line numbers continue its count); when the worker failed, `spans` read here."""
    from .worker import WorkerFailed

    tasks: list[SparkTask] = []
    answer = None
    try:
        for answer in answers:
            tasks += answer.tasks
    except WorkerFailed:
        answer = None
    if answer is None or not answer.final:
        return parser.read_spans(spans)
    first = str(spans[0].path)
    offset = parser.line_no if spans[0].start > 0 and parser.where == first else 0

    def absolute(where: str, line_no: int) -> int:
        return line_no + offset if where == first else line_no

    for where, line_no, line in answer.kept:
        parser.where = where
        parser.other(line, absolute(where, line_no))
    room = max(0, TOLD_BAD_LINES - len(parser.problems))
    parser.problems += [(where, absolute(where, n), what, why) for where, n, what, why in answer.problems[:room]]
    parser.bad_lines += answer.bad_lines
    parser.task_end_lines += answer.task_end_lines
    parser.task_start_lines += answer.task_start_lines
    parser.damage += [Damage(*d) for d in answer.damage]
    return tasks
