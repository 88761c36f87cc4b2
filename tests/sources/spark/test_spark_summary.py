"""Stage summaries and stragglers of the real fixture log: stage names, times as the log gives them, and tasks
still running in a log cut short. Every figure checked is recomputed here from the log's own JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from spark_support import PLAIN, current, write_log

from latencymap.cli.main import main
from latencymap.outputs.report import duration_text
from latencymap.sources.spark.summary import stage_name

STRAGGLER_ID = 9  # stage 2, partition 5: sleeps 2.5 s where its siblings sleep 0.3 s


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
    median = (stage2[(len(stage2) - 1) // 2] + stage2[len(stage2) // 2]) / 2
    assert so_far > 5 * median

    source, _ = current(log)
    analysis = source.analysis()
    (running,) = [s for s in analysis["stragglers"] if s["running"]]
    assert (running["task_id"], running["stage"], running["index"], running["end"]) == (STRAGGLER_ID, 2, 5, None)
    assert running["duration_s"] == so_far / 1000 and running["ratio"] == so_far / median
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
            f"logged), {so_far / median:.1f}x the stage median") in text


def test_a_finished_log_has_nothing_running() -> None:
    source, _ = current(PLAIN)
    analysis = source.analysis()
    assert not any(s["running"] for s in analysis["stragglers"])
    assert all(st["running"] == 0 and st["running_max_s"] is None for st in analysis["stages"])
