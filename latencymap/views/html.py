"""`report --format html`: one self-contained page, each stream's maps as inline SVG plus its findings.

No scripts, fonts, images or styles are fetched: a Content-Security-Policy forbids every network
load and the only style is inline. Tooltips are the SVG cells' `<title>` elements.
"""

from __future__ import annotations

from latencymap import __version__
from latencymap.core.accumulator import Accumulator
from latencymap.outputs.report import Causes, epoch_lines, peer_lines
from latencymap.views.svg import (
    EPOCHS_TITLE,
    FONT,
    NOTES_TITLE,
    PEERS_TITLE,
    UNPLACED_TITLE,
    Notes,
    Stragglers,
    Unplaced,
    esc,
    findings_lines,
    notes_lines,
    panel,
    svg_element,
    unplaced_lines,
)

_STYLE = f"""
body {{ font-family: {FONT}; font-size: 13px; margin: 16px; color: #111; background: #fff; }}
h1 {{ font-size: 18px; }}
h2 {{ font-size: 15px; }}
section {{ margin-bottom: 28px; border-top: 1px solid #ccc; padding-top: 8px; }}
ul.findings {{ list-style: none; padding-left: 78px; margin: 0; }}
ul.findings li {{ white-space: pre-wrap; }}
.errors {{ color: #a00; }}
"""


def render_html(acc: Accumulator, stragglers: Stragglers | None = None, title: str = "latencymap report",
                unplaced: Unplaced | None = None, notes: Notes | None = None, causes: Causes | None = None) -> str:
    """The page: the peer comparison, the epoch start-up findings (analysis/epochs.py), then a section per stream
    (stragglers keyed by stream; `causes`: see `report.Causes`), then the stragglers of no stream shown, then the
    sources' other `notes` (stages, application time)."""
    body: list[str] = [f"<h1>{esc(title)}</h1>"]
    body += _lines_section(peer_lines(acc), PEERS_TITLE, "peers")
    body += _lines_section(epoch_lines(acc), EPOCHS_TITLE, "epochs")
    for hist in acc.streams.values():
        found = (stragglers or {}).get(hist.stream)
        elems, width, height = panel(hist, with_findings=False, acc=acc)
        said = findings_lines(hist, found, acc, (causes or {}).get(hist.stream))
        items = "\n".join(f"<li>{esc(line)}</li>" for line in said)
        body.append(f'<section class="stream" data-stream="{esc(hist.stream.label)}">\n'
                    f"{svg_element(elems, width, height)}"
                    f'<ul class="findings">\n{items}\n</ul>\n</section>')
    if not acc.streams:
        body.append("<p>No data.</p>")
    body += _lines_section(unplaced_lines(unplaced), UNPLACED_TITLE, "unplaced")
    body += _lines_section(notes_lines(notes), NOTES_TITLE, "analysis")
    if acc.skipped:
        msgs = "".join(f"<li>{esc(m)}</li>" for m in acc.messages[:10])
        body.append(f'<div class="errors">Skipped records: {acc.skipped}<ul>{msgs}</ul></div>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            f"<meta name=\"generator\" content=\"latencymap {esc(__version__)}\">\n"
            f"<title>{esc(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def _lines_section(lines: list[str], title: str, kind: str) -> list[str]:
    """A section of lines under `title` (the peer comparison, the stragglers of no stream, the sources' notes); none
    without lines."""
    if not lines:
        return []
    items = "\n".join(f"<li>{esc(line)}</li>" for line in lines)
    return [f'<section class="{kind}">\n<h2>{esc(title)}</h2>\n<ul class="findings">\n{items}\n</ul>\n</section>']
