from __future__ import annotations

import itertools
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pylatencymap_support import need_pylatencymap

from latencymap.core.model import Interval, Notice, StreamId
from latencymap.flow.recording import Recorder, read_header, recorded, safe_options, windowed

S = StreamId("s", "bpf", "microsec")


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def report(path: Path | str) -> dict:
    r = cli("report", "--format", "json", str(path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_same_report(a: dict, b: dict) -> None:
    assert len(a["streams"]) == len(b["streams"])
    for x, y in zip(a["streams"], b["streams"], strict=True):
        assert x["stream"] == y["stream"] and x["columns"] == y["columns"]
        assert x["buckets"] == y["buckets"]
        assert x["total"]["events"] == y["total"]["events"]
        assert x["intensity_exact"] == y["intensity_exact"]
        assert np.allclose(x["frequency"], y["frequency"], rtol=1e-12, atol=0)
        assert np.allclose(x["intensity"], y["intensity"], rtol=1e-12, atol=0)
        for key in ("time_s", "mean_s", "p50_s", "p99_s"):
            assert x["total"][key] == pytest.approx(y["total"][key], rel=1e-12)


@pytest.mark.parametrize("name", ["rec.txt", "rec.zst"])
def test_report_of_live_run_equals_report_of_its_replay(tmp_path: Path, example_data: Path, name: str) -> None:
    rec = tmp_path / name
    r = cli("--plain", "--once", "--record", str(rec), stdin=example_data.read_text())
    assert r.returncode == 0, r.stderr
    assert oct(rec.stat().st_mode & 0o777) == "0o600"
    if name.endswith(".zst"):
        assert rec.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert_same_report(report(example_data), report(rec))
    header = read_header(str(rec))
    assert header is not None and header["tool"] == "latencymap" and header["source"] == "input"
    assert {"version", "host", "start", "options"} <= set(header)


def test_a_header_that_is_no_json_object_is_no_header(tmp_path: Path) -> None:
    """Nested deeper than json.loads follows (a RecursionError, not a ValueError), cut, or not an object."""
    for n, tail in enumerate(("[" * 5000 + "]" * 5000, "{", "[1]")):
        path = tmp_path / f"h{n}.txt"
        path.write_text(f"# latencymap-recording {tail}\n")
        assert read_header(str(path)) is None


def test_exact_intensity_survives_a_recording(tmp_path: Path) -> None:
    rec = tmp_path / "exact.txt"
    r = Recorder(str(rec))
    rng = np.random.default_rng(0)
    for i in range(5):
        counts = rng.integers(0, 50, 64)
        r.write(Interval(S, 100.0 + i, 101.0 + i, counts, counts * rng.random(64) * 1e-6))
    r.close()
    (stream,) = report(rec)["streams"]
    assert stream["intensity_exact"] is True and stream["columns"] == 5


def test_a_recording_with_empty_intervals_is_still_exact(tmp_path: Path) -> None:
    """Empty intervals carry no per-bucket time in a recording; the stream is exact when every other one does."""
    rec = tmp_path / "sparse.txt"
    r = Recorder(str(rec))
    rng = np.random.default_rng(3)
    for i in range(8):
        counts = rng.integers(0, 50, 64) if i % 3 else np.zeros(64, dtype=np.int64)
        r.write(Interval(S, 100.0 + i, 101.0 + i, counts, counts * rng.random(64) * 1e-6))
    r.close()
    (stream,) = report(rec)["streams"]
    assert stream["intensity_exact"] is True and stream["columns"] == 8
    text = cli("report", str(rec)).stdout
    assert "waited (exact)" in text
    frame = cli("--plain", "--once", str(rec)).stdout
    assert "estimated from bucket midpoints" not in frame and "Intensity" in frame


def test_record_never_overwrites_without_force(tmp_path: Path, example_data: Path) -> None:
    rec = tmp_path / "keep.txt"
    rec.write_text("precious\n")
    r = cli("--plain", "--once", "--record", str(rec), str(example_data))
    assert r.returncode == 2
    assert "exists" in r.stderr and "--force" in r.stderr
    assert rec.read_text() == "precious\n"
    r = cli("--plain", "--once", "--record", str(rec), "--force", str(example_data))
    assert r.returncode == 0 and report(rec)["streams"][0]["columns"] == 71


PRODUCER = r"""
import sys, time
ts = 1_700_000_000_000_000
for i in range(10_000):
    sys.stdout.write(f"<begin record>\ntimestamp, microsec, {ts + i * 1_000_000}, t{i}\nlatencyunit, microsec\n"
                     f"label, live\n128, {i * 3}\n256, {i * i}\n<end record>\n")
    sys.stdout.flush()
    time.sleep(0.02)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["live.txt", "live.zst"])
def test_sigkill_mid_stream_leaves_every_complete_record_replayable(tmp_path: Path, name: str) -> None:
    rec = tmp_path / name
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER], stdout=subprocess.PIPE)
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--screen_delay=0", "--record",
                               str(rec)], stdin=producer.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not rec.exists() or rec.stat().st_size < 3000):
        time.sleep(0.05)
    viewer.send_signal(signal.SIGKILL)
    viewer.wait(10)
    producer.kill()
    producer.wait(10)
    raw = rec.read_bytes()
    if name.endswith(".zst"):
        import zstandard

        text = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True).read().decode()
        cut = tmp_path / "cut.zst"
        cut.write_bytes(raw[:-7])  # a file cut inside its last frame
        (cut_stream,) = report(cut)["streams"]
        assert cut_stream["columns"] == text.count("<end record>") - 1
    else:
        text = raw.decode()
    complete = text.count("<end record>")
    assert complete >= 5
    (stream,) = report(rec)["streams"]
    assert stream["columns"] == complete
    # interval i (1-based) holds 3 events at 128µs and i*i-(i-1)**2 at 256µs
    assert stream["total"]["events"] == 3 * complete + complete**2


def zstd_frames_text(raw: bytes) -> str:
    """The text of a zstd file, each of whose frames must be complete (ended, checksum and all), as `zstd -t` asks."""
    import zstandard

    out = []
    while raw:
        frame = zstandard.ZstdDecompressor().decompressobj()
        out.append(frame.decompress(raw))
        assert frame.eof, "a zstd frame is unfinished (zstd -t: premature end)"
        raw = frame.unused_data
    return b"".join(out).decode()


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_finishes_the_recording(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    """Ctrl-C, SIGTERM and SIGHUP end the run as a normal end does: the recording's last zstd frame is finished
    (`zstd -t` passes), though the thread that writes it is blocked reading a pipe that stays open."""
    rec = tmp_path / "live.zst"
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER], stdout=subprocess.PIPE)
    viewer = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--screen_delay=0", "--record",
                               str(rec)], stdin=producer.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not rec.exists() or rec.stat().st_size < 3000):
            time.sleep(0.05)
        viewer.send_signal(sig)
        assert viewer.wait(30) == code, viewer.stderr.read() if viewer.stderr else ""
    finally:
        for proc in (viewer, producer):
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
    complete = zstd_frames_text(rec.read_bytes()).count("<end record>")
    assert complete >= 5
    (stream,) = report(rec)["streams"]
    assert stream["columns"] == complete and stream["total"]["events"] == 3 * complete + complete**2


@pytest.mark.slow
def test_real_pylatencymap_reads_a_compat_recording(tmp_path: Path, example_data: Path) -> None:
    target = need_pylatencymap()
    rec = tmp_path / "compat.txt"
    systemtap = example_data.parent / "test_SystemTap_data.txt"
    for src in (example_data, systemtap):
        rec.unlink(missing_ok=True)
        assert cli("--plain", "--once", "--compat", "--record", str(rec), str(src)).returncode == 0
        plm = subprocess.run([sys.executable, "-m", "LatencyMap", "--screen_delay=0"], stdin=rec.open(),
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path)
        assert plm.returncode == 0, plm.stderr[-500:]
        assert "ERROR" not in plm.stderr
        columns = report(src)["streams"][0]["columns"]
        assert f"Sample num: {columns + 1}." in plm.stdout  # PyLatencyMap counts the baseline as a sample
    assert report(rec)["streams"][0]["total"]["events"] == report(systemtap)["streams"][0]["total"]["events"]


def test_header_never_holds_credentials() -> None:
    opts = safe_options({"password": "hunter2", "dsn": "scott/tiger@db:1521/orcl", "url": "http://u:pw@h:4040",
                         "api_token": "x", "event": ("a", "b"), "interval": 3})
    text = json.dumps(opts)
    assert "hunter2" not in text and "tiger" not in text and "pw@" not in text and "api_token" not in text
    assert opts["event"] == ["a", "b"] and opts["interval"] == 3


def intervals(n: int) -> list[Interval]:
    return [Interval(S, 10.0 + 2 * i, 12.0 + 2 * i, np.ones(64, dtype=np.int64)) for i in range(n)]


def test_window_by_seconds_from_start() -> None:
    got = [iv.start for iv in windowed(iter(intervals(10)), 4.0, 9.0)]
    assert got == [14.0, 16.0, 18.0]


def test_replay_command_with_max_and_window(tmp_path: Path, example_data: Path) -> None:
    rec = tmp_path / "r.txt"
    assert cli("--plain", "--once", "--record", str(rec), str(example_data)).returncode == 0
    r = cli("replay", "--max", "--plain", "--once", "--start", "30", "--end", "60", str(rec))
    assert r.returncode == 0, r.stderr
    # The fixture's record times (read here): interval i is [t_i, t_i+1); the window keeps those overlapping
    # [t_0 + 30 s, t_0 + 60 s], t_0 the first interval's start.
    stamps = [int(t) / 1e6 for t in re.findall(r"timestamp,\s*microsec,\s*(\d+)", example_data.read_text())]
    t0 = stamps[0]
    kept = [(a, b) for a, b in itertools.pairwise(stamps) if b > t0 + 30 and a < t0 + 60]
    assert kept[0][0] < t0 + 30 < kept[0][1]  # the first kept interval straddles the window's start
    assert f"Columns: {len(kept)} " in r.stdout


@pytest.mark.parametrize("compat", [False, True])
def test_emit_writes_the_stream_to_stdout_as_protocol_records(example_data: Path, compat: bool) -> None:
    args = ["--emit", *(["--compat"] if compat else []), str(example_data)]
    emitted = cli(*args)
    assert emitted.returncode == 0, emitted.stderr
    assert "\x1b" not in emitted.stdout and emitted.stdout.count("<end record>") >= 71
    again = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "-"],
                           input=emitted.stdout, capture_output=True, text=True, timeout=60)
    assert_same_report(report(example_data), json.loads(again.stdout))


@pytest.mark.parametrize("name", ["example_latency_data.txt", "test_SystemTap_data.txt"])
def test_compat_baseline_record_keeps_the_first_records_own_date(example_data: Path, name: str) -> None:
    """The baseline record `--compat` writes is the input's first record: its time and its date text, not the
    second record's date (read in bulk, and line by line for the SystemTap blocks)."""
    src = example_data.parent / name
    emitted = cli("--emit", "--compat", str(src))
    assert emitted.returncode == 0, emitted.stderr
    stamp = re.compile(r"^timestamp,\s*microsec,\s*(\d+),\s*(.*?)\s*$", re.MULTILINE | re.IGNORECASE)
    given, written = stamp.findall(src.read_text()), stamp.findall(emitted.stdout)
    assert written[:3] == given[:3]


@pytest.mark.slow
def test_real_pylatencymap_dates_its_frames_alike_from_a_compat_emit(tmp_path: Path, example_data: Path) -> None:
    """PyLatencyMap shows the first record's date on its first frame: the same dates from the input and from
    `--emit --compat`."""
    target = need_pylatencymap()
    compat = tmp_path / "compat.txt"
    compat.write_text(cli("--emit", "--compat", str(example_data)).stdout)

    def dates(path: Path) -> list[str]:
        plm = subprocess.run([sys.executable, "-m", "LatencyMap", "--screen_delay=0"], stdin=path.open(),
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path)
        assert plm.returncode == 0, plm.stderr[-500:]
        return re.findall(r"Date: (.*)", plm.stdout)

    got, want = dates(compat), dates(example_data)
    assert len(want) == 72 and got == want


def test_compat_says_once_when_a_second_stream_would_mix_into_the_first(tmp_path: Path) -> None:
    def interval(label: str, t: float) -> Interval:
        counts = np.zeros(64, dtype=np.int64)
        counts[5] = 3
        return Interval(StreamId(label, "bpf", "microsec"), t, t + 1.0, counts)

    flow = [interval("sda", 1.0), interval("sda", 2.0), interval("sdb", 2.0), interval("sdc", 2.0)]
    items = list(recorded(iter(flow), Recorder(str(tmp_path / "c.txt"), compat=True)))
    said = [i.message for i in items if isinstance(i, Notice)]
    assert said == ["--compat: PyLatencyMap 1.3 reads every record as one stream: 'sdb' is mixed into 'sda' there "
                    "(give it a single stream's records)"]
    assert [i for i in items if isinstance(i, Interval)] == flow
    alone = list(recorded(iter(flow), Recorder(str(tmp_path / "all.txt"))))  # our own recordings keep streams apart
    assert not [i for i in alone if isinstance(i, Notice)]


def test_compat_notice_said_once_with_two_recorders(tmp_path: Path) -> None:
    """`--record X --emit --compat`: the recording and the emitted records each see the mix; one notice."""
    def interval(label: str, t: float) -> Interval:
        return Interval(StreamId(label, "bpf", "microsec"), t, t + 1.0, np.ones(64, dtype=np.int64))

    flow = [interval("sda", 1.0), interval("sdb", 1.0), interval("sda", 2.0)]
    inner = recorded(iter(flow), Recorder(str(tmp_path / "rec.txt"), compat=True))
    items = list(recorded(inner, Recorder(str(tmp_path / "emit.txt"), compat=True)))
    assert sum(isinstance(i, Notice) for i in items) == 1


def test_report_of_a_recording_gives_the_live_reports_numbers_with_the_values_seen(tmp_path: Path) -> None:
    """Spark's per-slot extremes travel in the recording (`extremes` lines): the report of the recording gives the
    live report's streams exactly, percentiles bounded by the values seen included."""
    (log,) = [p for p in (Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain").iterdir()
              if not p.name.startswith(".")]
    rec = tmp_path / "spark.txt"
    r = cli("spark", str(log), "--per-stage", "--plain", "--once", "--record", str(rec))
    assert r.returncode == 0, r.stderr
    assert "\nextremes, " in rec.read_text()
    live = cli("report", "--format", "json", "spark", str(log), "--per-stage")
    assert live.returncode == 0, live.stderr
    a, b = json.loads(live.stdout), report(rec)
    assert len(a["streams"]) == len(b["streams"]) == 5
    for x, y in zip(a["streams"], b["streams"], strict=True):  # rates: times are written in whole microseconds
        assert {k: v for k, v in x.items() if k not in ("frequency", "intensity")} \
            == {k: v for k, v in y.items() if k not in ("frequency", "intensity")}
    assert all("max_s" in bucket for s in b["streams"] for bucket in s["buckets"] if "min_s" in bucket)


@pytest.mark.parametrize("compat", [False, True])
def test_emit_into_a_reader_that_goes_away_ends_quietly(tmp_path: Path, compat: bool) -> None:
    """`--emit | head`: `latencymap: -: recording stopped: Broken pipe; the 1 records written before are intact`,
    exit 1, though no recording was asked for. A reader of stdout going away ends `--emit` as it ends the views:
    exit 0, nothing said."""
    from latencymap.protocol import format_record

    stream = StreamId("io", "bpf", "microsec")
    big = tmp_path / "big.txt"  # more than a pipe holds: the writes after the reader left fail
    big.write_text("".join(format_record(stream, 1_700_000_000.0 + k, np.full(20, 10 * k, dtype=np.int64))
                           for k in range(1, 3000)))
    args = [sys.executable, "-m", "latencymap", "--emit", *(["--compat"] if compat else []), str(big)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = [proc.stdout.readline() for _ in range(5)]  # as `head -5` does, then it goes
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(60) == 0, err
    assert first[0].startswith("# latencymap-recording") and err == ""


@pytest.mark.parametrize("bad", ["missing", "unknown format", "no record readable"])
def test_a_run_that_fails_before_any_record_leaves_no_recording(tmp_path: Path, example_data: Path,
                                                                 bad: str) -> None:
    """It left a header-only file, and the corrected rerun was refused ("exists; use --force")."""
    rec, data = tmp_path / "rec.zst", tmp_path / "in.txt"
    if bad == "unknown format":
        data.write_text("127.0.0.1 localhost\n::1 localhost\n")
    elif bad == "no record readable":
        data.write_text("<begin record>\nlabel, x\n1, 2\nbad line\n<end record>\n")
    r = cli("--plain", "--once", "--record", str(rec), str(data))
    assert r.returncode in (1, 2) and r.stderr
    assert not rec.exists()
    r = cli("--plain", "--once", "--record", str(rec), str(example_data))  # the corrected rerun, as typed
    assert r.returncode == 0, r.stderr
    assert report(rec)["streams"][0]["columns"] == 71


EMIT_COMMANDS = (["--emit"], ["view", "--emit"], ["replay", "--emit", "--max"], ["spark", "--emit"])


@pytest.mark.parametrize(("command", "bad"), [
    *((c, bad) for c in EMIT_COMMANDS for bad in ("missing", "unknown format")),
    *((c, "no record readable") for c in EMIT_COMMANDS[:3]),  # a Spark event log has no record to skip
])
def test_emit_that_fails_before_any_record_writes_nothing(tmp_path: Path, command: list[str], bad: str) -> None:
    """`latencymap view --emit MISSING | latencymap report`: the header went to stdout before the input failed, and
    the reader got a stream of only that header. Exit code and message are those of the same run without `--emit`."""
    data = tmp_path / "in.txt"
    if bad == "unknown format":
        data.write_text("127.0.0.1 localhost\n::1 localhost\n")
    elif bad == "no record readable":
        data.write_text("<begin record>\nlabel, x\n1, 2\nbad line\n<end record>\n")
    r = cli(*command, str(data))
    shown = cli(*[a for a in command if a != "--emit"], "--plain", "--once", str(data))
    assert r.returncode == (1 if bad == "no record readable" else 2) and r.stderr, r.stderr
    assert r.stdout == ""
    assert (shown.returncode, shown.stderr) == (r.returncode, r.stderr)


def test_emit_piped_into_report_gives_it_no_stream_when_the_input_fails(tmp_path: Path) -> None:
    """A real pipeline: the report reads an empty input (no stream of a header alone) and the exit codes are each
    command's own."""
    missing = tmp_path / "missing.txt"
    r = subprocess.run(["/bin/bash", "-c", '"$0" -m latencymap view --emit "$1" | "$0" -m latencymap report '
                        '--format json; echo "${PIPESTATUS[*]}" >&2', sys.executable, str(missing)],
                       capture_output=True, text=True, timeout=120)
    assert r.stderr == f"latencymap: {missing}: No such file or directory\n2 0\n"
    assert json.loads(r.stdout)["errors"]["messages"] == ["<stdin>: empty input, nothing to read"]


def test_emit_of_a_run_that_ends_with_no_record_still_writes_its_header_and_notes(tmp_path: Path) -> None:
    """Held back until a record or the flow's end: an empty input is no failure, and its note goes down the pipe."""
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = cli("view", "--emit", str(empty))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("# latencymap-recording {")
    note = json.loads(lines[1].removeprefix("# latencymap-note "))
    assert note["message"] == f"{empty}: empty input, nothing to read"


def test_a_run_that_fails_after_records_keeps_them(tmp_path: Path, example_data: Path) -> None:
    rec = tmp_path / "rec.txt"
    good = example_data.read_text()
    r = cli("--plain", "--once", "--strict", "--record", str(rec), "-",
            stdin=good + "<begin record>\n1, x\n<end record>\n")  # a bad record after 72 good ones
    assert r.returncode == 2, r.stderr
    assert report(rec)["streams"][0]["columns"] == 71


@pytest.mark.parametrize("name", ["keep.txt", "keep.zst"])
def test_force_over_a_recording_with_a_run_that_records_nothing_leaves_it_as_it_was(tmp_path: Path,
                                                                                    example_data: Path,
                                                                                    name: str) -> None:
    """`--record EXISTING --force` with a missing input deleted the user's recording (before: truncated it to a
    header). It is replaced only when the first record is written: a run that records none leaves it as it was."""
    rec = tmp_path / name
    r = cli("--plain", "--once", "--record", str(rec), str(example_data))
    assert r.returncode == 0, r.stderr
    before = rec.read_bytes()
    r = cli("--plain", "--once", "--record", str(rec), "--force", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and "No such file or directory" in r.stderr
    assert rec.read_bytes() == before
    recorder = Recorder(str(rec), force=True)  # a run that ends without a record, its notes and end included
    recorder.note(Notice("a note of a run that read nothing", skipped=0))
    recorder.close()
    assert rec.read_bytes() == before
    short = tmp_path / "short.txt"
    short.write_text("<end record>\n".join(example_data.read_text().split("<end record>\n", 4)[:4]) + "<end record>\n")
    r = cli("--plain", "--once", "--record", str(rec), "--force", str(short))  # a shorter recording over it
    assert r.returncode == 0, r.stderr
    assert report(rec)["streams"][0]["columns"] == 3 and len(rec.read_bytes()) < len(before)


def test_force_over_a_file_a_failed_run_created_still_removes_it(tmp_path: Path) -> None:
    rec = tmp_path / "new.zst"
    r = cli("--plain", "--once", "--record", str(rec), "--force", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and not rec.exists()


def full_device(tmp_path: Path) -> Path:
    """A device where every write fails with ENOSPC (Linux's /dev/full, made here when the container's is not)."""
    full = Path("/dev/full")
    if full.is_char_device():
        return full
    made = tmp_path / "full"
    try:
        os.mknod(made, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("no /dev/full, and making one needs root (CAP_MKNOD)")
    return made


def test_emit_to_a_full_disk_says_nothing_of_records_when_none_were_written(tmp_path: Path,
                                                                           example_data: Path) -> None:
    """It said "the 0 records written before are intact"."""
    with full_device(tmp_path).open("w") as out:
        r = subprocess.run([sys.executable, "-m", "latencymap", "--emit", "--datasource", "oracle", str(example_data)],
                           stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr == "latencymap: -: recording stopped: No space left on device\n", r.stderr
