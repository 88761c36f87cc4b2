"""Block mode pairs each request's issue with its own completion, on real loop devices, checked against /proc/diskstats.

Pairing by (disk, sector) lost every flush (issued at sector 0, completed at sector -1) and most concurrent
requests for one sector (each issue overwrote the other's start). bcc pairs by the `struct request *` of the raw
tracepoints; bpftrace 0.17 has only the formatted tracepoints, so it pairs by (disk, sector) with a slot per
request in flight. Both are exact but for the probe runs the kernel skips (recursion misses), which a notice counts,
and completions it runs no BPF program on, which a witness counts (tests/support/bpf_support.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from bpf_support import completions_witness, diskstats, not_handed
from process_support import bpf_unavailable, loop_device, traced
from skips_support import skip_missing

from latencymap.core.model import Notice
from latencymap.sources.bpf import btf
from latencymap.sources.bpf.bcc_backend import program
from latencymap.sources.bpf.bpftrace_backend import block_script
from latencymap.sources.bpf.source import BpfSource
from latencymap.sources.bpf.spec import TraceSpec

SKIP = bpf_unavailable()
BACKENDS = ["bcc", "bpftrace"]
TIMEOUT = 90.0

def forked(setup: str, each: str) -> str:
    """A script of N processes (argv: device, N, M), each opening the device as `setup` does (`fd`, a 4 KiB `buf`)
    and running `each` M times (`k`: the process, `i`: the round), all at the same time."""
    return f"""
import mmap, os, sys
dev, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pids = []
for k in range(n):
    pid = os.fork()
    if pid == 0:
        {setup}
        buf = mmap.mmap(-1, 4096)
        for i in range(m):
            {each}
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
"""


#: N processes each read the first 4 KiB block of a device M times with O_DIRECT, at the same time.
SAME_SECTOR = forked("fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)", "os.preadv(fd, [buf], 0)")
#: N processes each write a 4 KiB block with O_DIRECT and fsync the device (a flush), M times.
FLUSHES = forked("fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)",
                 "os.pwrite(fd, buf, (k * m + i) * 4096); os.fsync(fd)")


def run_block(backend: str, disk: str, script: str,
              *args: str) -> tuple[dict[str, int], dict[str, int], str, dict[str, dict[str, int]]]:
    """Trace `disk` with --split rw while `script` runs: (events per stream, diskstats deltas, notices, what the
    completions witness saw)."""
    src = BpfSource(mode="block", disk=disk, split="rw", backend=backend, interval=0.25)
    delta: dict[str, int] = {}

    def work() -> None:
        before = diskstats(disk)
        subprocess.run([sys.executable, "-c", script, *args], check=True, timeout=TIMEOUT)
        after = diskstats(disk)
        delta.update({k: after[k] - before[k] for k in after})

    with completions_witness(disk) as since:
        counts, notes = traced(src, work, TIMEOUT)
        seen = since()
    assert src.chosen == backend
    return counts, delta, " | ".join(notes), seen


@pytest.mark.slow
@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_reads_of_one_sector_are_each_counted(backend: str) -> None:
    procs, reads = 4, 500
    with loop_device(256, direct_io=True) as device:
        disk = os.path.basename(device)
        counts, delta, notes, witnessed = run_block(backend, disk, SAME_SECTOR, device, str(procs), str(reads))
    assert delta["read"] == procs * reads
    seen = counts[f"block I/O {disk} read"]
    # exact, but for the runs the kernel skipped and said so (recursion misses) and completions it ran no BPF program
    # on (tests/support/bpf_support.py); pairing by (disk, sector) lost 73%
    missed = sum(int(m) for m in re.findall(r"the kernel skipped (\d+) run", notes)) + not_handed(witnessed, "read")
    assert procs * reads - missed <= seen <= procs * reads, (seen, missed, witnessed)
    if backend == "bpftrace":
        assert "pairs block requests by disk and sector" in notes


@pytest.mark.slow
@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
@pytest.mark.parametrize("backend", BACKENDS)
def test_flushes_are_counted_as_diskstats_counts_them(backend: str) -> None:
    procs, rounds = 2, 40
    with loop_device(256, direct_io=True) as device:
        disk = os.path.basename(device)
        counts, delta, _, _ = run_block(backend, disk, FLUSHES, device, str(procs), str(rounds))
    if delta["flush"] == 0:
        skip_missing("flush", f"{disk} issued no flush requests (no write cache?)")
    assert counts[f"block I/O {disk} other"] == delta["flush"]
    # diskstats also counts each fsync's empty pre-flush write, which reaches the disk as the flush itself
    assert counts[f"block I/O {disk} write"] == procs * rounds == delta["write"] - delta["flush"]


@pytest.mark.skipif(not os.path.exists(btf.VMLINUX), reason="no kernel BTF")
def test_request_layout_from_the_running_kernel() -> None:
    layout = btf.request_layout()
    assert layout.cmd_flags > layout.q
    assert layout.major != layout.first_minor and layout.arg("block_rq_complete") == 0
    text, flags = program(TraceSpec(mode="block", split_rw=True))
    assert "RAW_TRACEPOINT_PROBE(block_rq_issue)" in text and "-DLM_ARG_COMPLETE=0" in flags


def test_bcc_block_without_btf_names_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from latencymap.sources.bpf import bcc_backend
    from latencymap.sources.bpf.spec import BpfError

    def missing() -> btf.RequestLayout:
        raise btf.BtfError("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux: No such file or directory)")

    monkeypatch.setattr(bcc_backend, "request_layout", missing)
    with pytest.raises(BpfError, match=r"by the request itself.*No such file"):
        program(TraceSpec(mode="block"))


def test_btf_reader_on_a_tiny_blob() -> None:
    """Struct member offsets (through an anonymous union), enum values and a tracepoint's request argument."""
    blob = _tiny_btf()
    parsed = btf.Btf(blob)
    assert parsed.member_offset("request", "q") == 0
    assert parsed.member_offset("request", "cmd_flags") == 8
    assert parsed.enum_value("REQ_OP_WRITE") == 1
    assert parsed.tracepoint_arg("block_rq_complete", "request") == 0
    with pytest.raises(btf.BtfError, match="no member 'nope'"):
        parsed.member_offset("request", "nope")


def _tiny_btf() -> bytes:
    """BTF for: struct request { void *q; union { unsigned int cmd_flags; }; }; enum { REQ_OP_READ, REQ_OP_WRITE };
    typedef void (*btf_trace_block_rq_complete)(void *, struct request *);"""
    import struct as st

    names = b"\0request\0q\0cmd_flags\0int\0REQ_OP_READ\0REQ_OP_WRITE\0btf_trace_block_rq_complete\0"

    def off(name: bytes) -> int:
        return names.index(b"\0" + name + b"\0") + 1

    def info(kind: int, vlen: int = 0) -> int:
        return kind << 24 | vlen

    types = b"".join([
        st.pack("<III", 0, info(btf.PTR), 0),  # 1: void *
        st.pack("<III", off(b"int"), info(btf.INT), 4) + st.pack("<I", 32),  # 2: int
        st.pack("<III", 0, info(btf.UNION, 1), 4) + st.pack("<III", off(b"cmd_flags"), 2, 0),  # 3: union
        st.pack("<III", off(b"request"), info(btf.STRUCT, 2), 16)
        + st.pack("<III", off(b"q"), 1, 0) + st.pack("<III", 0, 3, 64),  # 4: struct request
        st.pack("<III", 0, info(btf.PTR), 4),  # 5: struct request *
        st.pack("<III", 0, info(btf.FUNC_PROTO, 2), 0) + st.pack("<II", 0, 1) + st.pack("<II", 0, 5),  # 6
        st.pack("<III", 0, info(btf.PTR), 6),  # 7: pointer to the prototype
        st.pack("<III", off(b"btf_trace_block_rq_complete"), info(btf.TYPEDEF), 7),  # 8
        st.pack("<III", 0, info(btf.ENUM, 2), 4) + st.pack("<Ii", off(b"REQ_OP_READ"), 0)
        + st.pack("<Ii", off(b"REQ_OP_WRITE"), 1),  # 9
    ])
    header = st.pack("<HBBIIIII", btf.MAGIC, 1, 0, 24, 0, len(types), len(types), len(names))
    return header + types + names


def test_bpftrace_block_script_keys_flushes_and_same_sector_slots() -> None:
    text = block_script(TraceSpec(mode="block", split_rw=True))
    assert 'strncmp(args->rwbs, "F", 1) == 0' in text and "$k = args->sector + 1" in text
    assert "@lm_start[$dev, $k, $j] = nsecs" in text and "delete(@lm_start[$dev, $k, $i])" in text


@pytest.mark.parametrize(("cpus", "count", "own"), [(1, 16, 16), (2, 16, 8), (3, 15, 5), (8, 16, 2), (64, 8, 0)])
def test_bpftrace_slots_are_a_cpus_own_on_small_machines(cpus: int, count: int, own: int) -> None:
    from latencymap.sources.bpf.bpftrace_backend import Slots

    slots = Slots.here(cpus)
    assert (slots.count, slots.per_cpu) == (count, own)
    push, pick = slots.push("$dev, $k"), slots.pick("$dev, $k")
    if own:  # a CPU writes only its own slots; a completion scans its own, then all from the top down
        assert push.count("@lm_start[$dev, $k, $j] = nsecs") == own and f"(cpu % {cpus}) * {own}" in push
        assert pick.count("$x = @lm_start") == own + count and f"$j = (uint64){count - 1};" in pick
    else:
        assert push.count("@lm_start[$dev, $k, $j] = nsecs") == count and "(cpu + 1) % 8" in push


def test_recursion_misses_are_read_from_the_programs_fdinfo(tmp_path) -> None:
    from latencymap.sources.bpf.collect import Reading, intervals, recursion_misses

    fdinfo = tmp_path / "4242" / "fdinfo"
    fdinfo.mkdir(parents=True)
    (fdinfo / "3").write_text("pos:\t0\nflags:\t02000002\n")
    (fdinfo / "5").write_text("prog_type:\t5\nrun_cnt:\t0\nrecursion_misses:\t7\n")
    (fdinfo / "6").write_text("prog_type:\t17\nrecursion_misses:\t2\n")
    assert recursion_misses(4242, proc=str(tmp_path)) == 9
    reading = Reading(1_700_000_000.0)
    reading.missed = 9
    said = [i for i in intervals(TraceSpec(mode="block"), [reading], 1_699_999_999.0) if isinstance(i, Notice)]
    assert len(said) == 1 and "the kernel skipped 9 run(s)" in said[0].message
