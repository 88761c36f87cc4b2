from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from listen_support import is_socket, listening, wait_for, writer_before_listener

import latencymap.cli.main
import latencymap.protocol
from latencymap.core.model import Interval, Notice
from latencymap.instrument import Timings
from latencymap.sinks import SocketSink, default_socket_path
from latencymap.sources.listen import POLL_S, ListenError, ListenSource, bind_socket

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "training" / "train_example.py"
#: `latencymap` with the listen command added when its entry point is not installed yet.
RUNNER = ("from latencymap.cli.main import main, source_command; from latencymap.sources.listen import ListenSource; "
          "'listen' in main.commands or main.add_command(source_command(ListenSource)); main()")
WRITER = """
import sys, time
from latencymap.instrument import Timings
path, rank, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
timings = Timings('unix:' + path, run='two', rank=rank, interval=0.05)
step = timings.timer('step')
for _ in range(n):
    with step:
        time.sleep(0.002)
timings.close()
print('dropped', timings.sink.dropped_intervals)
"""

if "listen" not in latencymap.cli.main.main.commands:
    latencymap.cli.main.main.add_command(latencymap.cli.main.source_command(ListenSource))


def listen_cmd(sock: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", RUNNER, "listen", str(sock), *args]


def recording_viewer(sock: Path, rec: Path, writers: int) -> subprocess.Popen[str]:
    """A `listen --plain --once` process recording `writers` writers to `rec`, once its socket is there."""
    viewer = subprocess.Popen(listen_cmd(sock, "--writers", str(writers), "--idle-timeout", "30", "--start-timeout",
                                         "30", "--record", str(rec), "--plain", "--once"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: is_socket(sock))
    return viewer


def report(path: Path) -> dict[str, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return {s["stream"]["label"]: s for s in json.loads(done.stdout)["streams"]}


def test_socket_is_private_and_only_a_stale_socket_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "lm.sock"
    server = bind_socket(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ListenError, match="another listener"):
        bind_socket(str(path))
    server.close()  # a killed listener leaves its socket file behind
    bind_socket(str(path)).close()
    regular = tmp_path / "notes.txt"
    regular.write_text("keep me")
    with pytest.raises(ListenError, match="not a socket"):
        bind_socket(str(regular))
    assert regular.read_text() == "keep me"


def test_listen_in_process_labels_writers_and_reports_drops(tmp_path: Path) -> None:
    path = tmp_path / "lm.sock"
    early, early_timings = writer_before_listener(path, "same")
    thread, items = listening(ListenSource(path=str(path), writers=2, idle_timeout=20), path)
    twin = Timings(SocketSink(str(path), hello={"run": "same", "rank": 0}), run="same", rank=0, interval=60)
    twin.record("step", 0.002)
    twin.flush()  # connects first: the other writer with the same run and rank gets a pid label
    assert twin.sink.connected
    time.sleep(0.1)
    early._next_try = 0.0  # retry now instead of after the back-off
    early_timings.record("step", 0.001)
    early_timings.close()

    def connected() -> int:
        return sum(1 for n in list(items) if isinstance(n, Notice) and " connected" in n.message)

    wait_for(lambda: connected() == 2)  # the twin stays connected until the listener has seen both
    twin.close()
    thread.join(20)
    assert not thread.is_alive()
    labels = {iv.stream.label for iv in items if isinstance(iv, Interval)}
    assert labels == {"same/rank0/step", f"same/rank0.pid{os.getpid()}/step"}
    messages = [n.message for n in items if isinstance(n, Notice)]
    assert any("dropped" in m and "viewer was absent or slow" in m for m in messages), messages
    assert sum(1 for m in messages if "disconnected" in m) == 2
    assert all(n.skipped == 0 for n in items if isinstance(n, Notice))
    assert not path.exists()


@pytest.mark.slow
def test_two_writer_processes_become_two_labelled_streams(tmp_path: Path) -> None:
    sock, rec = tmp_path / "lm.sock", tmp_path / "rec.txt"
    viewer = recording_viewer(sock, rec, writers=2)
    try:
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(sock), str(rank), str(n)],
                                    stdout=subprocess.PIPE, text=True) for rank, n in ((0, 30), (1, 50))]
        for w in writers:
            out, _ = w.communicate(timeout=30)
            assert w.returncode == 0 and out.strip() == "dropped 0"
        _, err = viewer.communicate(timeout=30)
    finally:
        viewer.kill()
    assert viewer.returncode == 0, err
    streams = report(rec)
    assert {label: s["total"]["events"] for label, s in streams.items()} == {"two/rank0/step": 30,
                                                                               "two/rank1/step": 50}
    assert all(s["intensity_exact"] for s in streams.values())


SKEWED_WRITER = """
import sys, time
real = time.time
time.time = lambda: real() + float(sys.argv[3])  # a host whose clock is off
from latencymap.instrument import Timings
path, rank, begin = sys.argv[1], int(sys.argv[2]), float(sys.argv[4])
timings = Timings('unix:' + path, run='skew', rank=rank, interval=0.25)
step = timings.timer('step')
while real() < begin:
    time.sleep(0.001)
stalled = False
while real() < begin + 3:
    with step:
        stalled = stalled or real() >= begin + 1.5
        time.sleep(0.4 if stalled and real() < begin + 1.6 else 0.01)
timings.close()
"""


def test_writers_whose_clocks_disagree_are_placed_by_the_listeners_clock(tmp_path: Path) -> None:
    """Two ranks timing the same 3 real seconds, one shared 0.4 s stall, rank1's clock 5 s ahead: the listener says
    so and moves rank1's columns onto its own clock, so the stall lands in overlapping columns and the peers are
    compared over every interval (they were 5 s apart: no interval of one overlapped the other's)."""
    sock, rec = tmp_path / "lm.sock", tmp_path / "rec.txt"
    viewer = recording_viewer(sock, rec, writers=2)
    try:
        begin = time.time() + 1.5
        writers = [subprocess.Popen([sys.executable, "-c", SKEWED_WRITER, str(sock), str(rank), str(skew), str(begin)])
                   for rank, skew in ((0, 0.0), (1, 5.0))]
        for w in writers:
            assert w.wait(timeout=30) == 0
        _, err = viewer.communicate(timeout=30)
    finally:
        viewer.kill()
    assert viewer.returncode == 0, err
    (said,) = [line for line in err.splitlines() if "clock is" in line]
    assert said.endswith(f"skew/rank1 (pid {writers[1].pid}): its clock is 5.0s ahead of this listener's: its "
                         "intervals are placed by the listener's clock (-5.0s each), so they line up with other "
                         "writers'")
    stalls: dict[str, tuple[float, float]] = {}
    for item in latencymap.protocol.ProtocolReader(str(rec)).read(rec.read_text().splitlines(True)):
        if isinstance(item, Interval):
            assert begin - 1 < item.start < item.end < begin + 4  # on the listener's clock, as the run was
            if item.time is not None and item.time.sum() >= 0.4:
                stalls[item.stream.label] = (item.start, item.end)
    (a0, b0), (a1, b1) = stalls["skew/rank0/step"], stalls["skew/rank1/step"]
    assert a0 < b1 and a1 < b0  # one stall, in overlapping columns
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                          capture_output=True, text=True, timeout=30)
    (group,) = json.loads(done.stdout)["peers"]["groups"]
    # 5 s apart, no interval of one overlapped the other's (3 of 8 compared, by chance of the windows); on one
    # clock all but those at the ends of a loaded run's start and stop overlap
    assert group["windows"] >= 10 and group["compared_windows"] >= 0.75 * group["windows"], group


@pytest.mark.slow
def test_training_survives_a_viewer_killed_mid_run(tmp_path: Path) -> None:
    sock, first, second = tmp_path / "lm.sock", tmp_path / "first.txt", tmp_path / "second.txt"
    viewer = subprocess.Popen(listen_cmd(sock, "--record", str(first), "--plain", "--once"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    training = None
    try:
        wait_for(lambda: is_socket(sock))
        training = subprocess.Popen([sys.executable, str(EXAMPLE), "--sink", f"unix:{sock}", "--epochs", "4",
                                     "--items", "96", "--batch-size", "4", "--interval", "0.1"],
                                    stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        wait_for(lambda: "<end record>" in first.read_text(), timeout=30)
        viewer.send_signal(signal.SIGKILL)
        viewer.wait(5)
        assert training.poll() is None  # still training after its viewer died
        viewer = subprocess.Popen(listen_cmd(sock, "--writers", "1", "--idle-timeout", "30", "--start-timeout", "30",
                                             "--record", str(second), "--plain", "--once"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, err = training.communicate(timeout=60)
        assert training.returncode == 0, err
        viewer.wait(30)
    finally:
        viewer.kill()
        if training is not None:
            training.kill()
    assert "steps 96 events 196" in err  # 96 steps; 4 epochs' starts (with their first batch), 92 waits and ends
    assert int(err.split("connects ")[1].split()[0]) >= 2  # reconnected to the new viewer
    phases = ("data_wait.epoch_start", "data_wait", "data_wait.epoch_end")  # 100 next(): 4 epochs of 24 batches
    seen = [sum(report(path).get(f"example/rank0/{phase}", {}).get("total", {}).get("events", 0) for phase in phases)
            for path in (first, second)]
    assert seen[0] > 0 and seen[1] > 0 and sum(seen) <= 100


def test_default_socket_lives_in_a_private_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATENCYMAP_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = Path(default_socket_path())
    assert path == tmp_path / "latencymap" / "listen.sock"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.parent.chmod(0o770)
    with pytest.raises(PermissionError, match="not a private directory"):
        default_socket_path()
    monkeypatch.setenv("LATENCYMAP_SOCKET", str(tmp_path / "elsewhere.sock"))
    assert default_socket_path() == str(tmp_path / "elsewhere.sock")


def test_a_writer_line_nested_too_deeply_is_said_and_the_listener_goes_on(tmp_path: Path) -> None:
    """A `# latencymap-writer` line of 5,000 `[` made json.loads raise RecursionError, which escaped the listener."""
    import socket

    path = tmp_path / "lm.sock"
    source = ListenSource(path=str(path), writers=1, idle_timeout=20)
    items: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            items.extend(source.items())
        except BaseException as err:  # the assertion below names it
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    wait_for(lambda: is_socket(path))
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(path))
        conn.sendall(("# latencymap-writer " + "[" * 5000 + "]" * 5000 + "\n").encode())
    thread.join(20)
    assert not thread.is_alive() and not errors
    messages = [n.message for n in items if isinstance(n, Notice)]
    assert any("unreadable line '# latencymap-writer [[[" in m for m in messages), messages


def test_a_second_listener_checking_the_socket_is_no_writer(tmp_path: Path) -> None:
    """`listen --writers 1` stopped (exit 0, socket removed) when a second listener probed its socket."""
    path = tmp_path / "lm.sock"
    thread, items = listening(ListenSource(path=str(path), writers=1, idle_timeout=20), path)
    with pytest.raises(ListenError, match="another listener"):
        bind_socket(str(path))  # connects and closes without a word
    time.sleep(3 * POLL_S)
    assert thread.is_alive() and is_socket(path)
    timings = Timings(SocketSink(str(path), hello={"run": "job", "rank": 0}), run="job", rank=0, interval=60)
    timings.record("step", 0.002)
    timings.close()
    thread.join(20)
    assert not thread.is_alive()
    messages = [n.message for n in items if isinstance(n, Notice)]
    assert [m for m in messages if "disconnected" in m] == [
        f"listen: job/rank0 (pid {os.getpid()}) disconnected after 1 interval"], messages
    assert sum(int(iv.counts.sum()) for iv in items if isinstance(iv, Interval)) == 1


def test_a_writer_that_names_no_one_never_adds_to_another_writers_stream(tmp_path: Path) -> None:
    """A connection without a hello sending `job/rank0/step` was summed into the real rank 0's stream."""
    path = tmp_path / "lm.sock"
    thread, items = listening(ListenSource(path=str(path), writers=2, idle_timeout=20), path)
    rank0 = Timings(SocketSink(str(path), hello={"run": "job", "rank": 0}), run="job", rank=0, interval=60)
    for _ in range(3):
        rank0.record("step", 0.002)
    rank0.flush()
    wait_for(lambda: any(isinstance(iv, Interval) for iv in items))
    now = int(time.time() * 1e6)
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(path))
        conn.sendall((f"<begin record>\ntimestamp, microsec, {now}, x\ncounts, interval\n"
                      f"start, microsec, {now - 1_000_000}\nlatencyunit, nanosec\nlabel, job/rank0/step\n"
                      "datasource, training\n8388608, 99999999999, 1e18\n<end record>\n").encode())
    rank0.record("step", 0.002)
    rank0.close()
    thread.join(20)
    assert not thread.is_alive()
    events: dict[str, int] = {}
    for iv in items:
        if isinstance(iv, Interval):
            events[iv.stream.label] = events.get(iv.stream.label, 0) + int(iv.counts.sum())
    assert events == {"job/rank0/step": 4, "job/rank0/step [writer 2]": 99_999_999_999}
    messages = [n.message for n in items if isinstance(n, Notice)]
    assert "listen: writer 2 sends 'job/rank0/step', which another writer sent first: its records of it are shown " \
           "as 'job/rank0/step [writer 2]'" in messages


RESTART_WRITER = """
import json, sys, time
from latencymap.instrument import Timings
path, seconds = sys.argv[1], float(sys.argv[2])
timings = Timings('unix:' + path, run='restart', interval=0.02)
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    timings.record('step', 1e-6 * (1 + n % 7))
    n += 1
    time.sleep(0.0002)
sink = timings.sink
timings.close()
print(json.dumps({'events': n, 'dropped': sink.dropped_events, 'connects': sink.connects}))
"""


def test_a_listener_ended_by_sigterm_records_what_its_writer_had_sent(tmp_path: Path) -> None:
    """Ended by SIGTERM, a listener dropped what its writers had sent and it had not read yet, unsaid (the writer's
    send had succeeded): a restart lost up to 182 of 6,959 events. Now it reads them into its recording, and the
    writer's later records go to the next listener: the two recordings hold every event the writer timed."""
    sock, first, second = tmp_path / "lm.sock", tmp_path / "first.txt", tmp_path / "second.txt"
    viewer = subprocess.Popen(listen_cmd(sock, "--record", str(first), "--plain", "--once"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    writer = None
    try:
        wait_for(lambda: is_socket(sock))
        writer = subprocess.Popen([sys.executable, "-c", RESTART_WRITER, str(sock), "4"], stdout=subprocess.PIPE,
                                  text=True)
        wait_for(lambda: "<end record>" in first.read_text(), timeout=30)
        viewer.send_signal(signal.SIGSTOP)  # records wait in the socket, sent as far as the writer knows
        time.sleep(0.5)
        viewer.send_signal(signal.SIGTERM)
        viewer.send_signal(signal.SIGCONT)
        _, said = viewer.communicate(timeout=10)
        assert viewer.returncode == 143, said
        viewer = subprocess.Popen(listen_cmd(sock, "--writers", "1", "--idle-timeout", "30", "--start-timeout", "30",
                                             "--record", str(second), "--plain", "--once"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        out, _ = writer.communicate(timeout=60)
        viewer.communicate(timeout=30)
    finally:
        viewer.kill()
        if writer is not None:
            writer.kill()
    truth = json.loads(out)
    assert truth["dropped"] == 0 and truth["connects"] == 2, truth
    assert "not in it" not in said and "unread" not in said, said
    events = [report(path)["restart/rank0/step"]["total"]["events"] for path in (first, second)]
    assert events[0] > 0 and events[1] > 0
    assert sum(events) == truth["events"], (events, truth)


def test_stopped_in_process_the_listener_passes_on_what_was_sent_and_counts_what_it_could_not(
        tmp_path: Path) -> None:
    """`stop` (the command's end) reads what a writer had sent before the listener ends; a writer's later sends fail,
    so it keeps them; intervals the flow no longer takes are counted."""
    path = tmp_path / "lm.sock"
    source = ListenSource(path=str(path))
    flow = source.items()
    assert "waiting" in next(flow).message
    timings = Timings(SocketSink(str(path), hello={"run": "job", "rank": 0}), run="job", rank=0, interval=60)
    for _ in range(3):
        timings.record("step", 0.001)
        timings.record("data_wait", 0.001)
        timings.flush()  # one interval each, sent before the listener reads any
    stopping = threading.Thread(target=source.stop)  # the command ending, from its main thread
    stopping.start()
    items = list(flow)
    stopping.join(10)
    assert sum(int(iv.counts.sum()) for iv in items if isinstance(iv, Interval)) == 6
    # 3 intervals of 2 phases are 6 records: it said "after 6 intervals"
    assert any("disconnected after 3 intervals of 2 streams" in n.message for n in items if isinstance(n, Notice))
    timings.record("step", 0.001)
    timings.flush()  # the listener shut its reading side: the send fails and the writer keeps the record
    assert not timings.sink.connected and timings.sink.dropped_events == 0

    other = tmp_path / "other.sock"
    source = ListenSource(path=str(other))
    flow = source.items()
    next(flow)
    sink = SocketSink(str(other), hello={"run": "job", "rank": 1})
    late = Timings(sink, run="job", rank=1, interval=60)
    for _ in range(2):
        late.record("step", 0.001)
        late.flush()
    source._stopping.set()  # as `stop` does, without waiting for a flow that is closed before it ends
    first = next(flow)  # the writer's hello, then its intervals: the flow is closed before taking them
    assert isinstance(first, Notice)
    flow.close()
    assert (source.lost_intervals, source.lost_events) == (2, 2)
    assert "2 intervals (2 events) that writers had sent were read after the run had ended" in \
        " ".join(n.message for n in source._lost_notices(True))
    late.close()
    timings.close()


def test_the_idle_timeout_waits_for_the_first_writer_and_counts_from_the_last_one_leaving(tmp_path: Path) -> None:
    """`--idle-timeout 1` counted from the listener's start: a program that connected 2 s later (torch imports for
    3 s) found no listener ("No data.") and lost its whole run."""
    sock, rec = tmp_path / "lm.sock", tmp_path / "rec.txt"
    viewer = subprocess.Popen(listen_cmd(sock, "--idle-timeout", "1", "--record", str(rec), "--plain", "--once"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: is_socket(sock))
        time.sleep(2)  # twice the idle timeout, before any writer
        writer = subprocess.run([sys.executable, "-c", WRITER, str(sock), "0", "30"], capture_output=True, text=True,
                                timeout=30)
        left = time.monotonic()
        assert writer.returncode == 0 and writer.stdout.strip() == "dropped 0", writer.stderr
        _, err = viewer.communicate(timeout=30)
        after = time.monotonic() - left
    finally:
        viewer.kill()
    assert viewer.returncode == 0, err
    assert 0.7 <= after < 3.0, after  # the idle timeout, from the writer leaving
    assert {label: s["total"]["events"] for label, s in report(rec).items()} == {"two/rank0/step": 30}


def test_a_start_timeout_stops_a_listener_no_writer_came_to_and_says_so(tmp_path: Path) -> None:
    """It said so as one skipped record (`no data yet (skipped records: 1)`, `skipped_records: 1` in a report):
    nothing was skipped. The run ends as an input with nothing in it does (exit code 0), its recording saying why."""
    sock, rec = tmp_path / "lm.sock", tmp_path / "rec.txt"
    began = time.monotonic()
    done = subprocess.run(listen_cmd(sock, "--start-timeout", "1", "--idle-timeout", "0.2", "--plain", "--once",
                                     "--record", str(rec)), capture_output=True, text=True, timeout=30)
    assert 1.0 <= time.monotonic() - began < 15, done.stderr
    assert done.returncode == 0, done.stderr
    assert "latencymap: listen: no writer connected within 1s (--start-timeout)" in done.stderr.splitlines()
    assert "no data yet (skipped records: 0)" in done.stdout + done.stderr
    assert not sock.exists()
    assert '"listen: no writer connected within 1s (--start-timeout)", "skipped": 0}' in rec.read_text()
