from __future__ import annotations

import pytest

from latencymap.core.model import Interval, Notice, Snapshot, StreamId, empty_counts
from latencymap.sources.print_modes import PrintedHistograms

STREAM = StreamId("bcc usecs", "bpf", "microsec")


def growing(prints: PrintedHistograms, n: int = 12) -> list[Interval | Snapshot | Notice]:
    """`n` prints of one map, each count higher than the print before's (a cleared map under rising load, or a
    cumulative one)."""
    out: list[Interval | Snapshot | Notice] = []
    for k in range(n):
        counts = empty_counts()
        counts[5] = 100 + k
        out += prints.add(STREAM, float(k), k + 1.0, counts, line=10 * k, family="usecs", group=k + 1)
    return out + prints.finish()


def test_a_known_mode_decides_each_map_at_its_first_print_with_the_reason() -> None:
    prints = PrintedHistograms(None, "in.txt")
    prints.known = (False, "per-interval: line 1 is the banner of bcc's runqlat, which clears its map after each print")
    out = growing(prints)
    assert out[0] == Notice("in.txt: bcc usecs: counts read as per-interval: line 1 is the banner of bcc's runqlat, "
                            "which clears its map after each print (declare with --cumulative or --per-interval)",
                            skipped=0)
    assert [int(i.counts.sum()) for i in out if isinstance(i, Interval)] == [100 + k for k in range(12)]
    assert len([i for i in out if isinstance(i, Notice)]) == 1


@pytest.mark.parametrize(("declared", "kind"), [(True, Snapshot), (False, Interval)])
def test_the_declared_mode_rules_over_a_known_one(declared: bool, kind: type) -> None:
    prints = PrintedHistograms(declared, "in.txt")
    prints.known = (not declared, "why")
    out = growing(prints)
    assert out and all(isinstance(i, kind) for i in out)


def test_unknown_the_mode_is_detected_and_the_undecided_note_ends_with_the_formats_hint() -> None:
    prints = PrintedHistograms(None, "in.txt", hint="; what the format's producers do")
    out = growing(prints)
    (note,) = [i.message for i in out if isinstance(i, Notice)]
    assert note.startswith("in.txt: bcc usecs: undecided whether counts are cumulative or per-interval")
    assert note.endswith("say --per-interval or --cumulative; what the format's producers do")
    assert all(isinstance(i, Snapshot) for i in out if not isinstance(i, Notice))
