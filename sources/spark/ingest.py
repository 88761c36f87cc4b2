"""A whole event log's tasks, read in blocks; a big log is split with a worker process that reads the second part.

The parent reads the first half of the log's bytes while `python -m latencymap.sources.spark.worker` reads the
rest (a line belongs to the part where it starts) and sends back its tasks, the application and executor lines it
read and its unreadable lines, as msgpack. The parent then takes in what the worker read as if it had read it itself:
same tasks in log order, same application state, line numbers counted across both parts. Should the worker fail,
the parent reads its part too: nothing is lost.
"""

from __future__ import annotations

import os
import subprocess
import sys

from .blocks import Span
from .codecs import codec_of
from .eventlog import EventLog
from .parse import TOLD_BAD_LINES, EventParser, SparkTask

#: Logs of fewer bytes (a compressed file counts EXPANSION times its size) are read in one process.
PARALLEL_MIN = 64 << 20
#: What a compressed event log's bytes expand to, roughly, for balancing the two parts.
EXPANSION = 8
#: Set to 0 to never start a worker (or 1 to start one for any log of two lines or more).
WORKER_ENV = "LATENCYMAP_SPARK_WORKER"


def read_tasks(log: EventLog, parser: EventParser, worker: bool | None = None) -> list[SparkTask]:
    """Every TaskEnd of the log as a SparkTask, in log order; `parser` keeps the rest (app, executors, problems).

    `worker`: read the second half in a worker process (None: when the log is big and a second core exists)."""
    spans = [Span(p) for p in log.files()]
    mine, theirs = split(spans) if _wants_worker(spans, worker) else (spans, [])
    proc = start_worker(theirs) if theirs else None
    try:
        tasks = parser.read_spans(mine)
        if proc is not None:
            tasks += take_in(proc, theirs, parser)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
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
    return (os.cpu_count() or 1) > 1 and sum(_weight(s) for s in spans) >= PARALLEL_MIN


def split(spans: list[Span]) -> tuple[list[Span], list[Span]]:
    """(first part, second part) of about equal weight: whole files, and a plain file cut where the halves meet."""
    weights = [_weight(s) for s in spans]
    half, before = sum(weights) / 2, 0
    for k, (span, weight) in enumerate(zip(spans, weights, strict=True)):
        if before + weight >= half:
            if codec_of(span.path) is not None:  # whole: to the side that it fits better
                cut = k + 1 if half - before > before + weight - half else k
                return spans[:cut], spans[cut:]
            at = int(half - before)
            return [*spans[:k], Span(span.path, 0, at)], [Span(span.path, at, None), *spans[k + 1:]]
        before += weight
    return spans, []


def start_worker(spans: list[Span]) -> subprocess.Popen[bytes]:
    """A worker process reading `spans` (see worker.py); its answer comes on stdout."""
    import msgspec

    spec = msgspec.json.encode([[str(s.path), s.start, s.stop] for s in spans]).decode()
    proc = subprocess.Popen([sys.executable, "-m", "latencymap.sources.spark.worker", spec], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc


def take_in(proc: subprocess.Popen[bytes], spans: list[Span], parser: EventParser) -> list[SparkTask]:
    """The worker's tasks, application and executor lines and problems taken into `parser` as if read here (after
    the parent's part, line numbers continuing its count); when the worker failed, its spans read here."""
    from .worker import decode_answer

    out, _ = proc.communicate()
    answer = decode_answer(out) if proc.returncode == 0 else None
    if answer is None:
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
    return answer.tasks
