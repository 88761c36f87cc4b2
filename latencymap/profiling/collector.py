"""Run py-spy continuously as overlapping chunks in a background thread; report samples by callback.

py-spy writes a chrometrace file only when a recording ends, so a live view needs bounded
recordings. A chunk is started every `chunk_s - overlap_s` seconds, and a running chunk is ended
(SIGINT: py-spy still writes what it sampled) once a later one has printed that it is sampling
and has sampled for `overlap_s`, so there is no gap while py-spy starts and attaches (≈30–200 ms).
py-spy's own `--duration` cannot place the end: it counts samples, and its sampling intervals are
random (exponential, against aliasing), so a 2 s run lasts 1.6–2.3 s; it is only a bound
(LIMIT_FACTOR × chunk_s) for a py-spy whose collector died. Chunks finish in the order
they started; samples of a chunk earlier than the end of the previous chunk are dropped (that
stretch was already reported), so each instant is reported once. Samples reach the callback up
to ≈`chunk_s` (+ write time) after they were taken.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from latencymap.profiling.liveness import Liveness
from latencymap.profiling.pyspy import Chunk, ChunkResult, PySpyError, alive, check_target, record_argv, require_pyspy
from latencymap.profiling.samples import DEFAULT_RATE, Sample

CHUNK_S = 2
OVERLAP_S = 0.25
LIMIT_FACTOR = 2
STOP_WAIT_S = 5.0


class Collector:
    """Samples the Python stacks of `pid` until `stop()`; `on_samples` gets each chunk's new samples."""

    def __init__(self, pid: int, *, on_samples: Callable[[list[Sample]], None], on_message: Callable[[str], None],
                 rate: int = DEFAULT_RATE, subprocesses: bool = False, chunk_s: int = CHUNK_S,
                 overlap_s: float = OVERLAP_S) -> None:
        self.pid = pid
        self.rate = rate
        self.subprocesses = subprocesses
        self.chunk_s = max(1, int(chunk_s))
        self.overlap_s = max(0.0, min(overlap_s, self.chunk_s / 2))
        self.step_s = self.chunk_s - self.overlap_s
        self._on_samples = on_samples
        self._on_message = on_message
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dir: Path | None = None
        self._exe = ""
        self._watermark = float("-inf")
        self._seq = 0
        self.chunks = 0
        self.samples = 0
        self.max_offset_error = 0.0
        self.running = False
        self._succeeded = False
        self._quiet = False
        #: Which threads are alive, polled while sampling: py-spy does not say when one ended.
        self.liveness = Liveness(pid, subprocesses=subprocesses)

    def start(self) -> None:
        """Check py-spy and the target, then start sampling; PySpyError says why it cannot."""
        self._exe = require_pyspy()
        check_target(self.pid)
        self._dir = Path(tempfile.mkdtemp(prefix="latencymap-pyspy-"))
        self.running = True
        self.liveness.start()
        self._thread = threading.Thread(target=self._run, name="latencymap-profiler", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Stop sampling soon, without waiting (`stop` waits); a chunk stopped before it sampled is not an error."""
        self._quiet = True
        self._stop.set()

    def stop(self) -> None:
        """Stop the running chunks early (they still report what they sampled) and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S + 2)

    def _launch(self) -> Chunk:
        assert self._dir is not None
        self._seq += 1
        out = self._dir / f"chunk-{self._seq}.json"
        argv = record_argv(self._exe, self.pid, str(out), duration=LIMIT_FACTOR * self.chunk_s, rate=self.rate,
                           subprocesses=self.subprocesses)
        chunk = Chunk(argv, out, self._dir / f"chunk-{self._seq}.err", self.rate, self.pid)
        chunk.start()
        return chunk

    def _run(self) -> None:
        running: deque[Chunk] = deque()
        try:
            self._loop(running)
        except Exception as err:  # never take the view down: say it and stop sampling
            self._on_message(f"profiling stopped: {type(err).__name__}: {err}")
        finally:
            for chunk in running:
                chunk.kill()
            self.liveness.stop()
            self.running = False
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)

    def _loop(self, running: deque[Chunk]) -> None:
        """Launch chunks on schedule and finish them in order; on stop, interrupt and finish the rest."""
        next_at = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_at:
                running.append(self._launch())
                next_at = now + self.step_s
            self._hand_over(running, now)
            while running and running[0].done.is_set():
                if not self._finish(running.popleft()):
                    return
            self._stop.wait(max(0.0, min(0.05, next_at - time.monotonic())))
        for chunk in running:
            chunk.interrupt()
        deadline = time.monotonic() + STOP_WAIT_S
        while running:
            chunk = running.popleft()
            if not chunk.done.wait(max(0.0, deadline - time.monotonic())):
                chunk.kill()
                chunk.done.wait(1.0)
            if chunk.done.is_set() and not self._finish(chunk, stopping=True):
                break

    def _hand_over(self, running: deque[Chunk], now: float) -> None:
        """End the chunks older than the newest one that has been sampling for `overlap_s`."""
        for at in range(len(running) - 1, 0, -1):
            since = running[at].sampling_since(now)
            if since is not None and now - since >= self.overlap_s and not running[at].done.is_set():
                for older in list(running)[:at]:
                    if not older.interrupted:
                        older.interrupt()
                return

    def _finish(self, chunk: Chunk, *, stopping: bool = False) -> bool:
        """Report a finished chunk's new samples; False when profiling must stop (error or target gone)."""
        self.chunks += 1
        try:
            result = chunk.result(self.liveness)
        except PySpyError as err:
            if stopping and (self._succeeded or self._quiet or chunk.cut_short):
                return True  # stopped (by us) before it had sampled anything
            self._on_message(str(err) if alive(self.pid) else f"profiled process {self.pid} exited; profiling stopped")
            self._stop.set()
            return False
        finally:
            chunk.output.unlink(missing_ok=True)
            chunk.stderr_path.unlink(missing_ok=True)
        self._succeeded = True
        self._report(result)
        if result.target_exited or not alive(self.pid):
            self._on_message(f"profiled process {self.pid} exited; profiling stopped")
            self._stop.set()
            return False
        return True

    def _report(self, result: ChunkResult) -> None:
        fresh = [s for s in result.samples if s.time >= self._watermark]
        self._watermark = max(self._watermark, result.end)
        self.max_offset_error = max(self.max_offset_error, result.offset_error)
        if fresh:
            self.samples += len(fresh)
            self._on_samples(fresh)
