"""The footer on a narrow terminal: the least needed keys are left out whole (the command palette's first, the
difference map's marks and key together), so `? Help` and `s Save` stay on the line instead of being cut off its
end; on a wide one every key is there as before, and a resize fits it again."""

from __future__ import annotations

from test_tui_layout import screen_lines
from tui_support import ranks, run_ended

from latencymap.tui.app import LatencyMapApp
from latencymap.tui.footer import left_out
from latencymap.tui.overview import OverviewScreen

#: The overview's keys at 80 columns: (action, cells) as the footer draws them.
OVERVIEW_KEYS = [("open", 8), ("order", 9), ("filter", 10), ("mark('A')", 10), ("mark('B')", 10), ("difference", 7),
                 ("quit", 8), ("pause", 13), ("save", 8), ("help", 8), ("command_palette", 14)]
MAP_KEYS = ["Stream", "Quit", "Pause", "Lin/log", "Freq", "Intens", "Pctl", "Inspector", "Save", "Help"]


def test_the_least_needed_keys_go_first_and_help_never() -> None:
    assert left_out(OVERVIEW_KEYS, 200) == set()
    assert left_out(OVERVIEW_KEYS, 80) == {"command_palette", "mark('A')", "mark('B')", "difference"}
    assert "help" not in left_out(OVERVIEW_KEYS, 5)


def test_the_footer_at_80x24_shows_help_and_save_on_the_overview_and_the_map_screen() -> None:
    """The hunt's ov300_80x24.png: the overview's footer ended `q Quit  space`, `s Save` and `? Help` cut off; the map
    screen's ended `p Pct`."""
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        await pilot.pause(0.3)
        footer = screen_lines(app)[-1]
        assert all(key in footer for key in ("⏎ Open", "q Quit", "space Pause", "s Save", "? Help")), footer
        assert footer.rstrip().endswith("? Help"), footer  # nothing cut after it
        await pilot.press("enter")
        await pilot.pause(0.3)
        footer = screen_lines(app)[-1]
        assert all(key in footer for key in ("tab Stream", "q Quit", "space Pause", "s Save", "? Help")), footer
        assert footer.rstrip().endswith("? Help"), footer

    run_ended(app, scenario, size=(80, 24))


def test_a_wide_footer_keeps_every_key_and_a_narrowed_one_is_fitted_again() -> None:
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("enter")
        await pilot.pause(0.3)
        footer = screen_lines(app)[-1]
        assert all(key in footer for key in MAP_KEYS) and "^p palette" in footer, footer
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.5)
        footer = screen_lines(app)[-1]
        assert "s Save" in footer and footer.rstrip().endswith("? Help"), footer
        await pilot.resize_terminal(160, 50)
        await pilot.pause(0.5)
        footer = screen_lines(app)[-1]
        assert all(key in footer for key in MAP_KEYS), footer

    run_ended(app, scenario, size=(160, 50))
