"""Process-wide tuning: the collector off while importing, and freed memory kept by report and diff."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from skips_support import NOT_LINUX, skip_because

CHURN = """
import resource, sys
from latencymap.cli.tuning import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for mb in range(1, 25):  # growing buffers, as a report's chunks and arrays: each is over glibc's moving mmap threshold
    block = bytearray(mb << 20)
    del block
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def churn(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    return out[0], int(out[1])


def test_report_and_diff_reuse_the_memory_they_free() -> None:
    """glibc maps each growing buffer afresh and faults every page in again; once kept, freed memory is reused."""
    if sys.platform != "linux" or not os.confstr("CS_GNU_LIBC_VERSION"):
        skip_because(NOT_LINUX, "glibc", "keep_freed_memory tunes glibc's allocator; this libc has no mallopt")
    kept, faults = churn("keep")
    _, plain_faults = churn("plain")
    assert kept == "True"
    assert plain_faults > 40_000  # 300 MB allocated in all, each page faulted in: the problem the call removes
    assert faults < plain_faults / 4  # only the heap's growth to the largest buffer (24 MB) is faulted in


def test_report_and_diff_ask_for_it(example_data: Path, monkeypatch: Any) -> None:
    from click.testing import CliRunner

    import latencymap.cli.diff as diff_cli
    import latencymap.cli.report as report_cli
    from latencymap.cli.main import main

    calls: list[str] = []
    monkeypatch.setattr(report_cli, "keep_freed_memory", lambda: calls.append("report") or True)
    monkeypatch.setattr(diff_cli, "keep_freed_memory", lambda: calls.append("diff") or True)
    assert CliRunner().invoke(main, ["report", str(example_data)]).exit_code == 0
    assert CliRunner().invoke(main, ["diff", str(example_data), str(example_data)]).exit_code == 0
    assert calls == ["report", "diff"]


def test_no_collection_turns_the_collector_off_within_and_freezes_what_was_made() -> None:
    import gc

    from latencymap.cli.tuning import no_collection

    frozen = gc.get_freeze_count()
    try:
        with no_collection():
            assert not gc.isenabled()
            made = [[] for _ in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(made)
        gc.disable()  # the user's (or an outer) choice is left as it is
        with no_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
