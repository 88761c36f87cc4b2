"""`--engine spark` on logs with faults gives the default engine's report and notices, and a failed job's cause.

A non-UTF-8 byte in a task line, an lz4 log cut inside a block, a zstd log cut inside a frame, a directory of two
applications, attempts without Task Metrics under `--metric run`: the lines skipped (file and line), the notices and
the analysis are those of the local reader. A job that fails in its Python workers is told by what they raised, in
one line. Real PySpark runs here (one JVM).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from skips_support import requires_module
from spark_support import with_lost_attempts

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
APP = json.loads((SPARK / "expected.json").read_text())["app_id"]

SCRIPT = textwrap.dedent("""
    import json, sys
    from latencymap.core.model import Interval, Notice
    from latencymap.sources.spark import engine
    from latencymap.sources.spark.source import SparkSource

    def run(target, **options):
        source = SparkSource(target=target, **options)
        items = list(source.items())
        return {"notices": [i.message for i in items if isinstance(i, Notice)],
                "skipped": sum(i.skipped for i in items if isinstance(i, Notice)),
                "events": sum(int(i.counts.sum()) for i in items if isinstance(i, Interval)),
                "analysis": source.analysis()}

    def fails(item, names):
        return [bytes([0xFF]).decode("utf-8")]

    out, read_lines = {}, engine._log_lines
    engine._log_lines = fails  # the workers run this (pickled by value): a worker raises UnicodeDecodeError
    try:
        run(sys.argv[2], engine="spark")
    except Exception as err:
        out["failure"] = f"{type(err).__name__}: {err}"
    engine._log_lines = read_lines
    for target in sys.argv[2:]:
        options = {"metric": "run"} if "lost" in target else {}  # attempts without Task Metrics are left out
        out[target] = {"local": run(target, **options), "engine": run(target, engine="spark", **options)}
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh)
""")


def faulty_logs(tmp_path: Path) -> list[Path]:
    """The fixture's log with a non-UTF-8 byte in a task line; its lz4 file cut inside a block; its rolled zstd log
    cut inside the last file's last frame; a directory holding two applications."""
    lines = (SPARK / "plain" / APP).read_bytes().splitlines(keepends=True)
    at = next(k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line)
    lines[at] = lines[at].replace(b'"Host":"', b'"Host":"\xff', 1)
    bad = tmp_path / "utf8" / APP
    bad.parent.mkdir()
    bad.write_bytes(b"".join(lines))
    cut = tmp_path / "lz4" / f"{APP}.lz4"
    cut.parent.mkdir()
    cut.write_bytes((SPARK / "lz4" / f"{APP}.lz4").read_bytes()[:40_000])
    rolled = tmp_path / f"eventlog_v2_{APP}"
    shutil.copytree(SPARK / "zstd" / rolled.name, rolled)
    last = sorted(rolled.glob("events_*"))[-1]
    last.write_bytes(last.read_bytes()[:-700])
    two = tmp_path / "two"
    two.mkdir()
    shutil.copy(SPARK / "plain" / APP, two / APP)
    shutil.copy(SPARK / "lz4" / f"{APP}.lz4", two / "local-1795225699999.lz4")
    os.utime(two / APP, (1, 1))
    (tmp_path / "lost").mkdir()
    lost, _ = with_lost_attempts(tmp_path / "lost" / APP)
    return [bad, cut, rolled, two, lost]


@pytest.mark.timeout(300)
def test_engine_spark_gives_the_local_notices_and_a_failed_jobs_cause(tmp_path: Path) -> None:
    logs = faulty_logs(tmp_path)
    result = tmp_path / "result.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(result), *map(str, logs)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(result.read_text())
    bad, cut, rolled, two, lost = (out[str(p)] for p in logs)
    line = 1 + next(k for k, text in enumerate(logs[0].read_bytes().splitlines()) if b"\xff" in text)
    assert bad["local"]["skipped"] == 1
    assert f"{logs[0]} line {line}: SparkListenerTaskEnd not read (" in bad["local"]["notices"][0]
    assert any("its last lz4 block" in n for n in cut["local"]["notices"])
    assert any("its last zstd frame" in n for n in rolled["local"]["notices"])
    assert any("holds 2 applications" in n for n in two["local"]["notices"])
    ends = sum(b'"SparkListenerTaskEnd"' in line for line in logs[-1].read_bytes().splitlines())
    assert any(f"2 of {ends} task attempts logged no Task Metrics" in n for n in lost["local"]["notices"])
    for name, r in out.items():
        if name != "failure":
            assert r["engine"] == r["local"], name
    failure = out["failure"]
    assert failure.startswith("SourceError: spark: the Spark job failed: UnicodeDecodeError: 'utf-8' codec can't "
                              "decode byte 0xff in position 0: invalid start byte (Spark's log: "), failure
    assert "\n" not in failure and failure.endswith(".log)")
    assert f"(Spark's log: {tmp_path}/latencymap-spark-" in failure
