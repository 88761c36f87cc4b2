"""BPF source without the kernel: bpftrace JSON parsing, precondition messages, specs, interval diffing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from latencymap.core.model import Interval, Notice
from latencymap.sources.bpf import bcc_backend, preconditions, source
from latencymap.sources.bpf.bpftrace_backend import parse_stream, reading_from, rwbs_op, script
from latencymap.sources.bpf.btf import EVENTS, RequestLayout
from latencymap.sources.bpf.collect import Reading, intervals
from latencymap.sources.bpf.spec import BpfError, BpfUnavailable, TraceSpec
from latencymap.sources.bpftrace_json import hist_counts, keyed, parse_line

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "bpftrace"


# --- bpftrace JSON ----------------------------------------------------------------------------

def test_hist_row_boundaries_as_bpftrace_prints_them() -> None:
    rows = [{"min": 0, "max": 0, "count": 1}, {"min": 1, "max": 1, "count": 2}, {"min": 2, "max": 3, "count": 3},
            {"min": 8, "max": 15, "count": 4}, {"min": 1 << 40, "max": (1 << 41) - 1, "count": 5},
            {"max": -1, "count": 6}]
    read = hist_counts(rows)
    assert [int(read.counts[s]) for s in (0, 1, 2, 4, 41)] == [1, 2, 3, 4, 5]
    assert read.negative == 6 and not read.bad
    lhist = hist_counts([{"min": 10, "max": 19, "count": 1}, {"min": 8, "max": 15, "count": 2}])
    assert int(lhist.counts.sum()) == 2 and len(lhist.bad) == 1 and "lhist" in lhist.bad[0]


@pytest.mark.parametrize("name", ["block_usecs_interval.json", "syscall_nsecs_cumulative.json"])
def test_fixture_hist_totals(name: str) -> None:
    for line in (FIXTURES / name).read_text().splitlines():
        event = parse_line(line)
        if event is None or event.kind != "hist":
            continue
        raw = json.loads(line)["data"][event.name]
        for key, rows in keyed(event.data).items():
            expected = sum(r["count"] for r in (raw[key] if key else raw))
            negative_expected = sum(r["count"] for r in (raw[key] if key else raw) if "min" not in r)
            read = hist_counts(rows)
            assert int(read.counts.sum()) + read.negative == expected
            assert read.negative == negative_expected and not read.bad


def test_fixture_negative_bucket_is_seen() -> None:
    negatives = 0
    for line in (FIXTURES / "block_usecs_interval.json").read_text().splitlines():
        event = parse_line(line)
        if event is not None and event.name == "@skew_from_100us":
            negatives += hist_counts(event.data).negative
    assert negatives > 0


def test_parse_line_kinds() -> None:
    assert parse_line("   ") is None
    assert parse_line('{"type": "attached_probes", "data": {"probes": 3}}').kind == "attached_probes"
    ev = parse_line('{"type": "map", "data": {"@lm_sum": {"0,0,5": 40}}}')
    assert (ev.kind, ev.name, ev.data) == ("map", "@lm_sum", {"0,0,5": 40})
    with pytest.raises(ValueError, match="not bpftrace JSON"):
        parse_line("Attaching 3 probes...")


def test_parse_stream_builds_cumulative_readings() -> None:
    lines = [
        '{"type": "attached_probes", "data": {"probes": 4}}',
        '{"type": "printf", "data": "lm_ready\\n"}',
        '{"type": "map", "data": {"@lm_cnt": {"0,0,3": 3, "0,0,5": 1, "1,0,0": 2, "0,0,33": 1}}}',
        '{"type": "map", "data": {"@lm_sum": {"0,0,3": 15, "0,0,5": 20, "1,0,0": 0, "0,0,33": 5000000000}}}',
        '{"type": "printf", "data": "lm_tick\\n"}',
        "",
        '{"type": "printf", "data": "lm_tick\\n"}',
    ]
    events = list(parse_stream(iter(lines)))
    assert [kind for kind, _ in events] == ["ready", "tick", "tick"]
    first = events[1][1]
    assert isinstance(first, Reading)
    assert first.counts[(0, 0)][3] == 3 and first.counts[(0, 0)][5] == 1
    assert first.sums_ns[(0, 0)][3] == 15 and first.sums_ns[(0, 0)][5] == 20
    assert first.counts[(0, 0)][33] == 1 and first.sums_ns[(0, 0)][33] == 5_000_000_000  # 5 s: [2^32, 2^33)
    assert first.counts[(1, 0)][0] == 2
    assert events[2][1].counts == {}


def test_a_reading_is_dated_when_its_probe_fired_not_when_its_line_is_read() -> None:
    """Ticks printed a second apart and read back to back (the reader was busy) keep their second apart: the marker
    carries the kernel's monotonic time of the probe (the `nsecs` of `lm_tick NSECS`), read as a Unix time."""
    fired = time.monotonic_ns() - 2_000_000_000
    lines = ['{"type": "printf", "data": "lm_ready\\n"}',
             f'{{"type": "printf", "data": "lm_tick {fired}\\n"}}',
             f'{{"type": "printf", "data": "lm_tick {fired + 1_000_000_000}\\n"}}']
    before = time.time()
    _, (_, first), (_, second) = list(parse_stream(iter(lines)))
    assert first is not None and second is not None
    assert second.timestamp - first.timestamp == pytest.approx(1.0, abs=1e-6)
    assert first.timestamp == pytest.approx(before - 2.0, abs=0.05)
    assert 'printf("lm_tick %lld\\n", nsecs)' in script(TraceSpec.from_options({"mode": "block"}))


def test_the_script_counts_and_sums_by_its_own_slot() -> None:
    """Counts and times of an event land in one slot, computed in the script for 64-bit values (bpftrace 0.17's
    hist() counts every value of 2^31 or more in its [2G, 4G) row)."""
    for spec in (TraceSpec.from_options({"mode": "syscall", "syscalls": "read"}),
                 TraceSpec.from_options({"mode": "block"})):
        text = script(spec)
        assert "@lm_cnt[$g, $op, $s] = count();" in text and "@lm_sum[$g, $op, $s] = sum($d);" in text
        assert "hist(" not in text and "print(@lm_cnt); print(@lm_sum);" in text


def test_split_rw_keys() -> None:
    counts = {"0,WS,4": 2, "0,FWS,4": 1, "0,R,5": 4, "0,FF,2": 1}
    sums = {"0,WS,4": 20, "0,FWS,4": 9, "0,R,5": 80, "0,FF,2": 2}
    reading = reading_from(counts, sums, 1.0, split_rw=True)
    assert reading.counts[(0, 2)][4] == 3 and reading.sums_ns[(0, 2)][4] == 29
    assert reading.counts[(0, 1)][5] == 4
    assert reading.counts[(0, 3)][2] == 1
    assert [rwbs_op(x) for x in ("R", "RA", "W", "FWS", "D", "N", "FF")] == [1, 1, 2, 2, 3, 3, 3]


# --- preconditions ----------------------------------------------------------------------------

def test_privileges() -> None:
    assert preconditions.privilege_problem(caps=1 << preconditions.CAP_SYS_ADMIN, euid=1000) is None
    both = (1 << preconditions.CAP_BPF) | (1 << preconditions.CAP_PERFMON)
    assert preconditions.privilege_problem(caps=both, euid=1000) is None
    msg = preconditions.privilege_problem(caps=1 << preconditions.CAP_BPF, euid=1000)
    assert msg is not None and "(not root; has CAP_BPF but not CAP_PERFMON, nor CAP_SYS_ADMIN)" in msg and "sudo" in msg
    msg = preconditions.privilege_problem(caps=1 << preconditions.CAP_PERFMON, euid=0)
    assert msg is not None and "(root; has CAP_PERFMON but not CAP_BPF, nor CAP_SYS_ADMIN)" in msg
    assert "(root; has none of CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON)" in (
        preconditions.privilege_problem(caps=0, euid=0) or "")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="dropping capabilities from a child needs root and setpriv (util-linux)")
@pytest.mark.parametrize(("keep", "lacking"), [("+bpf", "has CAP_BPF but not CAP_PERFMON"),
                                               ("+perfmon", "has CAP_PERFMON but not CAP_BPF"),
                                               ("+bpf,+perfmon", None)])
def test_a_child_with_dropped_capabilities_is_told_which_it_lacks(keep: str, lacking: str | None) -> None:
    """Real capabilities: root limited by setpriv to CAP_BPF alone was told it lacked CAP_SYS_ADMIN/CAP_BPF."""
    out = subprocess.run(["setpriv", f"--bounding-set=-all,{keep}", "--inh-caps=-all", sys.executable, "-c",
                          "from latencymap.sources.bpf import preconditions; print(preconditions.privilege_problem())"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    if lacking is None:
        assert out.stdout.strip() == "None"
    else:
        assert f"(root; {lacking}, nor CAP_SYS_ADMIN)" in out.stdout


def test_tracefs_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preconditions, "tracefs_root", lambda: None)
    assert "mount -t tracefs tracefs /sys/kernel/tracing" in (preconditions.tracefs_problem() or "")
    assert preconditions.tracefs_problem("/somewhere") is None


def test_bcc_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = preconditions.bcc_problem(find_spec=lambda _: None)
    assert missing is not None and "python3-bpfcc" in missing and "never `pip install bcc`" in missing
    fake = tmp_path / "bcc" / "__init__.py"
    fake.parent.mkdir()
    fake.write_text("")
    wrong = preconditions.bcc_problem(find_spec=lambda _: SimpleNamespace(origin=str(fake)))
    assert wrong is not None and "pip uninstall bcc" in wrong
    (fake.parent / "table.py").write_text("")
    real = SimpleNamespace(origin=str(fake))
    partial = preconditions.bcc_problem(find_spec=lambda _: real, env={"BCC_KERNEL_SOURCE": str(tmp_path)})
    assert partial is not None and f"BCC_KERNEL_SOURCE={tmp_path}" in partial and "kconfig.h" in partial
    monkeypatch.setattr(preconditions, "kernel_headers_dir", lambda env=None: None)
    monkeypatch.setattr(preconditions, "KHEADERS_BUILTIN", str(tmp_path / "none.tar.xz"))
    headers = preconditions.bcc_problem(find_spec=lambda _: real, env={})
    assert headers is not None and "kernel headers" in headers and "BCC_KERNEL_SOURCE" in headers
    (tmp_path / "include" / "linux").mkdir(parents=True)
    (tmp_path / "include" / "linux" / "kconfig.h").write_text("")
    (tmp_path / "include" / "generated").mkdir()
    assert preconditions.headers_complete(str(tmp_path))


def test_bpftrace_message() -> None:
    assert "apt-get install bpftrace" in (preconditions.bpftrace_problem(which=lambda _: None) or "")
    assert preconditions.bpftrace_problem(which=lambda _: "/bin/bpftrace") is None


def test_one_message_when_no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preconditions, "system_problem", lambda: None)
    monkeypatch.setattr(source, "backend_problems", lambda: {"bcc": "no bcc", "bpftrace": "no bpftrace"})
    msg = source.BpfSource.unavailable()
    assert msg is not None and "bcc: no bcc" in msg and "bpftrace: no bpftrace" in msg and "in this order" in msg
    with pytest.raises(BpfUnavailable, match="no BPF backend works here"):
        list(source.BpfSource(mode="syscall", syscalls="read").items())
    monkeypatch.setattr(preconditions, "system_problem", lambda: "not root")
    assert source.BpfSource.unavailable() == "not root"


# --- specs and programs -----------------------------------------------------------------------

def test_spec_validation() -> None:
    with pytest.raises(BpfError, match="either --pid or --comm"):
        TraceSpec.from_options({"mode": "syscall", "syscalls": "read", "pid": 1, "comm": "x"})
    with pytest.raises(BpfError, match="`bpf syscall` only"):
        TraceSpec.from_options({"mode": "block", "pid": 1})
    with pytest.raises(BpfError, match="`bpf block` only"):
        TraceSpec.from_options({"mode": "syscall", "syscalls": "read", "per_disk": True})
    with pytest.raises(BpfError, match="unknown disk 'nosuchdisk0'"):
        TraceSpec.from_options({"mode": "block", "disk": "nosuchdisk0"})
    with pytest.raises(BpfError, match="not a syscall name"):
        TraceSpec.from_options({"mode": "syscall", "syscalls": "read;rm"})


def test_block_refuses_syscalls_and_a_short_interval() -> None:
    with pytest.raises(BpfError, match="--syscalls applies to `bpf syscall` only"):
        TraceSpec.from_options({"mode": "block", "syscalls": "read"})
    with pytest.raises(BpfError, match=r"--interval 0.0001: the shortest column is 0.01 s"):
        TraceSpec.from_options({"mode": "block", "interval": 0.0001})
    assert TraceSpec.from_options({"mode": "block", "interval": 0.01}).interval == 0.01


def test_pid_must_be_a_live_process_not_a_thread() -> None:
    import threading

    with pytest.raises(BpfError, match="a process id is a positive number"):
        TraceSpec.from_options({"mode": "syscall", "pid": -5})
    with pytest.raises(BpfError, match="--pid 999999999: no such process"):
        TraceSpec.from_options({"mode": "syscall", "pid": 999999999})
    ready, release, tid = threading.Event(), threading.Event(), []

    def thread() -> None:
        tid.append(threading.get_native_id())
        ready.set()
        release.wait(10)

    worker = threading.Thread(target=thread)
    worker.start()
    try:
        ready.wait(10)
        with pytest.raises(BpfError, match=f"--pid {tid[0]} is a thread of process {os.getpid()}"):
            TraceSpec.from_options({"mode": "syscall", "pid": tid[0]})
    finally:
        release.set()
        worker.join()
    assert TraceSpec.from_options({"mode": "syscall", "pid": os.getpid()}).pid == os.getpid()


def test_a_skipped_backend_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preconditions, "system_problem", lambda: None)
    monkeypatch.setattr(source, "backend_problems", lambda: {"bcc": "BCC_KERNEL_SOURCE=/nonexistent is not a "
                                                             "complete kernel headers tree", "bpftrace": None})
    monkeypatch.setattr(source, "start_backend", lambda name, spec: (iter([]), 0.0, lambda: None))
    said = [i.message for i in source.BpfSource(mode="block").items() if isinstance(i, Notice)]
    assert said[0] == ("bpf: bcc: BCC_KERNEL_SOURCE=/nonexistent is not a complete kernel headers tree; "
                       "trying bpftrace")
    assert "tracing block latency with bpftrace" in said[1]


def test_comm_is_compared_as_unsigned_bytes() -> None:
    text = bcc_backend.comm_filter("scé")  # é is c3 a9 in UTF-8: bytes >= 128
    assert "unsigned char c[16]" in text and "c[2] != 195" in text and "c[3] != 169" in text


#: A request layout as the kernel's BTF gives it (here without reading it).
LAYOUT = RequestLayout(q=0, cmd_flags=24, disk=104, major=0, first_minor=4, op_read=0, op_write=1,
                       args=tuple((event, 0) for event in EVENTS))


def test_labels_and_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bcc_backend, "request_layout", lambda: LAYOUT)
    spec = TraceSpec.from_options({"mode": "syscall", "syscalls": "read,pread64", "pid": 42, "interval": 0.5})
    assert spec.stream(1, 0).label == "syscall pread64 pid 42"
    assert spec.stream(1, 0).unit == "nanosec" and spec.stream(1, 0).datasource == "bpf"
    text, cflags = bcc_backend.program(spec)
    assert "sys_exit_pread64) { return lm_exit(1); }" in text and "!= 42" in text and cflags[0] == "-w"
    bt = script(spec)
    assert "/pid == 42/" in bt and "interval:ms:500" in bt and "@lm_call[tid] == 2" in bt
    block = TraceSpec.from_options({"mode": "block", "split": "rw", "queued": True})
    assert [block.stream(0, op).label for op in (1, 2, 3)] == [
        "block I/O queued read", "block I/O queued write", "block I/O queued other"]
    assert "block_rq_insert" in script(block) and "-DLM_QUEUED=1" in bcc_backend.program(block)[1]
    assert "c[2] != 0" in bcc_backend.comm_filter("dd")


# --- interval diffing -------------------------------------------------------------------------

def test_intervals_are_exact_differences() -> None:
    spec = TraceSpec.from_options({"mode": "syscall", "syscalls": "read"})
    r1, r2 = Reading(10.0), Reading(11.0)
    r1.add((0, 0), 5, count=3, sum_ns=60)
    r2.add((0, 0), 5, count=7, sum_ns=130)
    r2.add((0, 0), 64, count=1, sum_ns=1 << 62)
    out = list(intervals(spec, [r1, r2], attached_at=9.0))
    assert all(isinstance(x, Interval) for x in out)
    assert [(x.start, x.end, int(x.counts.sum())) for x in out] == [(9.0, 10.0, 3), (10.0, 11.0, 5)]
    assert out[1].counts[5] == 4 and out[1].counts[63] == 1
    assert out[1].time is not None and out[1].time[5] == pytest.approx(70e-9)


def test_new_stream_counts_from_previous_reading() -> None:
    spec = TraceSpec.from_options({"mode": "block", "per_disk": True})
    r1, r2 = Reading(1.0), Reading(2.0)
    r2.add((254 << 20, 0), 14, count=9, sum_ns=9 * 10_000)
    out = [x for x in intervals(spec, [r1, r2], attached_at=0.5) if not isinstance(x, Notice)]
    assert len(out) == 1 and out[0].start == 1.0 and out[0].counts[14] == 9
    assert np.isclose(out[0].time[14], 9e-5)


@pytest.mark.parametrize(("offset", "interval", "duration", "expected"), [
    (-0.0015, 1.0, 3.0, 3),  # bpftrace's timer started 1.5 ms before it said it attached: was 4 readings
    (+0.004, 1.0, 3.0, 3),
    (-0.0015, 0.25, 2.0, 8),  # was 9
    (-0.0015, 1.0, 2.5, 3),  # a duration between readings: the first reading past it
    (+0.004, 0.01, 0.05, 5),
    (+0.13, 0.25, 2.0, 8),  # the timer started more than half an interval late (a loaded CI machine): was 7
    (-0.13, 0.25, 2.0, 8),  # or that much early: was 9
])
def test_duration_ends_on_the_reading_of_its_place_on_the_schedule(offset: float, interval: float, duration: float,
                                                                   expected: int) -> None:
    readings = (Reading(100.0 + k * interval + offset) for k in range(1, 1000))
    assert len(list(source.limited(readings, 100.0, None, duration, interval))) == expected


def test_cli_command_from_params() -> None:
    from click.testing import CliRunner

    from latencymap.cli.main import source_command

    result = CliRunner().invoke(source_command(source.BpfSource), ["--help"])
    assert result.exit_code == 0
    for option in ("{block|syscall}", "--backend", "--disk", "--queued", "--per-disk", "--split", "--syscalls",
                   "--pid", "--comm", "--interval"):
        assert option in result.output


@pytest.mark.parametrize(("mode", "own", "other"), [("block", ["--disk", "--queued", "--per-disk", "--split"],
                                                      ["--syscalls", "--pid", "--comm"]),
                                                     ("syscall", ["--syscalls", "--pid", "--comm"],
                                                      ["--disk", "--queued", "--per-disk", "--split"])])
def test_mode_help_shows_the_mode_usage_and_options(mode: str, own: list[str], other: list[str]) -> None:
    from click.testing import CliRunner

    from latencymap.cli.main import main

    result = CliRunner().invoke(main, ["bpf", mode, "--help"])
    assert result.exit_code == 0
    assert result.output.startswith(f"Usage: main bpf {mode} [OPTIONS]") or \
        result.output.startswith(f"Usage: latencymap bpf {mode} [OPTIONS]"), result.output[:80]
    assert all(o in result.output for o in [*own, "--backend", "--interval", "--plain", "--record"])
    assert not any(f"{o} " in result.output for o in other)
