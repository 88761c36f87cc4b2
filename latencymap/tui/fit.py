"""Header lines fitted to a width in terminal cells: the least important fields go first, none is cut mid-way."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.widget import Widget

from latencymap.core.sanitize import cell_width, clean_text, cut_middle
from latencymap.tui.overview_names import distinct_name


@dataclass(frozen=True, slots=True)
class Field:
    """A piece of a line (with its leading spaces); the lowest `rank` is dropped first.

    `shrink` > 0: cut in the middle down to that many cells instead of being dropped (a label), and dropped only at
    rank `drop_at` (0: never), where fields ranked above its own must go but not above that;
    `group`: a `head` field (a heading) goes when the last other field of its group does;
    `among`, `named`: the labels a label (`among[named]`, shown cleaned) is to be told apart from: shrunk, it is cut
    around what tells it apart from them (`distinct_name`, as the overview's list cuts them), not in its middle.
    """

    text: str
    style: str = ""
    rank: int = 0
    shrink: int = 0
    group: str = ""
    head: bool = False
    drop_at: int = 0
    among: tuple[str, ...] = ()
    named: int = -1


def _width(fields: list[Field]) -> int:
    return sum(cell_width(f.text) for f in fields)


def _shrunk(field: Field, cells: int) -> Field:
    """`field` cut to `cells` cells (its leading spaces kept): in the middle, or around what tells it apart from the
    labels it is among (`Field.among`)."""
    body = field.text.lstrip(" ")
    lead = field.text[: len(field.text) - len(body)]
    room = max(1, cells - len(lead))
    cut = clean_text(distinct_name(field.among, field.named, room)) if field.among else cut_middle(body, room)
    return replace(field, text=lead + cut)


def _headed(fields: list[Field]) -> list[Field]:
    """`fields` less the headings whose group has no other field left."""
    groups = {f.group for f in fields if f.group and not f.head}
    return [f for f in fields if not f.head or f.group in groups]


def fit_fields(fields: list[Field], width: int) -> list[Field]:
    """The fields that fit in `width` cells, in their order: by rank, the lowest are dropped (or shrunk) first."""
    kept = list(fields)
    ranks = {f.rank for f in fields if not f.head} | {f.drop_at for f in fields if f.shrink and f.drop_at}
    for rank in sorted(ranks):
        if _width(_headed(kept)) <= width:
            break
        for k in range(len(kept) - 1, -1, -1):
            field = kept[k]
            over = _width(_headed(kept)) - width
            if field.head or over <= 0:
                continue
            if field.shrink and field.rank == rank:
                kept[k] = _shrunk(field, max(field.shrink, cell_width(field.text) - over))
            elif (field.rank == rank and not field.shrink) or (field.shrink and field.drop_at == rank):
                del kept[k]
    return _headed(kept)


def fit_line(fields: list[Field], width: int) -> Text:
    """One line of `fields` fitted to `width` cells (cropped with … only when even the most important do not fit)."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for field in fit_fields(fields, width):
        text.append(field.text, style=field.style or None)
    text.truncate(max(1, width), overflow="ellipsis")
    return text


def fit_lines(lines: list[list[Field]], width: int) -> Text:
    """Several lines, each fitted to `width` cells."""
    return Text("\n", no_wrap=True, end="").join(fit_line(line, width) for line in lines)


class FittedText(Widget):
    """Lines of fields drawn fitted to the widget's width (fitted again when it changes)."""

    DEFAULT_CSS = "FittedText { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }"

    def __init__(self, lines: list[list[Field]] | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[list[Field]] = lines or []

    def update(self, lines: list[list[Field]]) -> None:
        """Draw `lines` on the next repaint."""
        if lines != self.lines:
            relayout = len(lines) != len(self.lines)
            self.lines = lines
            self.refresh(layout=relayout)

    def render(self) -> Text:
        return fit_lines(self.lines, self.size.width or 10_000)
