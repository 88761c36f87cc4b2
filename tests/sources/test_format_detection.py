from __future__ import annotations

import itertools

import pytest
from formats_support import FIXTURES, registry

from latencymap.core.errors import InputError
from latencymap.flow.inputs import SNIFF_LINES, choose_format

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
    ("bcc/funclatency_idle_T.txt", "bcc"),  # the banner and time lines only: no data, not an unknown format
    ("bcc/funclatency_idle.txt", "bcc"),
    ("bpftrace/sleeps_ramp_cleared.txt", "bpftrace"),
    ("bpftrace/sleeps_bursts_cleared.txt", "bpftrace"),
    ("bpftrace/sleeps_keyed_cumulative.txt", "bpftrace"),
    ("bpftrace/sleeps_ramp_cleared.json", "bpftrace-json"),
    ("pylatencymap/test_10046_tracefile.trc", "oracle10046"),
    ("pylatencymap/test_SystemTap_data.txt", "pylatencymap"),
    ("pylatencymap/example_latency_data.txt", "pylatencymap"),
    ("formats/dtrace_quantize.txt", "pylatencymap"),
]


def head(path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return list(itertools.islice(fh, SNIFF_LINES))


@pytest.mark.parametrize(("fixture", "expected"), CASES)
def test_auto_detection_picks_the_reader(fixture: str, expected: str) -> None:
    path = FIXTURES / fixture
    assert choose_format(registry(), head(path), str(path), None).name == expected


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
