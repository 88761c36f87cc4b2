"""The `latencymap` console script: process-wide settings, then the command line."""

from __future__ import annotations

import os

#: latencymap does no linear algebra, yet NumPy's OpenBLAS starts a spinning thread per core when it loads:
#: about 0.1 s of CPU time on every start of a 2-core machine, more with more cores.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def main() -> None:
    """Run the CLI with OpenBLAS on one thread unless the user chose otherwise; children see the user's setting."""
    ours = _BLAS_THREADS not in os.environ
    if ours:
        os.environ[_BLAS_THREADS] = "1"
    try:
        from latencymap.cli.main import main as cli_main
    finally:
        if ours:
            os.environ.pop(_BLAS_THREADS, None)  # read once, when NumPy loaded OpenBLAS
    cli_main()
