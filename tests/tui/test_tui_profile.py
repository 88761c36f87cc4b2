"""Pilot tests of the profile panel: cursor column, marked range, ranges A/B, export, and failures shown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tui_support import synthetic, told, wait_ended

from latencymap.profiling.samples import Sample
from latencymap.profiling.session import ProfileSession, profiled
from latencymap.profiling.store import ProfileStore
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.profile_panel import ProfilePanel

T0 = 1_700_000_000.0
SIZE = (160, 60)


def phase_store() -> ProfileStore:
    """10 s: fast_phase for the first 5 one-second columns, slow_phase (with a helper) for the last 5."""
    store = ProfileStore()
    base = ("<module> (/app/job.py:50)", "main (/app/job.py:40)")
    samples = []
    for k in range(1000):
        t = T0 + k / 100
        if t < T0 + 5:
            leaf = ("fast_phase (/app/job.py:10)",)
        elif k % 4:
            leaf = ("slow_phase (/app/job.py:20)",)
        else:
            leaf = ("slow_phase (/app/job.py:21)", "helper (/app/util.py:3)")
        samples.append(Sample(t, 9, 1, (*base, *leaf), 0.01))
    store.add(samples)
    return store


def panel_rows(app: LatencyMapApp) -> list[str]:
    return app.query_one(ProfilePanel).plain_text(150).splitlines()


def run(app: LatencyMapApp, scenario) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ended(pilot)
            await scenario(pilot)

    asyncio.run(main())


def test_no_profile_no_panel_and_profile_keys_only_say_so() -> None:
    app = LatencyMapApp(iter(synthetic(10, start=T0)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert not app.query(ProfilePanel)
        await pilot.press("x", "m", "a")
        assert any("no profile" in m for m in told(app))

    run(app, scenario)


def test_panel_follows_the_cursor_column() -> None:
    app = LatencyMapApp(iter(synthetic(10, start=T0)), color_mode="truecolor",
                        profile=ProfileSession(phase_store()))

    async def scenario(pilot) -> None:
        panel = app.query_one(ProfilePanel)
        assert panel.selection == (T0 + 9, T0 + 10)
        rows = panel_rows(app)
        assert "100 samples" in rows[0]
        assert rows[2].split()[:4] == ["75", "75.0", "100.0", "slow_phase"]
        assert any(r.split()[:4] == ["25", "25.0", "25.0", "helper"] for r in rows)
        assert any("main › slow_phase › helper" in r for r in rows)
        await pilot.press(*["left"] * 6)
        await pilot.pause(0.4)
        assert panel.selection == (T0 + 3, T0 + 4)
        rows = panel_rows(app)
        assert rows[2].split()[:4] == ["100", "100.0", "100.0", "fast_phase"]
        assert "flame <module> › main › fast_phase" in "\n".join(rows)

    run(app, scenario)


def test_marked_ranges_flame_and_what_grew_from_a_to_b() -> None:
    app = LatencyMapApp(iter(synthetic(10, start=T0)), color_mode="truecolor",
                        profile=ProfileSession(phase_store()))

    async def scenario(pilot) -> None:
        panel = app.query_one(ProfilePanel)
        await pilot.press("home", "m", *["right"] * 3)
        await pilot.pause(0.4)
        assert panel.selection == (T0, T0 + 4)
        assert "marked" in panel_rows(app)[0] and "400 samples" in panel_rows(app)[0]
        await pilot.press("a")
        await pilot.press(*["right"] * 2, "m", *["right"] * 4, "b")
        await pilot.pause(0.4)
        marks = app.profiler.marks
        assert marks.a == (T0, T0 + 4) and marks.b == (T0 + 5, T0 + 10) and marks.anchor is None
        text = "\n".join(panel_rows(app))
        assert "A→B     400 → 500 samples" in text
        rows = [r.split("│", 1)[1].split() for r in text.splitlines() if "+100.0" in r or "+25.0" in r or "-100.0" in r]
        assert rows == [["0.0", "100.0", "+100.0", "grew", "slow_phase", "(job.py)", "(new)"],
                        ["0.0", "25.0", "+25.0", "helper", "(util.py)", "(new)"],
                        ["100.0", "0.0", "-100.0", "shrank", "fast_phase", "(job.py)", "(gone)"]]
        await pilot.press(*["left"] * 6, "m", *["right"] * 3)
        await pilot.pause(0.4)
        assert panel.selection == (T0 + 3, T0 + 7)
        text = "\n".join(panel_rows(app))
        flame = text[text.index("flame"):].splitlines()
        assert flame[0] == "flame <module> › main"
        assert flame[1].startswith("fast_phase") and "▏slow_phase" in flame[1]
        assert flame[2].strip().startswith("helper") and flame[2].startswith(" ")
        await pilot.press("c")
        await pilot.pause(0.4)
        assert marks.a is None and marks.b is None and "top stacks" in "\n".join(panel_rows(app))

    run(app, scenario)


def test_x_exports_the_selection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(synthetic(10, start=T0)), color_mode="truecolor",
                        profile=ProfileSession(phase_store()))

    async def scenario(pilot) -> None:
        await pilot.press("left", "m", "left", "x")
        await pilot.pause(0.2)
        collapsed, speedscope = app.profiler.exported
        assert collapsed.parent == tmp_path and collapsed.name.endswith(".collapsed.txt")
        counts = {}
        for line in collapsed.read_text().splitlines():
            stack, count = line.rsplit(" ", 1)
            counts[stack] = int(count)
        assert sum(counts.values()) == 200
        assert counts["<module> (/app/job.py:50);main (/app/job.py:40);slow_phase (/app/job.py:21);"
                      "helper (/app/util.py:3)"] == 50
        doc = json.loads(speedscope.read_text())
        assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
        assert abs(sum(doc["profiles"][0]["weights"]) - 2.0) < 1e-6
        assert told(app)[-1] == f" profile  saved {collapsed.name} and {speedscope.name}"

    run(app, scenario)


def test_pyspy_missing_is_a_notice_and_the_view_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATENCYMAP_PY_SPY", "/nonexistent/py-spy")
    session = ProfileSession(ProfileStore(), pid=1, echo=False)
    app = LatencyMapApp(profiled(iter(synthetic(10, start=T0)), session), color_mode="truecolor", profile=session)

    async def scenario(pilot) -> None:
        assert app.acc.intervals_seen == 10 and app.return_code is None
        await pilot.pause(0.2)
        assert "py-spy not found" in panel_rows(app)[0]
        assert any("py-spy not found" in m for m in told(app))
        assert "0 samples" in panel_rows(app)[0]
        await pilot.press("x")

    run(app, scenario)


def test_narrow_panel_keeps_every_percentage_whole() -> None:
    """At 120 columns the function names shrink; the numbers are never cut to `9…`."""
    app = LatencyMapApp(iter(synthetic(10, start=T0)), color_mode="truecolor",
                        profile=ProfileSession(phase_store()))

    async def main() -> None:
        async with app.run_test(size=(120, 60)) as pilot:
            await wait_ended(pilot)
            await pilot.press("home", "m", *["right"] * 3, "a", *["right"] * 2, "m", *["right"] * 4, "b")
            await pilot.pause(0.4)
            panel = app.query_one(ProfilePanel)
            rows = panel.plain_text(panel.size.width).splitlines()
            assert panel.size.width < 80
            assert rows[2].split()[:3] == ["75", "75.0", "100.0"] and "+100.0" in rows[2].split("│")[1]
            assert rows[1].split()[:3] == ["self", "self%", "total%"]
            assert "-100.0" in "\n".join(rows)

    asyncio.run(main())
