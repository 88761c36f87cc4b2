"""The `latencymap` console script: process-wide settings, then the command line."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

from latencymap.cli.tuning import no_collection
from latencymap.core.errors import OutputError

#: latencymap does no linear algebra, yet NumPy's OpenBLAS starts a spinning thread per core when it loads:
#: about 0.1 s of CPU time on every start of a 2-core machine, more with more cores.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def main() -> None:
    """Run the CLI with OpenBLAS on one thread unless the user chose otherwise; children see the user's setting."""
    ours = _BLAS_THREADS not in os.environ
    if ours:
        os.environ[_BLAS_THREADS] = "1"
    try:
        with no_collection():
            from latencymap.cli.main import main as cli_main
    finally:
        if ours:
            os.environ.pop(_BLAS_THREADS, None)  # read once, when NumPy loaded OpenBLAS
    from latencymap.outputs.files import GuardedStdout

    sys.stdout = GuardedStdout(sys.stdout)
    try:
        cli_main()
    except OutputError as err:  # `--help` or `--version` could not be written (a command says its own in `guarded`)
        from latencymap.cli.common import EXIT_FAIL, tell

        tell(err)
        sys.exit(EXIT_FAIL)
    except SystemExit as done:
        if isinstance(done.code, int | None) and nothing_left():
            os._exit(done.code or 0)
        raise
    finally:
        gc.unfreeze()  # the interpreter's own teardown then frees what the imports made, in its usual order


def nothing_left() -> bool:
    """Whether the process may end without the interpreter's teardown, which frees every module and array one by one
    (10-20 ms after a report): only the main thread runs, no exit handler is registered, and stdout and stderr
    flush. Files are closed where they are written, never left to the teardown."""
    if threading.active_count() != 1 or getattr(atexit, "_ncallbacks", lambda: 1)() != 0:
        return False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, OutputError):  # a closed or broken pipe: the normal exit says so as it always did
        return False
    return True
