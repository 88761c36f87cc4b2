"""The console script's launcher: OpenBLAS on one thread unless the user set it, and nothing left for children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from skips_support import NOT_LINUX, skip_because

PROBE = """
import os, sys
sys.argv = ["latencymap", "--version"]
{start}
threads = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("Threads:"))
print("PROBE", threads, os.environ.get("OPENBLAS_NUM_THREADS", "-"))
"""
LAUNCH = """
import atexit
atexit.register(print)  # an exit handler: the launcher leaves the exit to the interpreter, and this probe runs on
from latencymap.cli.launch import main
try:
    main()
except SystemExit:
    pass
"""


def probe(start: str, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
    out = subprocess.run([sys.executable, "-c", PROBE.format(start=start)], capture_output=True, text=True,
                         env=environ, timeout=60, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("PROBE"))
    _, threads, value = line.split()
    return int(threads), value


def test_the_cli_starts_numpy_on_one_thread_and_leaves_the_environment_as_it_was() -> None:
    threads, value = probe(LAUNCH)
    assert threads == 1 and value == "-"
    plain_threads, _ = probe("import numpy")
    assert threads <= plain_threads  # OpenBLAS starts one thread per core when left alone


def test_a_users_setting_wins() -> None:
    _, value = probe(LAUNCH, OPENBLAS_NUM_THREADS="2")
    assert value == "2"


ENDING = """
import sys, threading
class Mark:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
mark = Mark()
{before}
sys.argv = ["latencymap", *sys.argv[1:]]
from latencymap.cli.launch import main
main()
"""


def launched(before: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENDING.format(before=before), *args], capture_output=True,
                          text=True, timeout=120)


def test_a_finished_command_ends_without_the_teardown_and_keeps_its_exit_code(example_data: Path,
                                                                             tmp_path: Path) -> None:
    done = launched("", "report", "--format", "json", str(example_data))
    assert done.returncode == 0 and "teardown ran" not in done.stderr
    assert json.loads(done.stdout)["streams"]  # stdout was flushed whole before the process ended
    written = launched("", "report", "--format", "json", "-o", str(tmp_path / "r.json"), str(example_data))
    assert written.returncode == 0 and (tmp_path / "r.json").read_text() == done.stdout
    missing = launched("", "report", str(tmp_path / "absent.txt"))
    assert missing.returncode == 2 and "absent.txt" in missing.stderr and "teardown ran" not in missing.stderr
    (tmp_path / "noise.txt").write_text("<begin record>\nlabel, x\n1, x\n<end record>\n")
    unreadable = launched("", "report", str(tmp_path / "noise.txt"))
    assert unreadable.returncode == 1 and "no record could be read" in unreadable.stderr


def test_the_interpreter_ends_the_process_when_a_thread_or_an_exit_handler_is_left(example_data: Path) -> None:
    thread = launched("threading.Thread(target=__import__('time').sleep, args=(0.3,)).start()", "report",
                      str(example_data))
    handler = launched("import atexit; atexit.register(lambda: sys.stderr.write('handler ran\\\\n'))", "report",
                       str(example_data))
    for done in (thread, handler):
        assert done.returncode == 0 and "teardown ran" in done.stderr and "== " in done.stdout
    assert "handler ran" in handler.stderr


CHURN = """
import resource, sys
from latencymap.cli.launch import keep_freed_memory
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
