"""What a finding says of the tasks of a source's analysis among its events (`report.findings_cause`,
`report.analysis_causes`): warm-up tasks as warm-up (executors or their stage starting), not the usual guesses;
failed or killed attempts by their end reason; the rest as of no cause the log gives."""

from __future__ import annotations

from typing import Any

from latencymap.core.model import StreamId
from latencymap.outputs.report import analysis_causes, findings_cause

COLD = ("the first on their executors' slots, slowed by the executors' start (the JVM's JIT, Python workers starting, "
        "the first deserialisation)")


def task(task_id: int, executor: str = "1", slow: bool = False, warmup: str | None = None, failed: bool = False,
         killed: bool = False, reason: str = "Success") -> dict[str, Any]:
    """A task of Spark's analysis (sources/spark/summary.py's `straggler_json`): a straggler, or (`warmup`: its
    reason, "cold" or "first wave") a warm-up task kept apart, 5 times its stage's median time."""
    return {"stage": 0 if warmup == "cold" else 2, "attempt": 0, "index": task_id, "task_id": task_id,
            "task_attempt": 0, "executor": executor, "duration_s": 1.0, "stage_median_s": 0.2, "read_bytes": 0.0,
            "read_ratio": None, "slow_executor": slow, "warmup": warmup is not None, "warmup_reason": warmup,
            "failed": failed, "killed": killed, "end_reason": reason, "end": 100.0 + task_id}


def test_a_finding_of_warm_up_tasks_says_they_are_warm_up_not_the_usual_guesses() -> None:
    """The three cold tasks of a real log (the executors' first, 14 s against 0.7 s) were called a slower band whose
    cause is to find (skewed partitions, a spill, a slow executor, a shuffle fetch)."""
    cold = [task(k, str(k), warmup="cold") for k in range(3)]
    assert findings_cause(cold, 3) == f"all 3 are warm-up tasks, {COLD}: start-up, not the run's work"
    assert findings_cause(cold[:1], 4) == (
        "1 of these 4 tasks is a warm-up task, the first on its executor's slot, slowed by the executor's start (the "
        "JVM's JIT, Python workers starting, the first deserialisation): start-up, not the run's work")
    wave = [task(k, warmup="first wave") for k in (9, 10)]
    assert findings_cause(wave, 2) == (
        "both are warm-up tasks, in their stage's first wave, slowed by the stage's start on each executor (its code "
        "deserialised and first run: class loading, JIT, broadcasts fetched): start-up, not the run's work")
    assert findings_cause([*cold, *wave], 6) == (
        "5 of these 6 tasks are warm-up tasks, the first on their executors' slots or in their stage's first wave, "
        "slowed by the executors' or the stages' start (the JVM's JIT, Python workers starting, the first "
        "deserialisation): start-up, not the run's work")


def test_failed_and_killed_attempts_are_said_by_their_end_reason_the_rest_as_of_no_cause_the_log_gives() -> None:
    """`5 of another cause` read as causes not in the log, though 2 of those 5 were failed attempts whose end reason
    the log gives; warm-up tasks among stragglers are counted apart."""
    found = [task(1, slow=True), task(2, failed=True, reason="ExceptionFailure"),
             task(3, failed=True, reason="ExceptionFailure"), task(4, killed=True, reason="TaskKilled"),
             task(5, failed=True, reason="ExecutorLostFailure"), task(6)]
    assert findings_cause(found, 9) == (
        "6 of these 9 tasks are stragglers (see Stragglers and Stages): 1 on executor 1, slow in its stage; 3 failed "
        "attempts (ExceptionFailure, ExecutorLostFailure); 1 killed attempt (TaskKilled); 1 of no cause the log gives")
    assert findings_cause([task(0, "0", warmup="cold"), *found[:2], task(7), task(8)], 24) == (
        "5 of these 24 tasks are warm-up tasks or stragglers (see Stragglers and Stages): 1 warm-up (the first on its "
        "executor's slot); 1 on executor 1, slow in its stage; 1 failed attempt (ExceptionFailure); 2 of no cause the "
        "log gives")


def test_failed_attempts_alone_keep_the_usual_causes() -> None:
    """An end reason says what became of an attempt, not what made it slow: a finding whose stragglers have no other
    cause the log gives keeps its own why."""
    assert findings_cause([task(2, failed=True, reason="ExceptionFailure"), task(3)], 2) is None


def test_the_causes_of_a_stream_hold_its_warm_up_tasks_once() -> None:
    """The analysis keeps warm-up tasks apart (`warmup`); with --include-warmup it lists them among its stragglers
    too: each is one task of the stream's causes."""
    stream = StreamId("app", "spark")
    straggler, cold, wave = task(1, slow=True), task(0, warmup="cold"), task(9, warmup="first wave")
    found = {"stragglers": [straggler, dict(cold)], "warmup": [cold, wave]}
    causes = analysis_causes(found, lambda s: stream)
    assert [s["task_id"] for s in causes[stream]] == [1, 0, 9]
    assert analysis_causes({**found, "analysed": "duration", "metric": "run"}, lambda s: stream) == {}
