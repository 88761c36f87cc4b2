"""`latencymap diff`: a stream against itself, against a copy shifted by one bucket, bands that come and go."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from prometheus_support import scraped_intervals

from latencymap.cli.main import main
from latencymap.core.accumulator import Accumulator
from latencymap.core.units import format_duration
from latencymap.outputs.compare import compare, compare_text

_PAIR = re.compile(r"^(\s*)(\d+)(\s*,\s*\d+\s*)$")


def shifted_copy(src: Path, dst: Path) -> Path:
    """The same records with every bucket value doubled: each event one log2 bucket slower."""
    out = []
    for line in src.read_text().splitlines():
        m = _PAIR.match(line)
        out.append(f"{m.group(1)}{2 * int(m.group(2))}{m.group(3)}" if m else line)
    dst.write_text("\n".join(out) + "\n")
    return dst


def write_records(path: Path, counts: dict[int, int], label: str = "reads", n: int = 3) -> Path:
    """`n` identical 1-second intervals of bpf/millisec `counts` (value = bucket low bound)."""
    lines: list[str] = []
    for i in range(n + 1):
        lines += ["<begin record>", f"timestamp, microsec, {(1_700_000_000 + i) * 1_000_000}, t{i}",
                  "latencyunit, millisec", f"label, {label}", "datasource, bpf"]
        lines += [f"{v}, {c * i}" for v, c in sorted(counts.items())]
        lines.append("<end record>")
    path.write_text("\n".join(lines) + "\n")
    return path


def pooled_ms(path: Path) -> dict[int, int]:
    """{bucket value (ms): events} over the whole file, read here: last minus first cumulative record."""
    records = []
    for block in re.findall(r"<begin record>(.*?)<end record>", path.read_text(), re.S):
        counts: dict[int, int] = {}
        for v, c in re.findall(r"^\s*(\d+)\s*,\s*(\d+)\s*$", block, re.M):
            counts[int(v)] = counts.get(int(v), 0) + int(c)
        records.append(counts)
    first, last = records[0], records[-1]
    return {v: last[v] - first.get(v, 0) for v in last if last[v] - first.get(v, 0) > 0}


def percentile_ms(pooled: dict[int, int], q: float) -> float:
    """As core/percentiles.py documents it: the bucket [v, 2v) holding rank q·N, interpolated log-uniformly."""
    total, before = sum(pooled.values()), 0
    for v in sorted(pooled):
        if before + pooled[v] >= q * total:
            return v * 2 ** ((q * total - before) / pooled[v])
        before += pooled[v]
    raise AssertionError("rank beyond the histogram")


def diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["diff", *args])
    assert result.exit_code == 0, result.output
    return result.exit_code, result.stdout


def diff_json(a: Path, b: Path) -> dict:
    return json.loads(diff("--format", "json", str(a), str(b))[1])


def test_against_itself_no_change(example_data: Path) -> None:
    result = diff_json(example_data, example_data)
    assert result["only_in_baseline"] == [] and result["only_in_candidate"] == []
    (pair,) = result["pairs"]
    assert pair["changed"] is False
    assert pair["shift_octaves"] == 0.0 and pair["median_shift_octaves"] == 0.0
    assert all(b["events_share_change"] == 0 and b["time_share_change"] == 0 for b in pair["buckets"])
    assert all(s["delta_s"] == 0 and s["ratio"] == 1 for s in pair["percentiles"].values())
    assert pair["bands_appeared"] == [] and pair["bands_vanished"] == []
    text = diff(str(example_data), str(example_data))[1]
    assert "no change" in text and "shifted" not in text


def test_shifted_copy(example_data: Path, tmp_path: Path) -> None:
    slower = shifted_copy(example_data, tmp_path / "slower.txt")
    (pair,) = diff_json(example_data, slower)["pairs"]
    assert pair["changed"] is True
    assert pair["shift_octaves"] == pytest.approx(1.0)
    assert pair["median_shift_octaves"] == pytest.approx(1.0)
    for stat in ("p50", "p90", "p99", "p999", "mean"):
        assert pair["percentiles"][stat]["ratio"] == pytest.approx(2.0), stat
    # every bucket of the fixture (bpf, ms: value v is [v, 2v)) holds its share, one octave up in the candidate
    pooled = pooled_ms(example_data)
    total = sum(pooled.values())
    rows = {(round(b["low"] * 1e3), round(b["high"] * 1e3)): b for b in pair["buckets"]}
    assert set(rows) == {(v, 2 * v) for v in pooled} | {(2 * v, 4 * v) for v in pooled}
    for v, n in pooled.items():
        assert rows[(v, 2 * v)]["baseline_events"] == n and rows[(2 * v, 4 * v)]["candidate_events"] == n
        assert rows[(v, 2 * v)]["baseline_events_share"] == pytest.approx(n / total, rel=1e-12)
        assert rows[(2 * v, 4 * v)]["candidate_events_share"] == pytest.approx(n / total, rel=1e-12)
    p50 = percentile_ms(pooled, 0.5) / 1e3
    assert pair["percentiles"]["p50"]["baseline_s"] == pytest.approx(p50, rel=1e-12)
    assert pair["percentiles"]["p50"]["candidate_s"] == pytest.approx(2 * p50, rel=1e-12)
    text = diff(str(example_data), str(slower))[1]
    assert "latency shifted +1.00 octaves (×2.00" in text
    assert re.search(rf"p50\s+{re.escape(format_duration(p50))} →\s+{re.escape(format_duration(2 * p50))}", text)

    (back,) = diff_json(slower, example_data)["pairs"]
    assert back["shift_octaves"] == pytest.approx(-1.0)


def test_band_appears_and_vanishes(tmp_path: Path) -> None:
    one = write_records(tmp_path / "one.txt", {1: 1000})
    two = write_records(tmp_path / "two.txt", {1: 950, 64: 50})
    (pair,) = diff_json(one, two)["pairs"]
    (band,) = pair["bands_appeared"]
    assert band["low_s"] == pytest.approx(0.064) and band["events_share"] == pytest.approx(0.05)
    assert pair["bands_vanished"] == []
    assert pair["bimodal"] == {"baseline": False, "candidate": True}
    text = diff(str(one), str(two))[1]
    assert "band appeared: 64ms–128ms" in text
    (pair,) = diff_json(two, one)["pairs"]
    assert len(pair["bands_vanished"]) == 1 and pair["bands_appeared"] == []
    assert "band vanished: 64ms–128ms" in diff(str(two), str(one))[1]



def test_a_band_on_both_sides_that_quadrupled_is_said(tmp_path: Path) -> None:
    """A slow band at 64 ms from 1% to 4% of the events (and from 40% to 74% of the time): it neither appeared nor
    vanished, and the mean log2 shift is small, so no line named it. The main band, which only made room, is not
    said; bands whose shares hardly moved are not said either."""
    base = write_records(tmp_path / "base.txt", {1: 990, 64: 10})
    cand = write_records(tmp_path / "cand.txt", {1: 960, 64: 40})
    (pair,) = diff_json(base, cand)["pairs"]
    assert pair["bands_appeared"] == [] and pair["bands_vanished"] == []
    (change,) = pair["bands_changed"]
    b, c = change["baseline"], change["candidate"]
    assert b["low_s"] == c["low_s"] == pytest.approx(0.064)
    assert (b["events_share"], c["events_share"]) == (pytest.approx(0.01), pytest.approx(0.04))
    assert change["events_share_change"] == pytest.approx(0.03)
    assert change["time_share_change"] == pytest.approx(c["time_share"] - b["time_share"]) and c["time_share"] > 0.5
    text = diff(str(base), str(cand))[1]
    assert "   band changed: 64ms–128ms: 1.0% → 4.0% (×4.00) of events, " in text
    assert text.count("band changed") == 1
    same = write_records(tmp_path / "same.txt", {1: 985, 64: 12})
    (pair,) = diff_json(base, same)["pairs"]
    assert pair["bands_changed"] == []


def test_bucket_shares(tmp_path: Path) -> None:
    a = write_records(tmp_path / "a.txt", {1: 50, 2: 50})
    b = write_records(tmp_path / "b.txt", {1: 25, 2: 75})
    (pair,) = diff_json(a, b)["pairs"]
    rows = {b["low"]: b for b in pair["buckets"]}
    assert rows[0.001]["events_share_change"] == pytest.approx(-0.25)
    assert rows[0.002]["events_share_change"] == pytest.approx(0.25)
    # time: 1.5 ms and 3 ms midpoints → baseline 1/3 vs 2/3, candidate 1/7 vs 6/7
    assert rows[0.002]["time_share_change"] == pytest.approx(6 / 7 - 2 / 3)


def test_unpaired_streams(tmp_path: Path, example_data: Path) -> None:
    a = write_records(tmp_path / "a.txt", {1: 10}, label="only here")
    both = tmp_path / "both.txt"
    both.write_text(a.read_text() + write_records(tmp_path / "c.txt", {2: 10}, label="other").read_text())
    result = diff_json(both, a)
    assert [p["candidate"]["label"] for p in result["pairs"]] == ["only here"]
    assert [s["label"] for s in result["only_in_baseline"]] == ["other"]
    assert "other: only in the baseline" in diff(str(both), str(a))[1]


def test_missing_input_exit_2(tmp_path: Path, example_data: Path) -> None:
    result = CliRunner().invoke(main, ["diff", str(example_data), str(tmp_path / "nope.txt")])
    assert result.exit_code == 2 and "nope.txt" in result.stderr


def test_what_reading_skipped_and_said_is_in_the_diff(tmp_path: Path) -> None:
    good = write_records(tmp_path / "good.txt", {1: 10})
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text().replace("1, 20\n", "1, x20\n"))  # the third record's row
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = diff_json(bad, empty)
    assert result["errors"]["baseline"]["skipped_records"] == 1
    assert "bad.txt: line 20: expected integers" in result["errors"]["baseline"]["messages"][0]
    assert result["errors"]["candidate"] == {"skipped_records": 0,
                                             "messages": [f"{empty}: empty input, nothing to read"]}
    text = diff(str(bad), str(empty))[1]
    assert text.endswith(f"Skipped records (baseline): 1\n   {result['errors']['baseline']['messages'][0]}\n"
                         f"Notes (candidate):\n   {empty}: empty input, nothing to read\n")
    assert "Skipped" not in diff(str(good), str(good))[1]


def test_format_options_apply_to_both_inputs(example_data: Path, fixtures: Path) -> None:
    """PyLatencyMap's Oracle records without a datasource line need `--datasource oracle`; a 10046 trace `--event`."""
    as_oracle = json.loads(CliRunner().invoke(main, ["diff", "--format", "json", "--datasource", "oracle",
                                                     str(example_data), str(example_data)]).stdout)
    assert {p["baseline"]["datasource"] for p in as_oracle["pairs"]} == {"oracle"}
    trace = str(fixtures / "pylatencymap" / "test_10046_tracefile.trc")
    result = CliRunner().invoke(main, ["diff", "--format", "json", "--event", "all", trace, trace])
    assert result.exit_code == 0, result.output
    labels = {p["baseline"]["label"] for p in json.loads(result.stdout)["pairs"]}
    assert len(labels) > 1 and any("db file sequential read" in label for label in labels)


def test_counts_are_grouped_by_thousands_as_in_the_report(tmp_path: Path) -> None:
    # `baseline 299000 events`: the report writes 299,000.
    a = write_records(tmp_path / "a.txt", {1: 100_000, 2: 500}, n=3)
    text = diff(str(a), str(a))[1]
    assert "   baseline 301,500 events in 3 intervals; candidate 301,500 events in 3 intervals\n" in text


def test_a_change_that_is_float_noise_is_no_change_not_minus_zero(tmp_path: Path) -> None:
    # The same numbers read back through a recording differed in their last bits: `mean 21.4ms → 21.4ms  -0ns`.
    from latencymap.outputs.compare import compare_text

    a = write_records(tmp_path / "a.txt", {1: 10, 4: 3})
    result = diff_json(a, a)
    stats = result["pairs"][0]["percentiles"]
    for key, step in (("mean", -1), ("p99", 1)):
        s = stats[key]
        s["candidate_s"] = s["baseline_s"] + step * 2 * math.ulp(s["baseline_s"])
        s["delta_s"] = s["candidate_s"] - s["baseline_s"]
        assert s["delta_s"] != 0
    stats["p50"]["candidate_s"] = stats["p50"]["baseline_s"] * 1.5  # a real change still shows, signed
    stats["p50"]["delta_s"], stats["p50"]["ratio"] = stats["p50"]["baseline_s"] * 0.5, 1.5
    text = compare_text(result)
    assert "0ns" not in text and "-0" not in text
    assert re.search(r"   mean .* \+0 \(×1\.00\)\n", text) and re.search(r"   p99 .* \+0 \(×1\.00\)\n", text)
    assert f"+{format_duration(stats['p50']['baseline_s'] * 0.5)} (×1.50)" in text


def test_a_pair_in_two_units_shows_both_in_its_header(tmp_path: Path) -> None:
    # `== io [bpf, nanosec]` for a µs stream against a ns one: only the candidate's unit.
    us = write_records(tmp_path / "us.txt", {1: 10}, label="io")
    us.write_text(us.read_text().replace("latencyunit, millisec", "latencyunit, microsec"))
    ns = tmp_path / "ns.txt"
    ns.write_text(us.read_text().replace("latencyunit, microsec", "latencyunit, nanosec"))
    assert diff(str(us), str(ns))[1].startswith("== io  [bpf, microsec → nanosec]\n")
    assert diff(str(us), str(us))[1].startswith("== io  [bpf, microsec]\n")


def huge_record(path: Path, counts: dict[int, int], label: str = "big") -> Path:
    """One `counts, interval` record of µs `counts` (the hunter's `huge_diff.txt` holds {256: 2**53 + 1})."""
    rows = "".join(f"{v}, {n}\n" for v, n in counts.items())
    path.write_text("<begin record>\ntimestamp, microsec, 1795000010000000, a\ncounts, interval\n"
                    f"start, microsec, 1795000000000000\nlatencyunit, microsec\nlabel, {label}\n{rows}<end record>\n")
    return path


def test_event_counts_stay_integers_past_2_53(tmp_path: Path) -> None:
    """2**53 + 1 events read 9,007,199,254,740,992 through float64 (and the JSON held floats): exact integers now, as
    in `report`, totals and buckets, in pairs and on one side only."""
    one = huge_record(tmp_path / "one.txt", {256: 2**53 + 1})
    result = diff_json(one, one)
    (pair,) = result["pairs"]
    assert pair["baseline"]["events"] == pair["candidate"]["events"] == 2**53 + 1
    assert type(pair["baseline"]["events"]) is int
    (row,) = pair["buckets"]
    assert row["baseline_events"] == row["candidate_events"] == 2**53 + 1 and type(row["baseline_events"]) is int
    assert row["baseline_events_share"] == 1.0
    assert "baseline 9,007,199,254,740,993 events in 1 interval; candidate 9,007,199,254,740,993 events in 1 " \
           "interval\n" in diff(str(one), str(one))[1]

    near_63 = {256: 2**62 - 1, 512: 2**62 - 1}  # a stream of 2**63 - 2 events
    base = huge_record(tmp_path / "base.txt", near_63)
    base.write_text(base.read_text() + huge_record(tmp_path / "x.txt", {256: 2**53 + 3}, label="gone").read_text())
    cand = huge_record(tmp_path / "cand.txt", {512: 2**62 - 1, 1024: 2**62 - 1})
    result = diff_json(base, cand)
    (pair,) = result["pairs"]
    assert pair["baseline"]["events"] == pair["candidate"]["events"] == 2**63 - 2
    rows = {r["low"]: r for r in pair["buckets"]}
    assert [rows[k]["baseline_events"] for k in sorted(rows)] == [2**62 - 1, 2**62 - 1, 0]
    assert [rows[k]["candidate_events"] for k in sorted(rows)] == [0, 2**62 - 1, 2**62 - 1]
    assert [rows[k]["events_share_change"] for k in sorted(rows)] == [-0.5, 0.0, 0.5]
    assert result["only_in_baseline"][0]["events"] == 2**53 + 3
    assert '"events": 9223372036854775806,' in diff("--format", "json", str(base), str(cand))[1]


def test_many_pairs_start_with_a_summary_the_changed_first(tmp_path: Path) -> None:
    """Of 6 pairs, 2 changed (4x and 2x slower): a summary first (how many, each changed one with how much, the
    largest shift first), the changed pairs in full in that order, the unchanged ones one line each."""
    steady = {1: 100, 2: 20}
    base, cand = tmp_path / "base.txt", tmp_path / "cand.txt"
    base_text, cand_text = [], []
    for i, (factor, more) in enumerate(((1, 1), (2, 1), (1, 1), (1, 2), (4, 1), (1, 1))):  # host3: twice the events
        label = f"host{i}/rpc"
        base_text.append(write_records(tmp_path / "b.txt", steady, label=label, n=1).read_text())
        cand_text.append(write_records(tmp_path / "c.txt", {v * factor: n * more for v, n in steady.items()},
                                       label=label, n=1).read_text())
    base.write_text("".join(base_text))
    cand.write_text("".join(cand_text))
    text = diff(str(base), str(cand))[1]
    lines = text.splitlines()
    assert lines[0] == "3 of 6 pairs changed, 3 unchanged:"
    assert re.match(r"   host4/rpc  \+2\.00 octaves \(×4\.00\), p99 \S+ → \S+, 100\.0% of events changed bucket, "
                    r"1 band appeared, 1 band vanished$", lines[1]), lines[1]
    assert lines[2].startswith("   host1/rpc  +1.00 octaves (×2.00), ")
    # twice the events in the same time: the rate changed, the shape did not
    assert lines[3].startswith("   host3/rpc  +0.00 octaves (×1.00), ") and lines[3].endswith(
        ", 0.0% of events changed bucket, rate ×2.00") and lines[4] == ""
    blocks = [line for line in lines if line.startswith("== ")]
    assert blocks[:3] == ["== host4/rpc  [bpf, millisec]", "== host1/rpc  [bpf, millisec]",
                          "== host3/rpc  [bpf, millisec]"]
    assert "   rate 120/s → 240/s (×2.00): changed\n" in text
    same = "no change: 120 events in 1 interval on both sides"
    assert blocks[3:] == [f"== host{i}/rpc  [bpf, millisec]  {same}" for i in (0, 2, 5)]
    assert text.count("   p50 ") == 3  # percentiles of the changed pairs only
    single = diff(str(write_records(tmp_path / "b.txt", steady)), str(write_records(tmp_path / "c.txt", steady)))[1]
    assert single.startswith("== reads  [bpf, millisec]\n") and "   p50 " in single  # one pair: no summary


def hgrm_bracket(path: Path, q: float) -> tuple[float, float]:
    """The values (s) of the `.hgrm` rows either side of percentile `q`, read here from its own table (ms values)."""
    rows = [(float(v), float(p)) for v, p in re.findall(r"^\s+([\d.]+)\s+([\d.]+)\s+\d+", path.read_text(), re.M)]
    at = next(i for i, (_, p) in enumerate(rows) if p >= q)
    return rows[at - 1][0] / 1e3, rows[at][0] / 1e3


HGRM = "hdrhistogram/service_ms.hgrm"


@pytest.mark.parametrize("names", [(HGRM, HGRM), (HGRM, "hdrhistogram/java/int_tagged_us.read.hgrm"),
                                   ("otlp/checkout_metrics.jsonl", "otlp/checkout_metrics.jsonl")])
def test_percentiles_are_the_reports_from_the_sources_own_buckets(fixtures: Path, names: tuple[str, str]) -> None:
    """A rebinned stream's (`.hgrm`, OTLP) percentiles and mean in `diff` are those `report` prints (and the gates
    and the TUI's header use): its source's own buckets', not its log2 rows'."""
    base, cand = (fixtures / name for name in names)
    result = diff_json(base, cand)
    totals = {}
    for path in {base, cand}:
        out = CliRunner().invoke(main, ["report", "--format", "json", str(path)])
        assert out.exit_code == 0, out.output
        totals[path] = {s["stream"]["label"]: s["total"] for s in json.loads(out.stdout)["streams"]}
    assert result["pairs"]
    for pair in result["pairs"]:
        for side, path in (("baseline", base), ("candidate", cand)):
            total = totals[path][pair[side]["label"]]
            for stat, figures in pair["percentiles"].items():
                assert figures[f"{side}_s"] == pytest.approx(total[f"{stat}_s"], rel=1e-12), (side, stat)
    if names[0].endswith(".hgrm"):  # and they are the truth: inside the .hgrm's own rows (rows said p99 12.6 ms)
        p99 = result["pairs"][0]["percentiles"]["p99"]["baseline_s"]
        low, high = hgrm_bracket(base, 0.99)
        assert low <= p99 <= high
    text = diff(str(base), str(cand))[1]
    if names == (HGRM, HGRM):
        assert re.search(r"p99\s+10\.5ms →\s+10\.5ms", text) and re.search(r"p90\s+688µs →\s+688µs", text)


def test_percentiles_in_the_open_top_bucket_read_as_lower_bounds(tmp_path: Path) -> None:
    """1.5% of the events in the open top bucket (counts only, its values not known): `diff` wrote the candidate's
    p99 as a closed number, `4611686018s`, and its JSON did not say it was the bucket's low only. Now the text writes
    `≥low` (as `report` does) with the change as a bound, and the JSON lists the sides that are bounds under `open`."""
    top = 2**62  # ms: the top slot's low
    base = write_records(tmp_path / "base.txt", {1: 985, 4: 15})
    cand = write_records(tmp_path / "cand.txt", {1: 985, top: 15})
    low = format_duration(top * 1e-3)
    pcts = diff_json(base, cand)["pairs"][0]["percentiles"]
    assert pcts["p99"]["open"] == pcts["p999"]["open"] == ["candidate"]
    assert pcts["p99"]["candidate_s"] == top * 1e-3 and "open" not in pcts["p50"] and "open" not in pcts["mean"]
    text = diff(str(base), str(cand))[1]
    assert re.search(rf"p99 +\S+ → ≥{low}  ≥\+\S+ \(≥×", text), text
    assert "≥" not in next(line for line in text.splitlines() if line.lstrip().startswith("p90"))
    assert re.search(rf"p999 +≥{low} → +\S+  ≤-", diff(str(cand), str(base))[1])
    same = diff(str(cand), str(cand))[1]  # both bounds: no change can be told
    assert re.search(rf"p99 +≥{low} → ≥{low}  $", same, re.MULTILINE), same
    assert diff_json(cand, cand)["pairs"][0]["percentiles"]["p99"]["open"] == ["baseline", "candidate"]


def raw_latencies(path: Path, seed: int, n: int = 5000, mu_us: float = 200.0, sigma: float = 0.6,
                  slow: tuple[float, float] = (0.0, 0.0), seconds: float = 60.0) -> Path:
    """`n` raw `time latency(µs)` lines over `seconds`: a lognormal of median `mu_us`, a share `slow[0]` of them near
    `slow[1]` µs instead."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lat = rng.lognormal(math.log(mu_us), sigma, n)
    if slow[0]:
        hit = rng.random(n) < slow[0]
        lat[hit] = rng.lognormal(math.log(slow[1]), 0.2, int(hit.sum()))
    times = np.sort(rng.uniform(0, seconds, n))
    path.write_text("".join(f"{t:.6f} {v:.3f}\n" for t, v in zip(times, lat, strict=True)))
    return path


def test_samples_of_one_distribution_read_unchanged_and_regressions_changed(tmp_path: Path) -> None:
    """Every pair of seeds of one distribution read `changed: true` ("2 of 2 pairs changed", "latency shifted +0.00
    octaves"): any share difference over 1e-9 was a change. A pair changes now when its bucket counts differ beyond
    chance (G-test) by a shift, share or band that matters, or its rate does; the hunter's regressions still do."""
    base = raw_latencies(tmp_path / "base.txt", 1)
    for seed in range(2, 8):
        pair = diff_json(base, raw_latencies(tmp_path / f"same{seed}.txt", seed))["pairs"][0]
        assert pair["changed"] is False, (seed, pair["test"])
        assert pair["rate"]["changed"] is False and pair["test"]["alpha"] == 0.001
    text = diff(str(base), str(tmp_path / "same2.txt"))[1]
    assert "   no change beyond chance: the bucket shares differ as two samples of one distribution do (G-test p = " \
           in text
    assert "+0.00 octaves" not in text and "bucket  " not in text  # no table of noise
    regressions = {
        "tail": raw_latencies(tmp_path / "tail.txt", 9, slow=(0.02, 2000)),  # p99 x3.6 and more
        "band": raw_latencies(tmp_path / "band.txt", 10, slow=(0.03, 20_000)),  # a new 3% band at 20 ms
        "shift": raw_latencies(tmp_path / "shift.txt", 11, mu_us=400),  # x2
        "rate": raw_latencies(tmp_path / "rate.txt", 12, n=2500),  # half the events in the same time
    }
    for name, path in regressions.items():
        pair = diff_json(base, path)["pairs"][0]
        assert pair["changed"] is True, name
        assert pair["rate"]["changed"] is (name == "rate"), name
    rate = diff_json(base, regressions["rate"])["pairs"][0]["rate"]
    assert rate["baseline_per_s"] == pytest.approx(5000 / 60, rel=0.02) and rate["ratio"] == pytest.approx(0.5, 0.02)


def test_a_shift_inside_one_row_is_read_from_exact_times(tmp_path: Path) -> None:
    """Raw values (exact per-bucket times): every one 66 µs, then every one 120 µs, one row (64–128 µs) on both sides:
    the rows' centres said no shift and the diff no change. Each bucket's mean says ×1.82."""
    base = raw_latencies(tmp_path / "a.txt", 1, n=2000, mu_us=66, sigma=0.0)
    cand = raw_latencies(tmp_path / "b.txt", 2, n=2000, mu_us=120, sigma=0.0)
    (pair,) = diff_json(base, cand)["pairs"]
    assert pair["changed"] is True and pair["test"]["df"] == 0
    assert pair["shift_octaves"] == pytest.approx(math.log2(120 / 66), abs=0.001)


def test_a_pure_rate_drop_is_said(tmp_path: Path) -> None:
    """Every count halved read "0.0% of events changed bucket" and no change of rate."""
    base = write_records(tmp_path / "b.txt", {1: 1000, 2: 500}, n=10)
    half = write_records(tmp_path / "c.txt", {1: 500, 2: 250}, n=10)
    text = diff(str(base), str(half))[1]
    assert "   rate 1,500/s → 750/s (×0.50): changed\n" in text, text
    assert diff_json(base, half)["pairs"][0]["changed"] is True


def test_the_only_stream_of_each_side_is_paired_and_said_so(tmp_path: Path) -> None:
    """Two single streams were paired whatever their labels, silently."""
    a = write_records(tmp_path / "a.txt", {1: 100}, label="sda")
    b = write_records(tmp_path / "b.txt", {1: 100}, label="io")
    text = diff(str(a), str(b))[1]
    assert text.splitlines()[:2] == ["== sda → io  [bpf, millisec]",
                                     "   compared 'sda' (baseline) with 'io' (candidate): the only stream of each"]
    assert diff_json(a, b)["pairs"][0]["paired_as"] == "the only stream of each side"
    assert "paired_as" not in diff_json(a, a)["pairs"][0] and "compared " not in diff(str(a), str(a))[1]


def test_a_stream_of_the_same_label_in_another_unit_is_named_and_nothing_compared_is_said(tmp_path: Path) -> None:
    """`sda` in µs against `sda` in ms said "only in the baseline" / "only in the candidate" with no reason, and a
    diff with no stream in common had no summary."""
    ms = [write_records(tmp_path / f"{label}.txt", {1: 100}, label=label).read_text() for label in ("sda", "sdb")]
    base = tmp_path / "ms.txt"
    base.write_text("".join(ms))
    cand = tmp_path / "us.txt"
    cand.write_text(base.read_text().replace("latencyunit, millisec", "latencyunit, microsec"))
    text = diff(str(base), str(cand))[1]
    assert text.splitlines() == [
        "Nothing compared: no stream is on both sides (2 only in the baseline, 2 only in the candidate).",
        "== sda: only in the baseline (the candidate's 'sda' is microsec, not millisec)",
        "== sdb: only in the baseline (the candidate's 'sdb' is microsec, not millisec)",
        "== sda: only in the candidate (the baseline's 'sda' is millisec, not microsec)",
        "== sdb: only in the candidate (the baseline's 'sdb' is millisec, not microsec)"]
    assert diff_json(base, cand)["only_in_baseline"][0]["same_label"] == [{"datasource": "bpf", "unit": "microsec"}]


def test_a_ratio_under_a_hundredth_is_written_readably(tmp_path: Path) -> None:
    """1.17s → 3.99ms read `(×0.00)`."""
    slow = write_records(tmp_path / "slow.txt", {1024: 100})
    fast = write_records(tmp_path / "fast.txt", {2: 100})
    text = diff(str(slow), str(fast))[1]
    assert "(×0.00" not in text
    assert re.search(r"   p50 +\S+ → +\S+  -\S+ \(×1/\d{3}\)\n", text), text
    assert "latency shifted -9.00 octaves (×1/512, event-weighted log2 mean)" in text


def test_a_prometheus_p99_past_the_top_bound_gives_no_change_the_bounds_cannot_tell() -> None:
    """Real prometheus_client exporters scraped on loopback: the baseline's top finite bound is 100 ms and 30% of its
    requests take 300 ms (p99 `≥100ms`, a lower bound only); the candidate's bounds go to 1 s and its requests take
    150 ms (p99 exact: 145ms). `diff` wrote `≤+45ms (≤×1.45)` and JSON ratio 1.45: a rise the bound cannot tell
    (the baseline's p99 may be 300 ms). Now no change is written and JSON `delta_s`/`ratio` are null; a fall the
    bound does tell keeps its `≤`, and a bound on both sides tells nothing (JSON null, was ratio 1.0)."""
    slow = scraped_intervals((0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1), [0.004] * 70 + [0.3] * 30)
    steady = scraped_intervals((0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
                               [0.004] * 70 + [0.15] * 30)
    accs = [Accumulator() for _ in range(2)]
    for acc, items in zip(accs, (slow, steady), strict=True):
        acc.add(items)
    result = compare(*accs)
    p99 = result["pairs"][0]["percentiles"]["p99"]
    assert p99["open"] == ["baseline"] and p99["baseline_s"] == pytest.approx(0.1) and p99["candidate_s"] > 0.1
    assert p99["delta_s"] is None and p99["ratio"] is None
    assert re.search(r"p99 +≥100ms → +\S+ +$", compare_text(result), re.MULTILINE), compare_text(result)
    p50 = result["pairs"][0]["percentiles"]["p50"]  # exact on both sides: told
    assert p50["ratio"] == pytest.approx(p50["candidate_s"] / p50["baseline_s"]) and "open" not in p50
    same = compare(accs[0], accs[0])["pairs"][0]["percentiles"]["p99"]
    assert same["open"] == ["baseline", "candidate"] and same["delta_s"] is None and same["ratio"] is None


@pytest.mark.parametrize("x", [0.01, 0.5, 1.0, 3.841, 7.0, 20.0, 60.0, 150.0, 700.0])
def test_chi2_tail_agrees_with_its_closed_forms(x: float) -> None:
    """The hand-written chi-square tail behind `diff`'s G-test (no SciPy) against the closed forms of 1, 2, 4 and 6
    degrees of freedom, from the series side (x < df + 2) to the continued fraction's, down to p ~ 1e-150."""
    from latencymap.outputs.compare import chi2_sf

    half = x / 2
    closed = {1: math.erfc(math.sqrt(half)), 2: math.exp(-half), 4: math.exp(-half) * (1 + half),
              6: math.exp(-half) * (1 + half + half**2 / 2)}
    for df, want in closed.items():
        assert chi2_sf(x, df) == pytest.approx(want, rel=1e-9, abs=1e-300), (x, df)


def test_g_test_of_one_sample_against_itself_and_of_a_moved_one() -> None:
    from latencymap.outputs.compare import g_test

    assert g_test([10, 50, 40], [10, 50, 40]) == (0.0, 2, 1.0)
    g, df, p = g_test([100, 500, 400], [400, 500, 100])
    assert df == 2 and g > 300 and p < 1e-60


def test_a_jhiccup_log_against_a_plain_stream_says_that_one_side_measures_hiccups(fixtures: Path) -> None:
    """A jHiccup log's values are hiccups (how late a thread that only sleeps woke) and its time jHiccup's sum of them,
    not time waited: diffed against a log of requests' latencies, nothing said the two sides measure different
    things."""
    hiccups = fixtures / "hdrhistogram" / "hiccup.140623.1028.10646.hlog"
    plain = fixtures / "hdrhistogram" / "raphael.hlog"
    (pair,) = diff_json(hiccups, plain)["pairs"]
    assert (pair["baseline"]["measures"], pair["candidate"]["measures"]) == ("jhiccup", None)
    lines = diff(str(hiccups), str(plain))[1].splitlines()
    said = [line for line in lines if " measures " in line]
    assert said == ["   the baseline measures hiccups (how late a thread that only sleeps woke; its time is jHiccup's "
                    "sum of them, not time waited), nothing says the candidate does: unless it does too, the two sides "
                    "measure different things"], \
        lines
    (back,) = diff_json(plain, hiccups)["pairs"]
    assert (back["baseline"]["measures"], back["candidate"]["measures"]) == (None, "jhiccup")
    assert any(line.startswith("   the candidate measures hiccups (") for line in diff(str(plain), str(hiccups))[1]
               .splitlines())
    # both sides hiccups: nothing to say
    (same,) = diff_json(hiccups, hiccups)["pairs"]
    assert same["baseline"]["measures"] == same["candidate"]["measures"] == "jhiccup"
    assert " measures " not in diff(str(hiccups), str(hiccups))[1]


def test_a_side_whose_input_does_not_say_what_it_measures_is_not_said_to_measure_something_else(
        fixtures: Path, tmp_path: Path) -> None:
    """A `--compat` recording of a jHiccup log keeps no notes (PyLatencyMap 1.3 records): against the log itself, its
    side's `measures` is null for want of a note, not because it holds no hiccups, so the diff may not say that the two
    sides measure different things, only that they do unless the other holds hiccups too."""
    hiccups = fixtures / "hdrhistogram" / "hiccup.140623.1028.10646.hlog"
    rec = tmp_path / "compat.txt"
    recorded = CliRunner().invoke(main, ["--plain", "--once", "--compat", "--record", str(rec), str(hiccups)])
    assert recorded.exit_code == 0, recorded.output
    (pair,) = diff_json(hiccups, rec)["pairs"]
    assert (pair["baseline"]["measures"], pair["candidate"]["measures"]) == ("jhiccup", None)
    (said,) = [line for line in diff(str(hiccups), str(rec))[1].splitlines() if " measures " in line]
    assert said.startswith("   the baseline measures hiccups (how late a thread that only sleeps woke; "), said
    assert said.endswith(", nothing says the candidate does: unless it does too, the two sides measure different "
                         "things"), said


def test_gap_columns_are_counted_apart_from_the_intervals(tmp_path: Path) -> None:
    """A side's gap columns (data missing) are no intervals of it: `in 4 intervals and 2 gaps`, as the report's
    header says them (they were `in 6 intervals`); the JSON's `columns` still counts every column, `gap_columns`
    those."""
    records = []
    for k in range(6):
        gap = k in (2, 3)
        records.append(f"<begin record>\ntimestamp, microsec, {(1_700_000_001 + k) * 1_000_000}, t{k}\n"
                       "counts, interval\nlatencyunit, millisec\nlabel, reads\ndatasource, bpf\n"
                       + ("flags, gap\n" if gap else "1, 100\n") + "<end record>\n")
    gappy = tmp_path / "gappy.txt"
    gappy.write_text("".join(records))
    plain = write_records(tmp_path / "plain.txt", {1: 100}, n=4)
    text = diff(str(plain), str(gappy))[1]
    assert "   baseline 400 events in 4 intervals; candidate 400 events in 4 intervals and 2 gaps\n" in text
    (pair,) = diff_json(plain, gappy)["pairs"]
    assert (pair["baseline"]["columns"], pair["baseline"]["gap_columns"]) == (4, 0)
    assert (pair["candidate"]["columns"], pair["candidate"]["gap_columns"]) == (6, 2)


def strict_json(text: str) -> dict:
    """JSON as any other reader takes it: `Infinity` and `NaN` are not JSON."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_percentiles_in_the_overflow_bucket_with_the_largest_value_known_are_not_equal(tmp_path: Path) -> None:
    """OpenTelemetry points with min and max, 2% of the values past the last bound (1.2 or 1.5 s, then 5 or 9 s): the
    text crashed (`cannot convert float infinity to integer`) and the JSON said p99 ×2.45 was equal, its bucket
    `[10, Infinity]` (not JSON). An overflow bucket is no bucket that says two values are one."""
    import random

    from otlp_support import otlp_json_file

    rnd = random.Random(1)
    fast = [rnd.uniform(1, 9) for _ in range(980)]
    base = otlp_json_file(tmp_path / "base.jsonl", fast + [rnd.choice([1200.0, 1500.0]) for _ in range(20)],
                          (10.0, 100.0, 1000.0))
    cand = otlp_json_file(tmp_path / "cand.jsonl", fast + [rnd.choice([5000.0, 9000.0]) for _ in range(20)],
                          (10.0, 100.0, 1000.0))
    (pair,) = strict_json(diff("--format", "json", str(base), str(cand))[1])["pairs"]
    for k in ("p99", "p999"):
        stat = pair["percentiles"][k]
        assert "same_bucket_s" not in stat and stat["ratio"] > 2 and stat["delta_s"] > 1, (k, stat)
    text = diff(str(base), str(cand))[1]
    assert re.search(r"p99 +\S+ → +\S+  \+\S+ \(×[2-9]\.\d\d\)", text), text  # (×5.13: base ≤1.5s, cand ≥5s)
    assert "  = (" not in text


def test_percentiles_in_one_bucket_whose_values_seen_are_apart_are_not_equal(tmp_path: Path) -> None:
    """One bucket (250 ms, 1 s], min and max said: 280–320 ms, then 850–950 ms. Every percentile read `=` (one bucket
    of the source's), though the baseline's largest value is under the candidate's smallest: ×3. Values seen that
    overlap in one bucket are still `=`: there the source cannot tell the two apart."""
    import random

    from otlp_support import otlp_json_file

    rnd = random.Random(2)
    base = otlp_json_file(tmp_path / "base.jsonl", [rnd.uniform(280, 320) for _ in range(1000)], (250.0, 1000.0))
    cand = otlp_json_file(tmp_path / "cand.jsonl", [rnd.uniform(850, 950) for _ in range(1000)], (250.0, 1000.0))
    (pair,) = strict_json(diff("--format", "json", str(base), str(cand))[1])["pairs"]
    for k in ("p50", "p90", "p99", "p999"):
        stat = pair["percentiles"][k]
        assert "same_bucket_s" not in stat and stat["ratio"] == pytest.approx(3, rel=0.1), (k, stat)
    assert "  = (" not in diff(str(base), str(cand))[1]

    wide = otlp_json_file(tmp_path / "wide.jsonl", [rnd.uniform(300, 900) for _ in range(1000)], (250.0, 1000.0))
    wider = otlp_json_file(tmp_path / "wider.jsonl", [rnd.uniform(320, 950) for _ in range(1000)], (250.0, 1000.0))
    (pair,) = strict_json(diff("--format", "json", str(wide), str(wider))[1])["pairs"]
    p50 = pair["percentiles"]["p50"]
    assert p50["same_bucket_s"] == [0.25, 1.0] and p50["delta_s"] == 0.0 and p50["ratio"] == 1.0
    assert re.search(r"p50 +\S+ → +\S+  = \(one bucket of the source's, 750ms wide\)", diff(str(wide), str(wider))[1])


def uniform_latencies(path: Path, seed: int, spans: list[tuple[int, float, float]], seconds: float = 20.0) -> Path:
    """Raw `time latency(µs)` lines over `seconds`: for each (n, low, high) of `spans`, n values uniform in it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lat = np.concatenate([rng.uniform(low, high, n) for n, low, high in spans])
    rng.shuffle(lat)
    times = np.sort(rng.uniform(0, seconds, lat.size))
    path.write_text("".join(f"{t:.6f} {v:.3f}\n" for t, v in zip(times, lat, strict=True)))
    return path


def test_a_slow_band_that_moved_is_said_and_is_a_change(tmp_path: Path) -> None:
    """0.25% of the events at 3–4 ms, then at 6.5–7.5 ms, beside 300–450 µs: the slow band's latency doubled. Within
    an octave of each other the two are one band (neither appeared nor vanished), its shares alike: the diff read
    `no change that matters` and --fail-on-change exited 0. A band that moved half an octave or more is a change."""
    base = uniform_latencies(tmp_path / "b.txt", 1, [(19_950, 300, 450), (50, 3000, 4000)])
    cand = uniform_latencies(tmp_path / "c.txt", 2, [(19_950, 300, 450), (50, 6500, 7500)])
    (pair,) = diff_json(base, cand)["pairs"]
    assert pair["bands_appeared"] == [] and pair["bands_vanished"] == []
    (moved,) = pair["bands_moved"]
    assert moved["ratio"] == pytest.approx(7 / 3.5, rel=0.05) and moved["octaves"] == pytest.approx(1, abs=0.07)
    assert moved["baseline"]["low_s"] < 0.004 < moved["candidate"]["low_s"]
    assert pair["changed"] is True and "bands" in pair["test"]["effects"]
    result = CliRunner().invoke(main, ["diff", "--fail-on-change", str(base), str(cand)])
    assert result.exit_code == 1, result.output
    assert re.search(r"^   band moved: \S+ → \S+ \(×2\.0\d\)$", result.stdout, re.MULTILINE), result.stdout


def test_a_band_moved_under_half_an_octave_is_not_said(tmp_path: Path) -> None:
    """HdrHistogram logs (the library's), every value 130 µs, then 140 µs (×1.08, across a row edge at 131 µs): one
    band, not moved, neither appeared nor vanished. From 66 µs to 130 µs it moved ×1.97, and the pair changed."""
    from hdr_support import Logged, write_library_log

    start = 1.7e9

    def log(name: str, ns: int) -> Path:
        return write_library_log(tmp_path / name, [Logged(None, start + i, 1.0, [ns] * 1000) for i in range(10)],
                                 start, start)

    d, e, f = log("d.hlog", 66_000), log("e.hlog", 130_000), log("f.hlog", 140_000)
    (pair,) = diff_json(e, f)["pairs"]
    assert pair["bands_moved"] == pair["bands_appeared"] == pair["bands_vanished"] == []
    assert "band" not in diff(str(e), str(f))[1]
    (pair,) = diff_json(d, e)["pairs"]
    assert pair["changed"] is True and pair["bands_appeared"] == pair["bands_vanished"] == []
    (moved,) = pair["bands_moved"]
    assert moved["ratio"] == pytest.approx(130 / 66, rel=0.01)


def test_a_shift_inside_one_coarse_bucket_of_the_source_is_read_from_its_exact_sums(tmp_path: Path) -> None:
    """OpenTelemetry points without min and max, every value in (250 ms, 1 s]: 280–320 ms, then 850–950 ms. The shift
    came from the source's bucket's centre, one for both: `no change` beside `mean 300ms → 900ms (×3.00)`. The rows,
    placed by each point's exact sum, are finer than a bucket two octaves wide: they say where the events lie."""
    import random

    from otlp_support import otlp_json_file

    rnd = random.Random(3)
    base = otlp_json_file(tmp_path / "base.jsonl", [rnd.uniform(280, 320) for _ in range(1000)], (250.0, 1000.0),
                          min_max=False)
    cand = otlp_json_file(tmp_path / "cand.jsonl", [rnd.uniform(850, 950) for _ in range(1000)], (250.0, 1000.0),
                          min_max=False)
    (pair,) = diff_json(base, cand)["pairs"]
    assert pair["changed"] is True
    assert pair["shift_octaves"] == pytest.approx(math.log2(3), abs=0.1)
    assert pair["percentiles"]["mean"]["ratio"] == pytest.approx(3, rel=0.02)
    result = CliRunner().invoke(main, ["diff", "--fail-on-change", str(base), str(cand)])
    assert result.exit_code == 1, result.output


def sampled(columns: list[list[float]] | list, unit: str = "microsec", label: str = "io") -> Accumulator:
    """An accumulator of one bpf stream in `unit`: per 1-second column, its raw values (in `unit`) binned with their
    exact sums, as a reader of raw values gives them."""
    from latencymap.core.buckets import bin_values
    from latencymap.core.model import Interval, StreamId
    from latencymap.core.units import unit_seconds

    stream, acc = StreamId(label, "bpf", unit), Accumulator()
    for k, values in enumerate(columns):
        counts, sums = bin_values(np.asarray(values, dtype=np.float64))
        acc.add([Interval(stream, 1.7e9 + k, 1.7e9 + k + 1, counts, sums * unit_seconds(unit))])
    return acc


def test_the_same_values_in_two_units_read_no_change() -> None:
    """9,000 values in ms against the same values in µs (or ns) read changed, G = 24,953, p = 0, and
    `--fail-on-change` failed: a stream's rows are powers of two of its unit, `[1 ms, 2 ms)` against `[1.024 ms,
    2.048 ms)`, and no bucket of one side was a bucket of the other. The candidate's buckets are cut at the
    baseline's rows now, tested only beyond where their values may lie: the same values read unchanged, said so."""
    rng = np.random.default_rng(3)
    ms = [rng.lognormal(np.log(5), 0.5, 300) for _ in range(30)]
    spike = [np.full(300, 1.01) for _ in range(3)]  # 1.01 ms: [1, 2) ms, but [512, 1024) µs
    for values in (ms, spike):
        for unit, scale in (("microsec", 1e3), ("nanosec", 1e6)):
            for base, cand in ((sampled(values, "millisec"), sampled([v * scale for v in values], unit)),
                               (sampled([v * scale for v in values], unit), sampled(values, "millisec"))):
                result = compare(base, cand)
                (pair,) = result["pairs"]
                assert pair["changed"] is False, (unit, pair["test"])
                assert pair["candidate_rebinned"] is True and pair["test"]["p"] > 0.5
                assert sum(row["candidate_events"] for row in pair["buckets"]) == pair["candidate"]["events"]
    (pair,) = compare(sampled(ms, "millisec"), sampled(ms, "millisec"))["pairs"]
    assert pair["candidate_rebinned"] is False
    text = compare_text(compare(sampled(ms, "millisec"), sampled([v * 1e3 for v in ms], "microsec")))
    assert "   units differ: the candidate's microsec buckets cut at the baseline's millisec rows (log-uniform " \
           "within each); tested only beyond where their values may lie\n" in text
    assert "   no change beyond chance: " in text


def test_a_change_in_two_units_still_reads_changed() -> None:
    """The same regressions in another unit are still told: ×1.1 and a 2% band at 20 ms beside 5 ms."""
    rng = np.random.default_rng(4)
    base = [rng.lognormal(np.log(5), 0.5, 3000) for _ in range(10)]
    other = [rng.lognormal(np.log(5), 0.5, 3000) for _ in range(10)]
    band = [np.concatenate([v[:2940], rng.lognormal(np.log(20), 0.2, 60)]) for v in other]
    for cand in ([v * 1.1 for v in other], band):
        (pair,) = compare(sampled(base, "millisec"), sampled([v * 1e3 for v in cand], "microsec"))["pairs"]
        assert pair["changed"] is True and pair["test"]["p"] < 0.001, pair["test"]
    (pair,) = compare(sampled(base, "millisec"), sampled([v * 1e3 for v in other], "microsec"))["pairs"]
    assert pair["changed"] is False


def one_row(rng: np.random.Generator, n: int) -> list:
    """One column of `n` values all within 64–128 µs (one row): the hunter's one-bucket samples."""
    return [np.clip(rng.lognormal(np.log(90), 0.5, n), 64.5, 127.5)]


def lognormal(rng: np.random.Generator, n: int) -> list:
    """One column of `n` values around 300 µs over several rows."""
    return [rng.lognormal(np.log(300), 0.5, n)]


def slow_band(rng: np.random.Generator, n: int) -> list:
    """Two columns of `n` values, 5% of them in a band at 8 ms."""
    return [np.where(rng.random(n) < 0.05, rng.lognormal(np.log(8000), 0.3, n), rng.lognormal(np.log(300), 0.5, n))
            for _ in range(2)]


SMALL_SAMPLES = [(one_row, n) for n in (1, 3, 10, 30)] + [(lognormal, n) for n in (1, 10)] \
    + [(slow_band, n) for n in (5, 10)]


def test_small_samples_of_one_distribution_differ_within_chance() -> None:
    """Over 20 seeds of 1 column of 10 events, 6 pairs of samples of one distribution read changed: every event of a
    column's bucket was put at its exact mean, so one bucket had no spread and the shift test read p = 0 ("sides of
    one value each differ beyond chance"), as did a band's move (the same test); and G's chi-square tail read 10
    events a side in 3 buckets p = 0.0004. The spread its bucket leaves each event counts now (Student's t, degrees
    of freedom from the events), and a sparse table's G is tested by drawing tables: over 60 seeds of each of these
    tiny and small samples the shift is never beyond chance (p < 0.001), and G no more often than chance has it."""
    from latencymap.outputs.compare import ALPHA, g_test, locations, shift_test

    shifted, spread = [], []
    for draw, n in SMALL_SAMPLES:
        for seed in range(60):
            hists = [next(iter(sampled(draw(np.random.default_rng(2 * seed + side), n)).streams.values()))
                     for side in (0, 1)]
            where = [locations(h, None, int(h.counts.sum())) for h in hists]
            shift, shift_p = shift_test(*where)
            if shift_p < ALPHA:
                shifted.append((draw.__name__, n, seed, shift, shift_p))
            g_p = g_test(*(h.counts.sum(axis=0).tolist() for h in hists))[2]
            if g_p < ALPHA:
                spread.append((draw.__name__, n, seed, g_p))
    assert shifted == []
    assert len(spread) <= 2, spread  # of 480 tables, 0.48 by chance at p < 0.001


@pytest.mark.slow
def test_small_samples_of_one_distribution_read_unchanged() -> None:
    """The whole diff of 20 seeds of each of those samples: none reads changed (6 of 20 pairs of 1 column of 10 events
    did; bands moved by chance)."""
    changed = []
    for draw, n in SMALL_SAMPLES:
        for seed in range(20):
            (pair,) = compare(*(sampled(draw(np.random.default_rng(1000 + 2 * seed + side), n))
                                for side in (0, 1)))["pairs"]
            if pair["changed"]:
                changed.append((draw.__name__, n, seed, pair["test"], len(pair["bands_moved"])))
    assert changed == []


def test_an_unchanged_pair_lists_no_band_and_a_changed_one_says_changed(tmp_path: Path) -> None:
    """32 events a side, 2 of them at 5 ms, then at 12 ms: `no change beyond chance` (G-test p = 0.11), and right
    under it `band appeared` and `band vanished` (JSON `bands_appeared` and `bands_vanished` too): what differs by
    chance is no band that came or went. A changed pair never said `changed`; it says why now."""
    rng = np.random.default_rng(1)
    main_b, main_c = rng.lognormal(np.log(300), 0.3, 30), rng.lognormal(np.log(300), 0.3, 30)
    result = compare(sampled([np.concatenate([main_b, [5000, 5200]])]),
                     sampled([np.concatenate([main_c, [12000, 12500]])]))
    (pair,) = result["pairs"]
    assert pair["changed"] is False and "bands" in pair["test"]["effects"]
    assert pair["bands_appeared"] == pair["bands_vanished"] == pair["bands_changed"] == pair["bands_moved"] == []
    text = compare_text(result)
    assert "   no change beyond chance: " in text and "band" not in text and "changed" not in text

    base = write_records(tmp_path / "base.txt", {1: 100, 2: 50})
    slower = write_records(tmp_path / "slower.txt", {4: 100, 8: 50})
    lines = diff(str(base), str(slower))[1].splitlines()
    assert re.fullmatch(r"   changed: bucket shares beyond chance \(G-test p = \S+\) by the shift, events' shares, "
                        r"time's shares and bands; shift beyond chance \(p = \S+\)", lines[3]), lines
    halved = write_records(tmp_path / "half.txt", {1: 50, 2: 25}, n=3)
    assert re.search(r"^   changed: rate beyond chance \(p = \S+\)$", diff(str(base), str(halved))[1], re.M)


def test_the_main_band_that_made_room_for_a_new_one_is_not_said_to_have_changed(tmp_path: Path) -> None:
    """A band at 512 ms appeared beside 1 ms (10% of the events, 98% of the time): the 1 ms band read `band changed:
    1ms–2ms: 100.0% → 90.0% (×0.90) of events, 100.0% → 1.7% (×0.02) of the time`, though it only made room. The band
    of most events is left out when another band changed, appeared or vanished; and the other way round."""
    one = write_records(tmp_path / "one.txt", {1: 1000})
    two = write_records(tmp_path / "two.txt", {1: 900, 512: 100})
    for base, cand, key in ((one, two, "bands_appeared"), (two, one, "bands_vanished")):
        (pair,) = diff_json(base, cand)["pairs"]
        assert pair["changed"] is True and len(pair[key]) == 1 and pair["bands_changed"] == []
        assert "band changed" not in diff(str(base), str(cand))[1]


@pytest.mark.parametrize("t", [0.01, 0.5, 1.0, 2.0, 3.3, 10.0, 100.0])
def test_t_tail_agrees_with_its_closed_forms(t: float) -> None:
    """The hand-written Student's t tail behind the shift test (no SciPy) against the closed forms of 1 and 2 degrees
    of freedom, and the normal tail it nears with many."""
    from latencymap.outputs.compare import t_test_p

    assert t_test_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-9)
    assert t_test_p(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9)
    if t < 5:
        assert t_test_p(t, 200_000) == pytest.approx(math.erfc(t / math.sqrt(2)), rel=1e-3)


def test_a_sparse_g_test_draws_its_p() -> None:
    """4 events a side, all apart: G's chi-square tail says p = 0.00087, beyond chance, where 2 tables of 70 are as far
    apart (the exact p, Fisher's: 0.029). Tables with every bucket expecting 5 events or more keep the tail."""
    from latencymap.outputs.compare import chi2_sf, g_test

    g, df, p = g_test([4, 0], [0, 4])
    assert chi2_sf(g, df) < 0.001 and p == pytest.approx(2 / 70, abs=0.005)
    assert g_test([4, 0], [0, 4]) == (g, df, p)  # seeded: the same counts, the same p
    g, df, p = g_test([60, 40], [40, 60])
    assert p == chi2_sf(g, df)
