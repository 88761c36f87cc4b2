"""Real PySpark: generate.py end to end, --follow on a running job, and --engine spark against the local reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from skips_support import requires_module

from latencymap.core.model import Interval
from latencymap.sources.spark.source import SparkSource, collect

pytestmark = [pytest.mark.slow, requires_module("pyspark")]

REPO = Path(__file__).resolve().parents[3]
SPARK = REPO / "fixtures" / "spark"


def signature(intervals: list[Interval]) -> list[tuple]:
    return [(iv.stream, iv.start, iv.end, iv.counts.tolist(), np.round(iv.time, 9).tolist()) for iv in intervals]


def _live_log_running(live: Path) -> bool:
    return any(p.name.endswith(".inprogress") for p in live.iterdir()) if live.exists() else True


@pytest.mark.timeout(240)
def test_generate_writes_every_layout_and_follow_sees_tasks_before_the_end(tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    cmd = [sys.executable, str(SPARK / "generate.py"), "--out", str(tmp_path), "--keep-live", "--no-rest",
           "--layouts", "plain,rolling,zstd,lz4,snappy"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        follower = SparkSource(target=str(tmp_path / "live"), follow=True, poll=0.2, interval=1.0)
        before_end = 0
        total = 0
        for item in follower.items():
            if isinstance(item, Interval) and item.counts.sum():
                total += int(item.counts.sum())
                if _live_log_running(tmp_path / "live"):
                    before_end += int(item.counts.sum())
        out, _ = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    expected = json.loads((tmp_path / "expected.json").read_text())
    assert before_end > 0, "no task seen while the application was running"
    assert total == expected["task_end_events"]
    reference = SparkSource(target=str(tmp_path / "plain"))
    ref = signature(collect(reference))
    assert sum(int(iv.counts.sum()) for iv in collect(SparkSource(target=str(tmp_path / "zstd")))) == total
    for layout in ("rolling", "zstd", "lz4", "snappy"):
        assert signature(collect(SparkSource(target=str(tmp_path / layout)))) == ref, layout
    found = {(s["stage"], s["index"]): s for s in reference.analysis()["stragglers"]}
    for s in expected["stragglers"]:
        assert (s["stage"], s["index"]) in found
    # A busy machine may add a mildly slow task; the planned stragglers are the only gross ones.
    gross = {k for k, s in found.items() if s["ratio"] and s["ratio"] > 3}
    assert gross == {(s["stage"], s["index"]) for s in expected["stragglers"]}
    text = "".join(p.read_text(errors="replace") for p in (tmp_path / "plain").iterdir() if p.is_file())
    assert str(REPO) not in text and str(Path.home()) + "/" not in text


ENGINE_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from latencymap.sources.spark.source import SparkSource, collect

    def sig(ivs):
        return [[iv.stream.label, iv.start, iv.end, iv.counts.tolist(), np.round(iv.time, 9).tolist()] for iv in ivs]

    out = {}
    for name, opts in json.loads(sys.argv[1]).items():
        local, engine = SparkSource(**opts), SparkSource(engine="spark", **opts)
        out[name] = {"local": sig(collect(local)), "engine": sig(collect(engine)),
                     "local_analysis": local.analysis(), "engine_analysis": engine.analysis()}
        for how, source in (("local", local), ("engine", engine)):  # the stream each straggler's task is counted in
            out[name][how + "_streams"] = [getattr(source.straggler_stream(s), "label", None)
                                           for s in source.analysis()["stragglers"]]
    print(json.dumps(out))
""")


@pytest.mark.timeout(240)
def test_engine_spark_gives_the_local_report(tmp_path: Path) -> None:
    cases = {
        "zstd": {"target": str(SPARK / "zstd")},
        "lz4-per-stage": {"target": str(SPARK / "lz4"), "per_stage": True, "metric": "run"},
        "plain-stage-cpu": {"target": str(SPARK / "plain"), "stages": [2, 4], "metric": "cpu", "interval": 1.0},
    }
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    res = subprocess.run([sys.executable, "-c", ENGINE_SCRIPT, json.dumps(cases)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=230)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name, r in out.items():
        assert len(r["local"]) == len(r["engine"]) > 0, name
        for a, b in zip(r["local"], r["engine"], strict=True):
            assert a[:4] == b[:4], name
            assert np.allclose(a[4], b[4], rtol=1e-12, atol=1e-12), name
        assert r["engine_analysis"] == r["local_analysis"], name
        assert r["engine_streams"] == r["local_streams"] and None not in r["local_streams"], name
        assert {label for label, *_ in r["local"]} >= set(r["local_streams"]), name
    assert out["zstd"]["local"] == out["zstd"]["engine"]
