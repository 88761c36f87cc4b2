"""Spark event logs for the reader tests: today's line-by-line path as the reference, and a log of hostile lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_support import free_port

from latencymap.core.model import Interval, Notice
from latencymap.sources.spark import binning
from latencymap.sources.spark.eventlog import find_event_log, read_lines
from latencymap.sources.spark.source import SparkSource

SPARK = Path(__file__).resolve().parents[2] / "fixtures" / "spark"
(PLAIN,) = [p for p in (SPARK / "plain").iterdir() if not p.name.startswith(".")]


def exact(items: list[Any]) -> list[tuple]:
    """Intervals as comparable tuples (times bit for bit), notices as their counts."""
    return [(i.stream, i.start, i.end, i.counts.tolist(), i.time.tolist()) if isinstance(i, Interval)
            else ("notice", i.skipped) for i in items]


def reference(target: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[SparkSource, list[Any]]:
    """The log read the way it was before block reading: `read_lines` (line splitting), `EventParser.parse`
    line by line, and task-by-task binning (`_task_lists`)."""
    source = SparkSource(target=str(target), **options)
    log = find_event_log(target)
    with monkeypatch.context() as m:
        m.setattr(binning, "task_values", binning._task_lists)
        items = list(source.batch_items(read_lines(log), log.app_id))
    return source, items


def current(target: Path, **options: Any) -> tuple[SparkSource, list[Any]]:
    """The log read as `latencymap spark LOG` reads it now."""
    source = SparkSource(target=str(target), **options)
    return source, list(source.items())


def same_reading(old: SparkSource, new: SparkSource) -> None:
    """Both read the same tasks (values and order), application, executors and number of unreadable lines."""
    assert new.all_tasks == old.all_tasks
    assert new.tasks == old.tasks
    assert new.app == old.app
    assert new.executors == old.executors


def task_end_lines() -> list[bytes]:
    """The fixture's TaskEnd lines."""
    return [line for line in PLAIN.read_bytes().splitlines() if b'"SparkListenerTaskEnd"' in line]


def hostile_log(copies: int = 3, long_line: int = 3 << 20) -> list[bytes]:
    """The fixture's lines `copies` times over (task ids renumbered) with broken and odd lines among them.

    Every line kind a reader must get right: truncated TaskEnds (alone and run into the next line), fields in
    another order, spaces, duplicate keys, wrong types, CRLF, NUL and non-UTF-8 bytes, blank lines, a line longer
    than a block, malformed application and executor events, `"SparkListenerTaskEnd"` inside another line.
    """
    base = PLAIN.read_bytes().splitlines()
    ends = task_end_lines()
    sample = json.loads(ends[0])
    out: list[bytes] = []
    for copy in range(copies):
        for n, line in enumerate(base):
            if b'"SparkListenerTaskEnd"' in line:
                event = json.loads(line)
                event["Task Info"]["Task ID"] += 1000 * copy
                event["Task Info"]["Finish Time"] += 7 * copy
                line = json.dumps(event, separators=(",", ":")).encode()
            out.append(line)
            if n % 17 == 5:
                out.append(_odd(copy, n, sample, ends))
    big = dict(sample, **{"Task End Reason": {"Reason": "ExceptionFailure", "Description": "x" * long_line}})
    out.insert(len(out) // 2, json.dumps(big, separators=(",", ":")).encode())
    return out


def _odd(copy: int, n: int, sample: dict, ends: list[bytes]) -> bytes:
    """One of the odd lines, chosen by position."""
    line = ends[n % len(ends)]
    reordered = dict(reversed(list(sample.items())))
    choices = [
        line[: len(line) // 2],  # truncated
        line[: len(line) // 3] + ends[0],  # truncated, run into the next line
        json.dumps(reordered, separators=(",", ":")).encode(),  # "Event" last
        json.dumps(sample).encode(),  # spaces after ':' and ','
        line.replace(b'"Finish Time":', b'"Finish Time":1,"Finish Time":', 1),  # duplicate key: the last counts
        line.replace(b'"Task ID":', b'"Task ID":"7",' + b'"x":', 1),  # a string where a number belongs
        line + b"\r",
        b"\x00" * 40,
        line.replace(b'"Host":"', b'"Host":"\xff\xfe', 1),  # not UTF-8
        b"",
        b"   \t ",
        b'{"Event":"SparkListenerApplicationEnd","Timestamp":"soon"}',
        b'{"Event":"SparkListenerApplicationStart","App Name":["x"],"App ID":7}',
        b'{"Event":"SparkListenerExecutorAdded","Executor ID":"9","Executor Info":[1]}',
        b'{"Event":"SparkListenerExecutorAdded","Timestamp":5,"Executor ID":"' + str(copy).encode() +
        b'","Executor Info":{"Total Cores":3}}',
        b'x"SparkListenerTaskEnd"' + line[30:],
        b'{"Event":"SparkListenerTaskStart","Stage ID":1,"x":"SparkListenerTaskEnd"}',
        line.replace(b'"Launch Time":', b'"Launch Time":1.5,"y":', 1),  # a float where an int belongs
        line[:-1] + b',}',  # trailing comma
        b'\xef\xbb\xbf' + line,  # a byte-order mark
    ]
    return choices[(n + copy) % len(choices)]


def write_log(path: Path, lines: list[bytes], end: bytes = b"\n") -> Path:
    """`lines` as a file (the last one followed by `end`)."""
    path.write_bytes(b"\n".join(lines) + end)
    return path


def lost_attempt(line: bytes, reason: str) -> bytes:
    """A TaskEnd as Spark logs an attempt its executor's loss or a fetch failure ended: failed, no Task Metrics."""
    e = json.loads(line)
    del e["Task Metrics"]
    e["Task Info"]["Failed"] = True
    e["Task End Reason"] = {"Reason": reason}
    return json.dumps(e, separators=(",", ":")).encode()


def with_lost_attempts(path: Path) -> tuple[Path, list[int]]:
    """The plain fixture's log written at `path` with its 4th and 10th TaskEnd turned into attempts an
    ExecutorLostFailure and a FetchFailed ended (`lost_attempt`); and the line indexes of its TaskEnds."""
    lines = PLAIN.read_bytes().splitlines()
    ends = [k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line]
    lines[ends[3]] = lost_attempt(lines[ends[3]], "ExecutorLostFailure")
    lines[ends[9]] = lost_attempt(lines[ends[9]], "FetchFailed")
    return write_log(path, lines), ends


def notices(items: list[Any]) -> list[str]:
    return [i.message for i in items if isinstance(i, Notice)]


def totals(items: list[Any]) -> np.ndarray:
    return sum((i.counts for i in items if isinstance(i, Interval)), np.zeros(64, dtype=np.int64))


@contextmanager
def stub_driver(answers: dict[str, Any], empty_task_pages: bool = False, polls: int | None = None,
                guard: tuple[str, str] | None = None) -> Iterator[str]:
    """A driver UI stub serving recorded REST answers (by path under /api/v1), 404 for any other path; its URL.
    `empty_task_pages`: a taskList page past the recorded ones is an empty list, as a driver answers. `polls`: once
    the application has been asked that many times, each connection is closed unanswered, as by a driver that
    stopped. `guard`: (Authorization header, query parameter) each request must carry, as a gateway in front of the
    UI wants (401 otherwise); the parameter, last in the query, is not part of the path looked up."""
    asked = 0

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            nonlocal asked
            path = self.path.removeprefix("/api/v1")
            if guard is not None:
                carried = path.endswith((f"?{guard[1]}", f"&{guard[1]}"))
                path = path[: -len(guard[1]) - 1]
                if not carried or self.headers.get("Authorization") != guard[0]:
                    self.send_response(401)
                    self.end_headers()
                    return
            asked += path.count("/") == 2
            if polls is not None and asked > polls:
                self.close_connection = True
                return
            body = answers.get(path)
            if body is None and empty_task_pages and "taskList" in path:
                body = []
            self.send_response(404 if body is None else 200)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def cluster_job_log(job: Path, out: Path) -> Path:
    """Run a real pyspark job script (`job EVENTS_DIR WORK_DIR PORT`, its folder on the path) in `out`: its event
    log."""
    events = out / "events"
    events.mkdir()
    done = subprocess.run([sys.executable, str(job), str(events), str(out), str(free_port())], cwd=out,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable,
                               "PYTHONPATH": str(job.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")},
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = [p for p in events.iterdir() if p.is_file()]
    return found


def hung(source: SparkSource) -> dict[str, Any] | None:
    """The straggler still running in the source's analysis now, if any."""
    return next((s for s in source.analysis()["stragglers"] if s.get("running")), None)


def wait_for(what: str, timeout: float, check: Any) -> Any:
    """What `check()` gives once it is true; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return found


def answers(url: str) -> bool:
    """True once the URL answers (a busy machine's fresh JVM can take seconds for its first answer)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return bool(json.loads(resp.read()))
    except OSError:
        return False


def grows_with_the_clock(source: SparkSource, first: dict[str, Any]) -> dict[str, Any]:
    """The running straggler `first` 3 s later: the same task, its time so far the clock's (grown by the 3 s while
    its source says nothing new of it), worded so."""
    from latencymap.outputs.report import straggler_lines

    time.sleep(3.0)
    later = hung(source)
    assert later is not None and later["task_id"] == first["task_id"]
    assert later["duration_s"] >= first["duration_s"] + 2.5, (first, later)
    assert abs(later["duration_s"] - (time.time() - later["start"])) < 2.0, later
    assert later["ratio"] > first["ratio"]
    assert "so far, still running (by the clock)" in straggler_lines([later])[1], straggler_lines([later])
    return later
