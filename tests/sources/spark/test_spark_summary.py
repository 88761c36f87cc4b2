"""Stage summaries and stragglers of the real fixture log: stage names, times as the log gives them, and tasks
still running in a log cut short. Every figure checked is recomputed here from the log's own JSON lines."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from statistics import median
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner
from spark_support import PLAIN, SPARK, current, write_log

from latencymap.cli.main import main
from latencymap.outputs.report import duration_text
from latencymap.sources.spark.parse import RunningTask, SparkTask
from latencymap.sources.spark.summary import (
    SLOW_EXECUTOR_RATIO,
    cold_tasks,
    spark_analysis,
    stage_name,
    stage_summary,
)

STRAGGLER_ID = 9  # stage 2, partition 5: sleeps 2.5 s where its siblings sleep 0.3 s
#: The last stage of a run of cause_job.py on 2 executors of one core, its TaskEnd lines as `launch:executor:ms`
#: (launch from the stage's first, in task order = partition order): partition 17 sleeps 8 s on executor 1, the
#: other tasks 0.02 s. Executor 1 ran its other tasks while executor 0 ran too; executor 0 ran the rest alone.
LATE_STAGE = (
    "0:1:161 1:0:231 143:1:207 229:0:135 334:1:212 362:0:127 487:0:132 544:1:121 618:0:135 662:1:195 749:0:172 "
    "837:1:233 917:0:236 1052:1:185 1142:0:204 1229:1:244 1339:0:141 1465:1:8116 1479:0:118 1592:0:141 1721:0:215 "
    "1934:0:103 2032:0:116 2146:0:102 2246:0:123 2365:0:112 2473:0:119 2587:0:89 2672:0:101 2760:0:100 2849:0:92 "
    "2942:0:428 3362:0:125 3486:0:51 3535:0:87 3620:0:93 3712:0:300 4011:0:86 4096:0:84 4178:0:84 4261:0:81 "
    "4341:0:73 4413:0:87 4499:0:84 4581:0:92 4667:0:86 4751:0:82 4833:0:85 4916:0:82 4996:0:83 5078:0:89 5157:0:93 "
    "5249:0:96 5343:0:88 5429:0:114 5517:0:100 5614:0:107 5720:0:108 5824:0:134 5950:0:112")


def events(lines: list[bytes]) -> list[dict]:
    return [json.loads(line) for line in lines]


def cut_in_straggler(tmp_path: Path) -> tuple[Path, list[dict]]:
    """The fixture log cut in the middle of the straggler's TaskEnd, and the events before the cut."""
    lines = PLAIN.read_bytes().splitlines()
    cut = next(k for k, line in enumerate(lines)
               if b'"SparkListenerTaskEnd"' in line and f'"Task ID":{STRAGGLER_ID},'.encode() in line)
    return write_log(tmp_path / PLAIN.name, [*lines[:cut], lines[cut][:300]], b""), events(lines[:cut])


def test_stages_are_named_by_their_call_site() -> None:
    named = {e["Stage Info"]["Stage ID"]: e["Stage Info"]["Stage Name"] for e in events(PLAIN.read_bytes().splitlines())
             if e["Event"] == "SparkListenerStageSubmitted"}
    source, _ = current(PLAIN)
    stages = source.analysis()["stages"]
    assert [st["name"] for st in stages] == [stage_name(named[st["stage"]]) for st in stages]
    assert stages[0]["name"] == "reduceByKey at generate.py:91" == stage_name(named[0])
    text = CliRunner().invoke(main, ["report", str(PLAIN)]).output
    assert "   stage 0.0 (reduceByKey at generate.py:91): 2 tasks" in text


def test_a_stage_name_is_cleaned_and_cut_in_the_middle() -> None:
    long = "A" * 300
    first, second = stage_name(f"{long}-first at /x/job.py:3"), stage_name(f"{long}-second at /x/job.py:3")
    assert first != second and len(first) == len(second) == 80
    assert first.endswith("-first at job.py:3") and first.startswith("AAAA")
    assert stage_name("esc \x1b[31mred\x1b]0;t\x07\nnext\u202e at job:0") == "esc ?[31mred?]0;t??next? at job:0"
    assert stage_name(None) is None and stage_name("  ") is None


def test_times_are_the_milliseconds_the_log_gives() -> None:
    """wall_s, task_time_s and wasted_core_s are whole milliseconds (no epoch-seconds float noise)."""
    ends = [e for e in events(PLAIN.read_bytes().splitlines()) if e["Event"] == "SparkListenerTaskEnd"]
    source, _ = current(PLAIN)
    for st in source.analysis()["stages"]:
        info = [e["Task Info"] for e in ends if (e["Stage ID"], e["Stage Attempt ID"]) == (st["stage"], st["attempt"])]
        wall = max(i["Finish Time"] for i in info) - min(i["Launch Time"] for i in info)
        busy = sum(i["Finish Time"] - i["Launch Time"] for i in info)
        assert (st["wall_s"], st["task_time_s"]) == (wall / 1000, busy / 1000)
        assert st["wasted_core_s"] == max(0, st["cores"] * wall - busy) / 1000
        assert repr(st["wall_s"]) == repr(wall / 1000) and len(repr(st["wall_s"]).split(".")[1]) <= 3
    text = CliRunner().invoke(main, ["report", str(PLAIN)]).output
    assert "e-0" not in text


def test_a_straggler_still_running_is_listed_and_its_core_is_busy(tmp_path: Path) -> None:
    log, before = cut_in_straggler(tmp_path)
    ends = [e for e in before if e["Event"] == "SparkListenerTaskEnd"]
    (start,) = [e for e in before if e["Event"] == "SparkListenerTaskStart" and
                e["Task Info"]["Task ID"] == STRAGGLER_ID]
    now = max(e["Task Info"]["Finish Time" if e["Event"] == "SparkListenerTaskEnd" else "Launch Time"]  # last time
              for e in before if e["Event"] in ("SparkListenerTaskEnd", "SparkListenerTaskStart"))
    so_far = now - start["Task Info"]["Launch Time"]
    stage2 = sorted(e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"] for e in ends if e["Stage ID"] == 2)
    # judged against the stage's tasks past its first wave (its first two launched: 2 cores)
    by_launch = sorted((e["Task Info"] for e in ends if e["Stage ID"] == 2), key=lambda i: i["Launch Time"])
    settled = sorted(i["Finish Time"] - i["Launch Time"] for i in by_launch[2:])
    assert max(i["Launch Time"] for i in by_launch[:2]) < min(i["Finish Time"] for i in by_launch) <= \
        by_launch[2]["Launch Time"]
    median = (settled[(len(settled) - 1) // 2] + settled[len(settled) // 2]) / 2
    assert so_far > 5 * median

    source, _ = current(log)
    analysis = source.analysis()
    (running,) = [s for s in analysis["stragglers"] if s["running"]]
    assert (running["task_id"], running["stage"], running["index"], running["end"]) == (STRAGGLER_ID, 2, 5, None)
    assert running["duration_s"] == so_far / 1000 and running["ratio"] == so_far / median
    assert running["median_past_warmup"] and running["stage_median_s"] == median / 1000
    (stage,) = [st for st in analysis["stages"] if st["stage"] == 2]
    starts = [e["Task Info"]["Launch Time"] for e in before
              if e["Event"] == "SparkListenerTaskStart" and e["Stage ID"] == 2]
    others = {e["Task Info"]["Task ID"] for e in ends}
    live = [e["Task Info"]["Launch Time"] for e in before if e["Event"] == "SparkListenerTaskStart" and
            e["Stage ID"] == 2 and e["Task Info"]["Task ID"] not in others]
    wall = now - min(starts)
    busy = sum(stage2) + sum(now - t for t in live)
    assert stage["running"] == len(live) and stage["running_max_s"] == so_far / 1000
    assert (stage["wall_s"], stage["task_time_s"]) == (wall / 1000, busy / 1000)
    assert stage["wasted_core_s"] == max(0, stage["cores"] * wall - busy) / 1000

    text = CliRunner().invoke(main, ["report", str(log)]).output
    assert (f"task 5 (id {STRAGGLER_ID}) in stage 2.0: {duration_text(so_far / 1000)} so far, still running (no end "
            f"logged), {so_far / median:.1f}x the stage median without warm-up") in text


def test_a_finished_log_has_nothing_running() -> None:
    source, _ = current(PLAIN)
    analysis = source.analysis()
    assert not any(s["running"] for s in analysis["stragglers"])
    assert all(st["running"] == 0 and st["running_max_s"] is None for st in analysis["stages"])


def late_stage(scale: float = 1.0) -> list[SparkTask]:
    """LATE_STAGE's tasks, executor 1's other than the straggler `scale` times as long."""
    out = []
    for k, row in enumerate(LATE_STAGE.split()):
        launch, executor, ms = (int(v) for v in row.split(":"))
        ms = ms if executor == 0 or ms > 5000 else round(ms * scale)
        out.append(SparkTask(4, 0, 88 + k, k, 0, 10_000 + launch, 10_000 + launch + ms, str(executor), "host"))
    return out


def test_a_straggler_holding_its_executor_s_core_does_not_make_that_executor_slow() -> None:
    """Executor 1's median is twice executor 0's only because it ran no task once the straggler held its core,
    when executor 0 ran alone and faster: beside executor 0's tasks of the same time, its tasks are as fast."""
    tasks = late_stage()
    warm = {t.task_id for t in tasks[:2]}  # the first wave, one task per core
    mine = [t for t in tasks if t.executor == "1" and t.task_id not in warm]
    others = [t for t in tasks if t.executor == "0" and t.task_id not in warm]
    assert median(t.duration_ms for t in mine) >= SLOW_EXECUTOR_RATIO * median(t.duration_ms for t in others)
    before = [t for t in mine if t.duration_ms < 5000]  # 209.5 ms vs 101.5 ms above; the straggler's 8 s left out:
    during = [t for t in others if t.launch_ms < before[-1].finish_ms]  # executor 0's, launched while these ran
    assert (len(before), len(during)) == (7, 8)
    assert median(t.duration_ms for t in before) < 1.6 * median(t.duration_ms for t in during)  # 207 ms vs 138 ms
    assert stage_summary(4, 0, tasks, cores=2)["slow_executors"] == []


def test_an_executor_slow_beside_the_others_tasks_of_the_same_time_is_slow() -> None:
    """The same stage, executor 1's tasks other than the straggler three times as long: it is slow."""
    (slow,) = stage_summary(4, 0, late_stage(3.0), cores=2)["slow_executors"]
    assert slow["executor"] == "1" and slow["tasks"] == 8 and slow["others_tasks"] == 50 and slow["stragglers"] == 0
    assert slow["median_s"] == (3 * 207 + 3 * 212) / 2 / 1000 and slow["others_median_s"] == 0.1015


def test_an_executor_of_two_tasks_one_a_straggler_is_not_slow() -> None:
    """An executor that ran two tasks, one of them the straggler: its median is half the straggler's, yet only that
    one task was slow."""
    tasks = [t for t in late_stage() if t.executor == "0" or t.task_id in (88 + 15, 88 + 17)]
    assert [t.duration_ms for t in tasks if t.executor == "1"] == [244, 8116]
    assert stage_summary(4, 0, tasks, cores=2)["slow_executors"] == []



def test_a_task_seen_running_until_a_later_time_is_slow_by_then() -> None:
    """A task launched at the stage's last end: slow by the clock only, not by the log's last time (an end still in
    Spark's event-log buffer), it is no straggler; seen running 5 s later (a driver's REST answer, `seen_ms`), it is
    one, its time so far run to the clock."""
    tasks = late_stage()
    last = max(t.finish_ms for t in tasks)
    hung = RunningTask(4, 0, 200, 60, 0, last, "0", "host")
    by_log = spark_analysis(tasks, running=[hung], now_ms=last + 6000)
    assert not any(s["running"] for s in by_log["stragglers"])
    (seen,) = [s for s in spark_analysis(tasks, running=[hung], now_ms=last + 6000, seen_ms=last + 5000)["stragglers"]
               if s["running"]]
    assert (seen["task_id"], seen["duration_s"], seen["so_far_to"], seen["end"]) == (200, 6.0, "clock", None)

#: Stage 2.0 of a real run on 2 executors of 2 cores (local-cluster[2,2,1024]) whose reduce task 1 SIGKILLed its
#: executor's JVM: TaskEnd lines as `task:executor:launch:finish` (ms from the stage's first launch), two failed
#: (ExecutorLostFailure, then FetchFailed on the executor left); executor 1 removed at LOST_AT.
LOST_STAGE = "18:0:9:1582 16:0:0:1599 19:1:9:2095 17:1:7:3243 20:0:3270:5509"
LOST_AT = 3252


def test_a_removed_executor_s_cores_count_in_its_stage_only_until_it_was_removed() -> None:
    """2 cores x 5.509 s + executor 1's 2 cores x 3.252 s (to its ExecutorRemoved) = 17.522 core-s were there; the
    tasks took 10.733 s: 6.789 core-s wasted (39%), not 4 cores x 5.509 s - 10.733 = 11.3 (51%)."""
    from latencymap.sources.spark.parse import ExecutorInfo

    t0 = 1_795_878_663_359
    tasks = [SparkTask(2, 0, int(task), 0, 0, t0 + int(launch), t0 + int(finish), executor, "host",
                       failed=task in ("17", "20"))
             for task, executor, launch, finish in (row.split(":") for row in LOST_STAGE.split())]
    executors = {"0": ExecutorInfo("0", t0 - 21_627, 2), "1": ExecutorInfo("1", t0 - 20_625, 2, t0 + LOST_AT)}
    st = stage_summary(2, 0, tasks, 4, executors=executors)
    assert (st["wall_s"], st["task_time_s"], st["cores"]) == (5.509, 10.733, 4)
    assert st["available_core_s"] == 17.522 and st["wasted_core_s"] == 6.789
    assert st["utilisation"] == 10_733 / 17_522
    late = {"0": executors["0"], "1": ExecutorInfo("1", t0 + 1_000, 2)}  # added a second into the stage instead
    st = stage_summary(2, 0, tasks, 4, executors=late)
    assert st["available_core_s"] == 20.036 and st["wasted_core_s"] == 9.303  # 2 x 5.509 + 2 x 4.509
    assert stage_summary(2, 0, tasks, 4)["available_core_s"] == 4 * 5.509  # executors' times unknown: the whole wall


#: Real logs of local-cluster[3,1,768] runs (fixtures/spark/README.md, "cluster"): per-task truth in the comments.
CLUSTER = SPARK / "cluster"


@cache
def cluster(name: str) -> dict[str, Any]:
    """The analysis of the cluster fixture `name`, read once."""
    source, _ = current(CLUSTER / name)
    return source.analysis()


def by_task(found: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {s["task_id"]: s for s in found}


def test_a_straggler_and_a_warmup_task_do_not_make_their_executor_slow() -> None:
    """b, stage 1: partition 7 (task 16) slept 5 s, the others 0.2 s, on every executor. Executor 1 ran only task 16
    and a first-wave task (2.81 s, 1.35 s deserialising): neither is evidence that executor 1 is slow."""
    analysis = cluster("b")
    (stage,) = [st for st in analysis["stages"] if (st["stage"], st["attempt"]) == (1, 0)]
    assert stage["slow_executors"] == []
    task = by_task(analysis["stragglers"])[16]
    assert (task["executor"], task["index"]) == ("1", 7)
    assert task["slow_executor"] is False and task["cause"] is None


def test_an_executor_slow_by_its_other_tasks_is_slow_whichever_straggler_it_explains() -> None:
    """LATE_STAGE with executor 1's tasks 3x as long, two of them named stragglers: leaving either out, its other
    tasks still show it slow; leaving out the one task that made it look slow (a two-task executor) does not."""
    tasks = late_stage(3.0)
    ids = [t.task_id for t in tasks if t.executor == "1"][2:4]  # past the first wave, also without the others
    (slow,) = stage_summary(4, 0, tasks, cores=2, stragglers=set(ids))["slow_executors"]
    assert slow["executor"] == "1" and slow["stragglers"] == 2
    two = [t for t in tasks if t.executor == "0" or t.task_id in ids]  # executor 1: two tasks, 3x as long
    assert stage_summary(4, 0, two, cores=2)["slow_executors"] != []
    assert stage_summary(4, 0, two, cores=2, stragglers={ids[1]})["slow_executors"] == []


def test_a_skewed_partition_is_found_past_a_slow_first_wave() -> None:
    """a, stage 1: partition 4's file has 30x the rows (task 16 read 1,620,000 B vs 54,000 B; 2.45 s vs 595 ms, the
    median of the tasks past the 3.6-4.4 s first wave). With the first wave in the median and MAD it scored 2.97."""
    analysis = cluster("a")
    task = by_task(analysis["stragglers"])[16]
    assert task["median_past_warmup"] and task["stage_median_s"] == 0.595 and task["cause"] == "input"
    assert task["read_bytes"] == 1_620_000 and task["read_ratio"] == 30.0
    text = CliRunner().invoke(main, ["report", str(CLUSTER / "a")]).output
    assert "task 7 (id 16) in stage 1.0: 2.45s, 4.1x the stage median without warm-up (595ms) — read 30.0x" in text


def test_a_new_executor_s_first_task_is_cold() -> None:
    """d: a task SIGKILLed executor 0's JVM, Spark added executor 3; stage 2's task 28 was the first task ever on
    executor 3 (2.96 s, 1.1 s deserialising; every task of the stage does nothing): cold, not a straggler against
    its wave's tasks on warm executors (349 ms)."""
    analysis = cluster("d")
    assert not [s for s in analysis["stragglers"] if s["stage"] == 2]
    first = by_task(analysis["warmup"])[28]
    assert (first["executor"], first["warmup_reason"]) == ("3", "cold")


def test_the_first_task_after_a_python_task_failed_on_its_executor_is_cold() -> None:
    """a: a Python task that raises ends its worker (PySpark's worker exits; Spark reuses only a worker whose task
    ended its output), so the next task there starts one: stage 3's task 63 (retry of partition 3, on executor 0,
    after task 54 failed there) took 2.11 s, stage 4's task 66 (executor 1, after task 58 failed there) 2.78 s, where
    each slept 0.3 s and 0.15 s like their stages' others."""
    analysis = cluster("a")
    assert not {63, 66} & set(by_task(analysis["stragglers"]))
    warm = by_task(analysis["warmup"])
    assert warm[63]["warmup_reason"] == warm[66]["warmup_reason"] == "cold"
    failed = SparkTask(0, 0, 1, 0, 0, 1_000, 1_500, "0", "h", failed=True, reason="ExceptionFailure")
    after = SparkTask(0, 0, 2, 1, 0, 1_520, 1_900, "0", "h")
    assert cold_tasks([SparkTask(0, 0, 0, 0, 0, 0, 900, "0", "h"), failed, after]) == {0, 2}
    ok = SparkTask(0, 0, 1, 0, 0, 1_000, 1_500, "0", "h")
    assert cold_tasks([SparkTask(0, 0, 0, 0, 0, 0, 900, "0", "h"), ok, after]) == {0}


def test_an_executor_running_only_unfinished_tasks_counts_in_its_stage_s_cores(tmp_path: Path) -> None:
    """b cut before the first TaskEnd of executor 1 in stage 1 (tasks 11 and 16 running there): the stage ran on
    3 one-core executors, not the 2 whose tasks ended."""
    lines = zstandard.ZstdDecompressor().decompressobj().decompress(
        next((CLUSTER / "b").iterdir()).read_bytes()).splitlines()
    cut = next(k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line and b'"Task ID":11,' in line)
    log = write_log(tmp_path / "app-cut", lines[:cut])
    source, _ = current(log)
    analysis = source.analysis()
    (stage,) = [st for st in analysis["stages"] if (st["stage"], st["attempt"]) == (1, 0)]
    assert stage["running"] >= 2 and stage["cores"] == 3
    assert stage["available_core_s"] == pytest.approx(3 * stage["wall_s"])  # not 2 cores: task time 1.5x of them
