from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from formats_support import FIXTURES, registry
from process_support import bpf_unavailable

from latencymap.core.errors import InputError
from latencymap.core.model import Interval, Notice
from latencymap.flow.inputs import SNIFF_LINES, choose_format, read_input
from latencymap.flow.pipeline import diffed
from latencymap.plugins import TextFormat

CASES = [
    ("bpftrace/block_usecs_interval.txt", "bpftrace"),
    ("bpftrace/syscall_nsecs_cumulative.txt", "bpftrace"),
    ("bpftrace/block_usecs_interval.json", "bpftrace-json"),
    ("bpftrace/syscall_nsecs_cumulative.json", "bpftrace-json"),
    ("bcc/biolatency_usecs.txt", "bcc"),
    ("bcc/biolatency_usecs_T.txt", "bcc"),
    ("bcc/biolatency_usecs_D.txt", "bcc"),
    ("bcc/biolatency_msecs.txt", "bcc"),
    ("bcc/biolatency_usecs_j.txt", "bcc"),
    ("bcc/biolatency_usecs_jD.txt", "bcc"),
    ("bcc/funclatency_T.txt", "bcc"),
    ("bcc/funclatency_steady_T.txt", "bcc"),
    ("bcc/ext4dist_5.txt", "bcc"),
    ("bcc/funclatency_idle_T.txt", "bcc"),  # the banner and time lines only: no data, not an unknown format
    ("bcc/funclatency_idle.txt", "bcc"),
    ("bpftrace/sleeps_ramp_cleared.txt", "bpftrace"),
    ("bpftrace/sleeps_bursts_cleared.txt", "bpftrace"),
    ("bpftrace/sleeps_keyed_cumulative.txt", "bpftrace"),
    ("bpftrace/sleeps_ramp_cleared.json", "bpftrace-json"),
    ("bpftrace/sleeps_records.txt", "pylatencymap"),  # a bpftrace program that prints records: `Attaching` first
    ("pylatencymap/test_10046_tracefile.trc", "oracle10046"),
    ("pylatencymap/test_SystemTap_data.txt", "pylatencymap"),
    ("pylatencymap/example_latency_data.txt", "pylatencymap"),
    ("formats/dtrace_quantize.txt", "pylatencymap"),
]


def head(path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return list(itertools.islice(fh, SNIFF_LINES))


def detected(path: Path) -> str:
    """The format reading `path` picks, deciding on its first lines as they come (as a live pipe is read)."""
    readers: list[TextFormat] = []
    read_input(str(path), registry(), readers=readers, keep_open=False)
    return readers[0].name


@pytest.mark.parametrize(("fixture", "expected"), CASES)
def test_auto_detection_picks_the_reader(fixture: str, expected: str) -> None:
    path = FIXTURES / fixture
    assert choose_format(registry(), head(path), str(path), None).name == expected
    assert detected(path) == expected


def test_every_captured_fixture_is_covered() -> None:
    captured = {str(p.relative_to(FIXTURES)) for d in ("bpftrace", "bcc") for p in (FIXTURES / d).iterdir()
                if p.suffix in (".txt", ".json")}
    assert captured <= {c for c, _ in CASES}


@pytest.mark.parametrize(("lines", "expected"), [
    (["12.5\n", "7\n"], "raw"),
    (["0.001 153\n", "0.002 88\n"], "raw"),
    (['{"type": "attached_probes", "data": {"probes": 1}}\n'], "bpftrace-json"),
    (["Attaching 2 probes...\n"], "bpftrace"),
    (["WAIT #0: nam='log file sync' ela= 512 sync scn=1 tim=1377520823035597\n"], "oracle10046"),
])
def test_small_inputs(lines: list[str], expected: str) -> None:
    assert choose_format(registry(), lines, "x", None).name == expected


def test_unknown_format_lists_the_supported_ones() -> None:
    reg = registry()
    with pytest.raises(InputError) as err:
        choose_format(reg, ["hello world\n", "nothing to see\n"], "mystery.txt", None)
    message = str(err.value)
    assert message.startswith("mystery.txt: unrecognised input format")
    for name in ("bpftrace", "bpftrace-json", "bcc", "oracle10046", "raw", "pylatencymap"):
        assert f"  {name} " in message


#: What bpftrace's own biolatency.bt prints before its map (at Ctrl-C): its banner, then a line as bcc's tools print.
BIOLATENCY_BT = "Attaching 4 probes...\nTracing block device I/O... Hit Ctrl-C to end.\n"
RECORD = "<begin record>\nlabel, x\nlatencyunit, microsec\n1, 5\n<end record>\n"


@pytest.mark.parametrize(("text", "expected"), [
    (BIOLATENCY_BT, "bpftrace"),  # stopped before any I/O: banners alone, the first decides
    (BIOLATENCY_BT + "\n@usecs: \n[256, 512)  3 |@@@@@|\n", "bpftrace"),
    ("Tracing block device I/O... Hit Ctrl-C to end.\n\n     usecs    : count   distribution\n", "bcc"),
    ("Tracing block device I/O... Hit Ctrl-C to end.\n", "bcc"),
    ("Attaching 1 probe...\nTracing sleeps... Hit Ctrl-C to end.\n12:00:01\n" + RECORD, "pylatencymap"),
])
def test_a_banner_waits_for_the_data_after_it(tmp_path: Path, text: str, expected: str) -> None:
    """A tool's banner decides the format only when no data follows it: a bpftrace program may print records."""
    path = tmp_path / "run.txt"
    path.write_text(text)
    assert detected(path) == expected
RECORDS_PROGRAM = FIXTURES / "bpftrace" / "sleeps_records.bt"


def _events_and_notes(items: list[object]) -> tuple[int, list[str]]:
    """The events of the intervals among `items`, and the messages of the notices."""
    events = sum(int(i.counts.sum()) for i in items if isinstance(i, Interval))
    return events, [i.message for i in items if isinstance(i, Notice)]


def _bpftrace_count(text: str) -> int:
    """bpftrace's own count of the events, `@n: N` as it prints its maps at exit."""
    (count,) = re.findall(r"^@n: (\d+)$", text, re.M)
    return int(count)


def test_a_captured_bpftrace_run_printing_records_is_read_as_records() -> None:
    """`Attaching 5 probes...` claimed the input for bpftrace before its first record came: the records were not
    read (No data.). Read as records, the events are bpftrace's own count of the calls it saw, and its chatter (the
    banner, the maps printed at exit) is passed over as noise between records."""
    path = FIXTURES / "bpftrace" / "sleeps_records.txt"
    events, notes = _events_and_notes(list(diffed(read_input(str(path), registry()), str(path))))
    assert events == _bpftrace_count(path.read_text()) == 401
    assert notes == []


def test_a_bpftrace_histogram_after_its_banner_still_reads_as_bpftrace_and_records_after_it_are_said(
        tmp_path: Path) -> None:
    """The first data decides: a banner then a hist() print is bpftrace, and records that follow are said."""
    printed = (FIXTURES / "bpftrace" / "block_usecs_interval.txt").read_text()
    records = (FIXTURES / "bpftrace" / "sleeps_records.txt").read_text()
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(printed + records.split("\n", 1)[1])
    assert detected(mixed) == "bpftrace"
    _, notes = _events_and_notes(list(diffed(read_input(str(mixed), registry()), str(mixed))))
    assert [n for n in notes if "4 records of another format, pylatencymap" in n]


@pytest.mark.slow
@pytest.mark.skipif(bpf_unavailable() is not None, reason=bpf_unavailable() or "")
def test_a_real_bpftrace_run_printing_records_is_read_as_records(tmp_path: Path) -> None:
    """Real bpftrace, piped: a program that prints PyLatencyMap records (as PyLatencyMap 1.3's scripts do) of a
    command's 30 sleeps of 2 ms, then a hist() map at exit. Its `Attaching` banner made it bpftrace text: the
    records were lost. Now they are read (30 events, in [2 ms, 4 ms) by bpftrace's microsecond buckets), and the
    histogram printed at exit is said, not read."""
    exe = shutil.which("bpftrace")
    assert exe is not None, "bpftrace is not installed (.ci/install-system.sh)"
    workload = tmp_path / "sleeps.py"
    workload.write_text("import time\nfor _ in range(30):\n    time.sleep(0.002)\n")
    program = tmp_path / "records.bt"
    program.write_text(RECORDS_PROGRAM.read_text()
                       + "tracepoint:syscalls:sys_exit_clock_nanosleep /pid == cpid/ { @us = hist(1000); }\n")
    with subprocess.Popen([exe, "-c", f"{sys.executable} {workload}", str(program)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as run:
        assert run.stdout is not None
        readers: list[TextFormat] = []
        items = list(diffed(read_input("-", registry(), stdin=run.stdout, readers=readers), "-"))
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err.decode()
    assert readers[0].name == "pylatencymap"
    events, notes = _events_and_notes(items)
    assert events == 30, items
    assert len(notes) == 1 and notes[0].startswith("<stdin>: from line "), items
    assert notes[0].endswith(", 1 histogram of another format, bpftrace (bpftrace hist() text output (@map: blocks of "
                             "[lo, hi) count |@@@| rows)): not read, as this input is read as pylatencymap (one format "
                             "per input: give them as an input of their own)")
