"""The console script's launcher: OpenBLAS on one thread unless the user set it, and nothing left for children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    # a thread alive until the main thread ends, however long the report takes (a timed sleep raced a slow run)
    thread = launched("threading.Thread(target=threading.main_thread().join).start()", "report", str(example_data))
    handler = launched("import atexit; atexit.register(lambda: sys.stderr.write('handler ran\\\\n'))", "report",
                       str(example_data))
    for done in (thread, handler):
        assert done.returncode == 0 and "teardown ran" in done.stderr and "== " in done.stdout
    assert "handler ran" in handler.stderr


COLLECTIONS = """
import gc, sys
passes = []
gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
sys.argv = ["latencymap", "report", "--format", "json", sys.argv[1]]
{start}
print("PASSES", len(passes), file=sys.stderr)
"""


def test_imports_run_without_collector_passes(example_data: Path) -> None:
    """Importing NumPy, click and a command makes ~50 passes of the collector over objects that live as long as the
    process; the launcher's imports make none."""
    def passes(start: str) -> int:
        done = subprocess.run([sys.executable, "-c", COLLECTIONS.format(start=start), str(example_data)],
                              capture_output=True, text=True, timeout=120)
        return int(next(line for line in done.stderr.splitlines() if line.startswith("PASSES")).split()[1])

    plain = passes("import latencymap.cli.main, latencymap.cli.report")
    launched = passes("from latencymap.cli.launch import main\natexit = __import__('atexit')\n"
                      "atexit.register(lambda: None)\ntry:\n    main()\nexcept SystemExit:\n    pass")
    assert plain > 20
    assert launched < 5  # what the report itself made: a few young passes
