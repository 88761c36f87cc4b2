"""A real log whose slowest tasks are warm-up (fixtures/spark/warmup: three executors' first tasks, 15-17 s against
0.5 s): the findings about them say so, not the causes a slow task usually has, and the run's straggler that no
finding is about is named. Every figure checked is recomputed from the log's lines."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.outputs.report import duration_text

WARMUP = Path(__file__).resolve().parents[3] / "fixtures" / "spark" / "warmup"
(LOG,) = WARMUP.iterdir()
#: The causes a slow Spark task usually has, which a finding about warm-up tasks no longer guesses.
GUESSES = ("skewed partitions, a spill", "a skewed partition, a spill")
COLD = ("warm-up tasks, the first on their executors' slots, slowed by the executors' start (the JVM's JIT, Python "
        "workers starting, the first deserialisation): start-up, not the run's work")


def tasks() -> list[dict]:
    """The log's task attempts, from its TaskEnd lines."""
    out = []
    for line in LOG.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            i = e["Task Info"]
            out.append({"stage": e["Stage ID"], "index": i["Index"], "id": i["Task ID"], "executor": i["Executor ID"],
                        "launch": i["Launch Time"], "s": (i["Finish Time"] - i["Launch Time"]) / 1000})
    return out


def cold() -> list[dict]:
    """The first task each executor ran: it started the executor's Python worker (and the JVM's JIT)."""
    first: dict[str, dict] = {}
    for t in sorted(tasks(), key=lambda t: t["launch"]):
        first.setdefault(t["executor"], t)
    return list(first.values())


def report(*args: str) -> dict:
    r = CliRunner().invoke(main, ["report", "--format", "json", "spark", *args, str(WARMUP)])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def held(f: dict, all_tasks: list[dict]) -> list[dict]:
    """The tasks of a finding's latency range."""
    return [t for t in all_tasks if f["where"]["low_s"] <= t["s"] <= f["where"]["high_s"]]


def test_the_whole_run_s_tail_of_warm_up_tasks_says_so_and_names_the_straggler_no_finding_is_about() -> None:
    every, first = tasks(), cold()
    assert len(first) == 3 and min(t["s"] for t in first) > 10 * max(t["s"] for t in every
                                                                   if t["stage"] == 0 and t not in first)
    doc = report()
    assert {w["task_id"] for w in doc["source"]["warmup"] if w["warmup_reason"] == "cold"} == {t["id"] for t in first}
    (stream,) = doc["streams"]
    (tail,) = [f for f in stream["findings"] if f["kind"] == "tail"]
    slow = held(tail, every)
    assert slow and all(t in first for t in slow)  # the tail is the warm-up's
    subject = {1: "it is a warm-up task", 2: "both are"}.get(len(slow), f"all {len(slow)} are")
    assert f"; {subject} {COLD}; " in tail["why"], tail["why"]
    assert not any(guess in tail["why"] for guess in GUESSES)
    straggler = max((t for t in every if t["stage"] == 1), key=lambda t: t["s"])
    listed = [(s["stage"], s["task_id"]) for s in doc["source"]["stragglers"]]
    assert (1, straggler["id"]) in listed and straggler not in first
    assert not any(held(f, [straggler]) for f in stream["findings"] if f["where"]["low_s"] is not None)
    assert tail["why"].endswith(
        f"the stream's {len(listed)} stragglers are in no finding (too few to shape the stream; see Stragglers), the "
        f"slowest task {straggler['index']} (id {straggler['id']}) in stage 1.0 ({duration_text(straggler['s'])})")
    text = CliRunner().invoke(main, ["report", "spark", str(WARMUP)]).stdout
    assert f"{tail['what']} — {tail['why']}" in text


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_the_warm_up_stage_s_slower_band_is_its_cold_tasks(fmt: str) -> None:
    """`--per-stage`: stage 0's tasks are two populations, its three cold ones the slower: a finding said that what
    sends tasks there is to find (skewed partitions, a spill, a slow executor, a shuffle fetch)."""
    first = cold()
    doc = report("--per-stage")
    stage0 = next(s for s in doc["streams"] if " stage 0 " in s["stream"]["label"])
    (band,) = [f for f in stage0["findings"] if f["kind"] == "band"]
    assert sorted(t["id"] for t in held(band, tasks())) == sorted(t["id"] for t in first)
    assert band["why"].endswith(f"all 3 are {COLD}") and not any(guess in band["why"] for guess in GUESSES)
    page = CliRunner().invoke(main, ["report", "--format", fmt, "spark", "--per-stage", str(WARMUP)]).stdout
    assert COLD in " ".join(html.unescape(page).split())
