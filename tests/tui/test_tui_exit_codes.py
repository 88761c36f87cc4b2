"""Exit codes as documented: `q` is 0; Ctrl-C, as a key in the TUI or SIGINT to the process, is 130 (interrupted);
SIGTERM 143 and SIGHUP 129, after a live OTLP receiver took in what it had acknowledged (a recording then holds it)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from otlp_support import EVENTS, SERIES, Posters, events, free_port, http_send, left_unread
from skips_support import requires_binary
from tmux_support import Pane as TmuxPane
from tui_support import EXAMPLE, example_items, wait_ended

from latencymap.sources.otlp.receiver import BEHIND, DRAIN_S, STOPPING
from latencymap.tui.app import STOP_WAIT_S, LatencyMapApp

SLOW_PRODUCER = r"""
import sys, time
for i in range(100000):
    sys.stdout.write(f"<begin record>\ntimestamp, microsec, {(i + 1) * 1000000}, x\nlabel, slow\n1, {i}\n"
                     "<end record>\n")
    sys.stdout.flush()
    time.sleep(0.02)
"""


@pytest.mark.parametrize(("key", "code"), [("ctrl+c", 130), ("q", 0)])
def test_key_exit_codes(key: str, code: int) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="mono")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            await pilot.press(key)
            await pilot.pause(0.2)

    asyncio.run(main())
    assert app.return_code == code


@pytest.mark.slow
def test_sigint_to_the_plain_view_exits_130_keeping_the_recording(tmp_path: Path) -> None:
    rec = tmp_path / "int.txt"
    producer = subprocess.Popen([sys.executable, "-c", SLOW_PRODUCER], stdout=subprocess.PIPE)
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--record", str(rec)],
                            stdin=producer.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert producer.stdout is not None
    producer.stdout.close()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not rec.exists() or rec.read_text().count("<end record>") < 5):
            time.sleep(0.05)
        view.send_signal(signal.SIGINT)
        rc = view.wait(15)
    finally:
        producer.kill()
        producer.wait()
        view.kill()
    assert rc == 130
    assert view.stderr is not None and "Traceback" not in view.stderr.read()
    assert rec.read_text().endswith("<end record>\n")


class Pane(TmuxPane):
    """A tmux pane that can find the latencymap process it runs."""

    def viewer_pid(self) -> int:
        """The latencymap process of the pane (a child of the pane's shell)."""
        shell = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{pane_pid}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if stat[stat.rindex(")") + 2:].split()[1] == shell and b"latencymap" in cmdline:
                return int(entry.name)
        raise AssertionError("no latencymap process in the pane")



@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.parametrize("how", ["key", "signal"])
def test_ctrl_c_in_a_real_terminal_exits_130(how: str) -> None:
    pane = Pane(f"cat {shlex.quote(str(EXAMPLE))} | {shlex.quote(sys.executable)} -m latencymap")
    try:
        pane.wait_for("ENDED")
        if how == "key":
            subprocess.run(["tmux", "send-keys", "-t", pane.name, "C-c"], check=True)
        else:
            os.kill(pane.viewer_pid(), signal.SIGINT)
        pane.wait_for("EXIT=130")
    finally:
        pane.close()


def listening(port: int, timeout: float = 30) -> None:
    """Once something listens on 127.0.0.1:`port`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.1)


def recorded(rec: Path) -> tuple[int, str]:
    """The events of a recording as `report` reads it, and that report (JSON: its messages hold the notes)."""
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return events(done.stdout), done.stdout


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.parametrize(("how", "code"), [("SIGTERM", 143), ("SIGHUP", 129), ("q", 0)])
def test_a_stop_records_every_event_the_receiver_acknowledged(tmp_path: Path, how: str, code: int) -> None:
    """`listen --otlp --record` in the TUI, its queue of acknowledged requests full: SIGTERM or `q` keep the app up
    (STOPPING) while the receiver takes in what it acknowledged (later requests get 503 "stopping"), SIGHUP closes
    it at once and waits the same; then the command exits with the signal's code, the terminal restored; the
    recording holds every event acknowledged (a drain past DRAIN_S says, on the terminal too, the requests it left).
    Before, SIGTERM under load hung the app, and `q` lost what was queued."""
    port, rec = free_port(), tmp_path / "run.txt"
    pane = Pane(f"{shlex.quote(sys.executable)} -m latencymap listen --otlp 127.0.0.1:{port} --record {rec}")
    try:
        listening(port)
        posters = Posters(http_send(f"127.0.0.1:{port}"))
        posters.until(lambda: posters.refused[BEHIND] > 0)  # the queue holds QUEUE_REQUESTS requests
        signalled = time.monotonic()
        if how == "q":
            pane.keys("q")
        else:
            os.kill(pane.viewer_pid(), getattr(signal, how))
        if how != "SIGHUP":
            pane.wait_for("STOPPING", settle=0)
        posters.until(lambda: posters.refused[STOPPING] + posters.refused["gone"] >= 8)
        posters.join()
        screen = pane.wait_for(f"EXIT={code}", timeout=30)
        took = time.monotonic() - signalled
        assert not pane.alternate_screen()
    finally:
        pane.close()
    assert "Traceback" not in screen and "not passed on" not in screen, screen
    assert posters.refused[STOPPING] > 0, posters.refused  # the intake closed: the drain was asked, and waited for
    got, said = recorded(rec)
    assert got + left_unread(said) * SERIES * EVENTS == posters.acked, said
    assert left_unread(said) == 0 or took >= DRAIN_S, (took, said)
    assert left_unread(screen) == left_unread(said), screen  # said on the terminal too, once the TUI is gone


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_second_sigterm_in_the_tui_stops_at_once_and_says_what_was_not_passed_on(tmp_path: Path) -> None:
    """A second SIGTERM while the receiver takes in a full queue ends the TUI at once (143, the terminal restored),
    and the command's end says how many acknowledged requests were not passed on."""
    port, rec = free_port(), tmp_path / "run.txt"
    pane = Pane(f"{shlex.quote(sys.executable)} -m latencymap listen --otlp 127.0.0.1:{port} --record {rec}")
    try:
        listening(port)
        posters = Posters(http_send(f"127.0.0.1:{port}"))
        posters.until(lambda: posters.refused[BEHIND] > 0)
        viewer = pane.viewer_pid()
        os.kill(viewer, signal.SIGTERM)
        posters.until(lambda: posters.refused[STOPPING] > 0)  # the intake closed, the drain begun
        second = time.monotonic()
        os.kill(viewer, signal.SIGTERM)
        screen = pane.wait_for("EXIT=143", timeout=30)
        took = time.monotonic() - second
        posters.join()
        assert not pane.alternate_screen()
    finally:
        pane.close()
    assert "Traceback" not in screen, screen
    assert "acknowledged requests not passed on" in screen, screen
    assert 0 < recorded(rec)[0] < posters.acked
    assert took < DRAIN_S, took


def ended(pid: int, timeout: float = 30) -> bool:
    """Whether process `pid` has ended (it may stay a zombie: its shell is gone) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.parametrize("source", ["otlp", "pipe"])
def test_the_terminal_closing_ends_the_tui_and_keeps_the_recording(tmp_path: Path, source: str) -> None:
    """The terminal closes under the TUI (tmux kills the pane: SIGHUP and SIGCONT from the kernel): the process ends
    (it hung: Textual's SIGCONT handler set its screen up again on the closed terminal), and the recording holds
    every event acknowledged by a live receiver, or every record of a pipe."""
    port, rec = free_port(), tmp_path / "run.txt"
    command = f"{shlex.quote(sys.executable)} -m latencymap --record {rec}"
    if source == "otlp":
        command = f"{shlex.quote(sys.executable)} -m latencymap listen --otlp 127.0.0.1:{port} --record {rec}"
    else:
        command = f"cat {shlex.quote(str(EXAMPLE))} | {command}"
    pane = Pane(command)
    try:
        if source == "otlp":
            listening(port)
            posters = Posters(http_send(f"127.0.0.1:{port}"))
            posters.until(lambda: posters.refused[BEHIND] > 0)
        else:
            pane.wait_for("ENDED")
        viewer = pane.viewer_pid()
    finally:
        pane.close()
    assert ended(viewer), "the TUI still runs after its terminal closed"
    got, said = recorded(rec)
    if source == "otlp":
        posters.until(lambda: posters.refused[STOPPING] + posters.refused["gone"] >= 8)
        posters.join()
        assert got + left_unread(said) * SERIES * EVENTS == posters.acked, said
    else:
        assert got == recorded(EXAMPLE)[0]



class Terminal:
    """A pseudo-terminal (160x50) whose screen a thread reads (as a terminal would) until the test closes it."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.shown = b""
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._closing.is_set():
            if select.select([self.master], [], [], 0.05)[0]:
                try:
                    self.shown = self.shown[-20000:] + os.read(self.master, 65536)
                except OSError:  # the slave's last holder ended
                    return

    def wait_for(self, text: bytes, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.shown:
            assert time.monotonic() < deadline, self.shown[-2000:]
            time.sleep(0.05)

    def close(self) -> None:
        """Close the terminal's master side: the terminal is gone (its slave side hangs up)."""
        self._closing.set()
        self._reader.join()
        os.close(self.master)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["fifo", "otlp"])
def test_a_terminal_gone_without_a_hang_up_ends_the_tui_and_keeps_the_recording(tmp_path: Path, source: str) -> None:
    """The terminal closes under the TUI and no SIGHUP comes (the process is not in the terminal's session, as under a
    session leader that does not pass the hang-up on) while records keep coming: the process ends within seconds,
    as a hang-up ends it (129), a live receiver first taking in what it acknowledged; its zstd recording reads to its
    end, every event acknowledged in it. It hung: Textual's output thread died of the write error (EIO), its queue
    filled, and the app blocked writing into it, deaf to SIGTERM."""
    rec, port, fifo = tmp_path / "run.txt.zst", free_port(), tmp_path / "live"
    args = ["listen", "--otlp", f"127.0.0.1:{port}", "--record", str(rec)]
    if source == "fifo":
        os.mkfifo(fifo)
        producer = subprocess.Popen([sys.executable, "-c", f"import sys\nsys.stdout = open({str(fifo)!r}, 'w')\n"
                                     + SLOW_PRODUCER])
        args = ["--record", str(rec), str(fifo)]
    terminal = Terminal()
    env = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", *args], env=env, stdin=terminal.slave,
                              stdout=terminal.slave, stderr=terminal.slave, start_new_session=True)
    os.close(terminal.slave)
    try:
        if source == "otlp":
            listening(port)
            posters = Posters(http_send(f"127.0.0.1:{port}"))
            posters.until(lambda: posters.refused[BEHIND] > 0)  # the queue holds QUEUE_REQUESTS requests
        terminal.wait_for(b" LIVE ")
        terminal.close()
        closed = time.monotonic()
        if source == "otlp":
            posters.until(lambda: posters.refused[STOPPING] + posters.refused["gone"] >= 8)
            posters.join()
        code = viewer.wait(30)
        took = time.monotonic() - closed
    finally:
        viewer.kill()
        if source == "fifo":
            producer.kill()
            producer.wait()
    assert code == 129
    assert took < (STOP_WAIT_S if source == "otlp" else 5), took
    got, said = recorded(rec)
    assert got > 0 and "cut short" not in said, said
    if source == "otlp":
        assert posters.refused[STOPPING] > 0, posters.refused  # the intake closed: the drain was asked
        assert got + left_unread(said) * SERIES * EVENTS == posters.acked, said


@pytest.mark.slow
def test_a_terminal_gone_under_a_tui_that_writes_nothing_new_ends_it() -> None:
    """A finished input shows what it showed: the app writes nothing, so no write fails when the terminal goes (no
    SIGHUP: not its session). It saw the terminal hang up all the same and ended as a hang-up (129); it ran on for
    ever, its input thread spinning on the end of the terminal's input."""
    terminal = Terminal()
    env = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", str(EXAMPLE)], env=env, stdin=terminal.slave,
                              stdout=terminal.slave, stderr=terminal.slave, start_new_session=True)
    os.close(terminal.slave)
    try:
        terminal.wait_for(b" ENDED ")
        time.sleep(1)  # what the end changes is written
        terminal.close()
        code = viewer.wait(10)
    finally:
        viewer.kill()
    assert code == 129


@pytest.mark.slow
def test_a_terminal_gone_without_a_hang_up_ends_the_plain_view_as_a_hang_up(tmp_path: Path) -> None:
    """`--plain` draws frames on a terminal that closes under it with no SIGHUP (not its session): the next frame's
    write fails (EIO), which is the terminal hanging up, not an output that cannot be written. It ended with 1; it
    now ends as a hang-up (129), its recording whole."""
    rec, fifo = tmp_path / "plain.txt", tmp_path / "live"
    os.mkfifo(fifo)
    producer = subprocess.Popen([sys.executable, "-c", f"import sys\nsys.stdout = open({str(fifo)!r}, 'w')\n"
                                 + SLOW_PRODUCER])
    terminal = Terminal()
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--record", str(rec), str(fifo)],
                              stdin=subprocess.DEVNULL, stdout=terminal.slave, stderr=subprocess.PIPE,
                              start_new_session=True, text=True)
    os.close(terminal.slave)
    try:
        terminal.wait_for(b"Frequency heat map")
        terminal.close()
        code = viewer.wait(30)
    finally:
        viewer.kill()
        producer.kill()
        producer.wait()
    assert viewer.stderr is not None
    said = viewer.stderr.read()
    assert code == 129, said
    assert "Traceback" not in said and "cannot write" not in said, said
    assert rec.read_text().endswith("<end record>\n")
