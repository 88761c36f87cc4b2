"""The README's commands as a newcomer types them."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_command_draws_the_oracle_sample_as_oracle_data() -> None:
    """Its last step (the first picture a newcomer sees) read PyLatencyMap's Oracle sample as bpf: every row one
    octave too slow, and a warning to pass `--datasource oracle` as the first thing on stderr."""
    first = re.search(r"```bash\n(.*)\n", (ROOT / "README.md").read_text()).group(1)
    draw = shlex.split(first.split(" && ")[-1])
    assert draw[0] == ".venv/bin/latencymap"
    r = subprocess.run([str(ROOT / draw[0]), *draw[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "datasource: oracle" in r.stdout
    # the truth: 1,237,243 Oracle waits whose mean, at 0.75 of each bucket's upper bound, is 11.25 ms (22.5 as bpf)
    assert re.search(r"Overall: 5\.77k events/s  mean 11\.3ms ", r.stdout), r.stdout[-600:]
