"""Find py-spy, build its command line, and run one bounded `py-spy record` (a chunk) with its timing.

A chunk's chrometrace `ts` are µs since py-spy's recorder was created, a moment that nothing
reports. It is bracketed by two epoch readings: `launched` (taken just before the process is
started: the origin is later) and `exited - final_ts` (py-spy takes `final_ts` just before it
writes the file, then exits: the origin is earlier). The origin is taken as the middle of that
bracket, so its error is at most half the bracket's width (`offset_error`). Measured on the 2-core
development VM (py-spy 0.4.3, 1 s chunks, 30 in a row): 1–27 ms wide, median 8.5 ms, p90 16 ms,
so the error is within ±4 ms half the time and never past ±14 ms: about one sample period at the
default 100 Hz, and small beside a column. The same under a full test run beside it (median 8 ms,
max 17 ms).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from latencymap.profiling.chrometrace import ChrometraceError, final_ts, load_events, samples_of, spans
from latencymap.profiling.liveness import Liveness, clip_ended
from latencymap.profiling.samples import Sample

PYSPY_ENV = "LATENCYMAP_PY_SPY"
INSTALL_HINT = "install it with `pip install 'latencymap[profile]'` (py-spy>=0.4) or set LATENCYMAP_PY_SPY to its path"
#: What `py-spy record` prints (stdout) once it has attached, right before its first sample (0.4.x).
SAMPLING_ANNOUNCEMENT = "Sampling process"
ANNOUNCE_WAIT_S = 1.0
PTRACE_HINT = ("profiling needs permission to ptrace the process: run as root or as its owner with "
               "kernel.yama.ptrace_scope=0, or give the container CAP_SYS_PTRACE")


class PySpyError(Exception):
    """py-spy is missing, or cannot profile the target; the message says why and what to do."""


def locate_pyspy() -> str | None:
    """The py-spy executable: $LATENCYMAP_PY_SPY, then next to this Python (a venv's bin), then PATH."""
    explicit = os.environ.get(PYSPY_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) and Path(explicit).is_file() else None
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def require_pyspy() -> str:
    """The py-spy executable, or PySpyError saying how to get it."""
    exe = locate_pyspy()
    if exe is None:
        where = f" at ${PYSPY_ENV}={os.environ[PYSPY_ENV]}" if os.environ.get(PYSPY_ENV) else ""
        raise PySpyError(f"py-spy not found{where}: {INSTALL_HINT}")
    return exe


def check_target(pid: int) -> None:
    """PySpyError when `pid` does not exist (or is not ours to signal, the same test ptrace makes)."""
    if pid <= 0:
        raise PySpyError(f"bad PID {pid}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise PySpyError(f"no process with PID {pid}") from None
    except PermissionError:
        raise PySpyError(f"PID {pid} belongs to another user; {PTRACE_HINT}") from None


def alive(pid: int) -> bool:
    """Whether the process still exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def record_argv(exe: str, pid: int, output: str, *, duration: int, rate: int, subprocesses: bool) -> list[str]:
    """`py-spy record` for one chunk: chrometrace, never pausing the target, idle threads included.

    `--idle` matters for timing: chrometrace carries no per-sample flag, and without it an idle
    thread's last busy stack would stretch over its idle time (checked: a thread sleeping half the
    time showed its busy function for the whole recording). `--threads` roots each thread's stack in
    a frame naming its native id, by which `liveness` tells when it ended (the samples leave it out).
    """
    argv = [exe, "record", "--pid", str(pid), "--format", "chrometrace", "--output", output,
            "--duration", str(duration), "--rate", str(rate), "--nonblocking", "--idle", "--threads"]
    return [*argv, "--subprocesses"] if subprocesses else argv


def error_summary(stderr: str, pid: int, returncode: int | None = None) -> str:
    """py-spy's error in one line (its `Error:` and first cause), with the remedy when it is permissions; how it
    ended when it said nothing."""
    text = stderr.split("Stack backtrace:", 1)[0]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("py-spy>")]
    main = next((line for line in lines if line.startswith("Error:")), lines[0] if lines else silent(returncode))
    summary = main.removeprefix("Error:").strip()
    cause = next((line.split(":", 1)[1].strip() for line in lines if re.match(r"^\d+: ", line)), "")
    if cause and cause not in summary:
        summary += f" ({cause})"
    if summary.lower().startswith("permission denied:"):  # py-spy's own advice is to rerun it with sudo
        summary = "permission denied"
    if "permission denied" in text.lower() or "operation not permitted" in text.lower():
        summary += f"; {PTRACE_HINT}"
    return f"py-spy cannot profile PID {pid}: {summary}"


def silent(returncode: int | None) -> str:
    """Why a py-spy that printed no error failed, from its exit status."""
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            return f"py-spy was killed by {signal.Signals(-returncode).name} before it said why"
        return f"py-spy was killed by signal {-returncode} before it said why"
    return f"py-spy exited with status {returncode} and wrote no samples"


@dataclass
class Chunk:
    """One bounded `py-spy record` into `output`; `wait` blocks until it exited and was timed."""

    argv: list[str]
    output: Path
    stderr_path: Path
    rate: int
    pid: int
    launched: float = 0.0
    exited: float = 0.0
    returncode: int | None = None
    proc: subprocess.Popen | None = None
    done: threading.Event = field(default_factory=threading.Event)
    started_mono: float = 0.0
    sampling_mono: float | None = None
    interrupted: bool = False

    def start(self) -> None:
        """Start py-spy in its own session (a terminal's Ctrl-C reaches us, not it) and time its exit.

        Its stdout (`py-spy> ` progress lines: sampling, stopped, written) goes to the stderr file too.
        """
        with open(self.stderr_path, "wb") as err:
            self.launched = time.time()
            self.started_mono = time.monotonic()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         start_new_session=True)
        threading.Thread(target=self._wait, name="latencymap-pyspy-wait", daemon=True).start()

    def sampling_since(self, now: float) -> float | None:
        """When (monotonic) py-spy was first seen sampling, None before; it says so once attached.

        A py-spy that says nothing (another version's wording) counts as sampling after ANNOUNCE_WAIT_S.
        """
        waiting = self.sampling_mono is None and self.proc is not None and not self.done.is_set()
        if waiting and (SAMPLING_ANNOUNCEMENT in self.stderr() or now - self.started_mono >= ANNOUNCE_WAIT_S):
            self.sampling_mono = now
        return self.sampling_mono

    def _wait(self) -> None:
        assert self.proc is not None
        self.returncode = self.proc.wait()
        self.exited = time.time()
        self.done.set()

    def interrupt(self) -> None:
        """Ask py-spy to stop early; it still writes what it sampled (SIGINT, like Ctrl-C)."""
        self.interrupted = True
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)

    def kill(self) -> None:
        """Stop py-spy at once (nothing is written)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    @property
    def cut_short(self) -> bool:
        """Whether our SIGINT reached py-spy before it could catch it (it had not begun sampling)."""
        return self.interrupted and self.returncode == -signal.SIGINT

    def stderr(self) -> str:
        """What py-spy printed on stderr."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def result(self, liveness: Liveness | None = None) -> ChunkResult:
        """The chunk's samples mapped to epoch seconds, each thread's cut where `liveness` saw it end; PySpyError
        when py-spy failed."""
        try:
            data = self.output.read_bytes()
        except OSError:
            data = b""
        if self.returncode != 0 or not data:
            raise PySpyError(error_summary(self.stderr(), self.pid, self.returncode))
        try:
            events = load_events(data)
        except ChrometraceError as err:
            raise PySpyError(f"py-spy wrote an unreadable chrometrace: {err}") from None
        last_us = final_ts(events)
        low, high = self.launched, self.exited - last_us / 1e6
        high = max(low, high)
        origin = (low + high) / 2
        target_exited = "process exited" in self.stderr()
        error = (high - low) / 2
        ended = clip_ended(spans(events), liveness, origin, error)
        return ChunkResult(samples_of(ended, origin, self.rate), origin, origin + last_us / 1e6, error, target_exited)


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """What one chunk sampled, when its recording ended (epoch), and its origin's error bound (seconds)."""

    samples: list[Sample]
    origin: float
    end: float
    offset_error: float
    target_exited: bool
