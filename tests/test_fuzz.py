"""The atheris harness (fuzz/fuzz_inputs.py) runs a bounded number of inputs seeded from fixtures/ and finds nothing.

The run is bounded and seeded: a fixed libFuzzer seed, a fixed number of runs (with a time ceiling) and a fixed
PYTHONHASHSEED. It is not reproducible bit for bit (readers that consult the clock take time-dependent branches,
and two runs here part ways after about a thousand inputs), so a failure prints the failing input itself, as
Python bytes: write them to a file and replay it with `fuzz/fuzz_inputs.py FILE`. Longer, randomly seeded runs
are for fuzz/ by hand (README, "Fuzzing for longer"). atheris is part of the `dev` extra: when it cannot be
imported this test fails (it is not skipped).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parent.parent / "fuzz" / "fuzz_inputs.py"
FUZZ_RUNS = 50_000
FUZZ_SEED = 20261121
#: A ceiling only: 50,000 runs take about 30 s here.
FUZZ_SECONDS = 120
RSS_LIMIT_MB = 2048


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_fuzzing_every_input_path_finds_no_crash_and_stays_within_memory(tmp_path: Path) -> None:
    import atheris  # noqa: F401  (a missing dev dependency fails here)

    seeds, corpus = tmp_path / "seeds", tmp_path / "corpus"
    made = subprocess.run([sys.executable, str(HARNESS), "--seeds", str(seeds)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert len(list(seeds.iterdir())) >= 50
    corpus.mkdir()
    run = subprocess.run([sys.executable, str(HARNESS), str(corpus), str(seeds), f"-runs={FUZZ_RUNS}",
                          f"-seed={FUZZ_SEED}", f"-max_total_time={FUZZ_SECONDS}", f"-rss_limit_mb={RSS_LIMIT_MB}",
                          "-timeout=20", "-print_final_stats=1"],
                         capture_output=True, text=True, timeout=FUZZ_SECONDS + 120, cwd=tmp_path,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    log = run.stderr
    crashes = [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-"))]
    # a Python traceback goes to stdout, libFuzzer's report to stderr
    found = "\n".join(f"{name}: {(tmp_path / name).read_bytes()!r}" for name in crashes)
    assert run.returncode == 0 and not crashes, f"{found}\n{run.stdout[-4000:]}\n{log[-3000:]}"
    assert re.search(r"^Done \d+ runs in \d+ second", log, re.M), log[-3000:]
    executed = int(re.search(r"stat::number_of_executed_units:\s*(\d+)", log)[1])
    peak = int(re.search(r"stat::peak_rss_mb:\s*(\d+)", log)[1])
    assert executed >= 2000, log[-3000:]
    assert peak < RSS_LIMIT_MB
    assert any(corpus.iterdir()), "the fuzzer found no new coverage at all: is the code instrumented?"
