"""A real gloo DDP job on CPU (tests/analysis/ddp_child.py, four ranks) recorded by `latencymap listen --record`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).resolve().parent.parent / "analysis" / "ddp_child.py"
RANKS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ddp_recording(directory: Path, *, slow_rank: int = -1, data_rank: int = -1, timeout: float = 120.0) -> Path:
    """Run the job (SLOW_RANK and DATA_RANK as ddp_child.py says) and return the recording `listen` wrote."""
    sock, record = directory / "lm.sock", directory / "run.txt"
    listen = subprocess.Popen([sys.executable, "-m", "latencymap", "listen", str(sock), "--record", str(record),
                               "--writers", str(2 * RANKS), "--idle-timeout", "60", "--start-timeout", "60"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "WORLD_SIZE": str(RANKS),
               "LATENCYMAP_SINK": f"unix:{sock}", "SLOW_RANK": str(slow_rank), "DATA_RANK": str(data_rank),
               "PYTHONPATH": os.pathsep.join([str(CHILD.parents[2]), os.environ.get("PYTHONPATH", "")])}
        ranks = [subprocess.Popen([sys.executable, str(CHILD)], env={**env, "RANK": str(r)}, stdin=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE) for r in range(RANKS)]
        for r in ranks:
            _, err = r.communicate(timeout=timeout)
            assert r.returncode == 0, err.decode(errors="replace")[-2000:]
        _, err = listen.communicate(timeout=30)
        assert listen.returncode == 0, err.decode(errors="replace")[-2000:]
    finally:
        for p in (listen, *locals().get("ranks", [])):
            if p.poll() is None:
                p.kill()
                p.wait()
    return record
