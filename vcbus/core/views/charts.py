"""Charts as inline SVG, the one chart code of the dashboard and of ``simulate --html``.

No CDN and no script: each function returns an ``<figure>`` holding an ``<svg>`` that a
page embeds as it is. :func:`line_chart` draws series over time (cluster utilisation, each
queue's share against its deserved share, pending jobs by reason); :func:`gantt` draws one
bar per job from its submission to its start (waiting) and on to its end (running),
coloured by queue. Every value that comes from outside (names, labels) is escaped.

Each drawn series is a ``<polyline class="series">`` with ``data-series`` (its name) and
``data-points`` (its points as ``x,y`` pairs, unscaled), and each Gantt bar a ``<rect>``
with ``data-job``, ``data-queue``, ``data-from`` and ``data-to``, so a test (or a reader's
tool) reads the values back from the page. A chart holds at most :data:`MAX_POINTS`
points per series and a Gantt at most :data:`MAX_BARS` jobs (the first, by submission),
so a page stays small whatever the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

MAX_POINTS = 720
"""Points drawn per series at most (the newest)."""

MAX_BARS = 400
"""Jobs drawn in a Gantt at most (the first submitted); the rest are counted."""

PALETTE = (
    "#2f6fdb",
    "#e0524a",
    "#2e9d5b",
    "#f0a93b",
    "#8a2fb0",
    "#1aa3b8",
    "#b5651d",
    "#d6409f",
    "#6b7a8f",
    "#7cb342",
)
"""Series and queue colours, in order; they repeat past ten."""

WIDTH = 640
HEIGHT = 220
LEFT = 52
RIGHT = 12
TOP = 12
BOTTOM = 28
ROW = 14
"""A Gantt row's height in pixels."""


def esc(value: object) -> str:
    """``value`` as text safe in SVG and HTML content and quoted attributes."""
    return escape(str(value), quote=True)


def colour(index: int) -> str:
    """The ``index``-th colour of :data:`PALETTE` (repeating)."""
    return PALETTE[index % len(PALETTE)]


def _number(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@dataclass(frozen=True, slots=True)
class Series:
    """One line: a name, its points ``(x, y)`` in x order, how it is drawn."""

    name: str
    points: tuple[tuple[float, float], ...]
    colour: str = ""
    dashed: bool = False
    """Drawn dashed: a target (a queue's deserved share), not a measure."""


Format = Callable[[float], str]


def seconds_label(value: float) -> str:
    """An x label of a run: seconds from its start (``90s``, ``12m``, ``2h``)."""
    if abs(value) >= 7200:
        return f"{_number(value / 3600)}h"
    if abs(value) >= 600:
        return f"{_number(round(value / 60))}m"
    return f"{_number(round(value))}s"


def ago_label(value: float) -> str:
    """An x label of a live chart: ``value`` seconds from now (``now``, ``5m ago``)."""
    if value >= -0.5:
        return "now"
    return f"{seconds_label(-value)} ago"


def percent_label(value: float) -> str:
    """A y label of a share: ``0.25`` → ``25%``."""
    return f"{_number(round(value * 100, 1))}%"


def count_label(value: float) -> str:
    """A y label of a count."""
    return _number(round(value, 1))


def _ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / count for i in range(count + 1)]


def _nice_max(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^n at or above ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return next(f * magnitude for f in (1.0, 2.0, 2.5, 5.0, 10.0) if f * magnitude >= value)


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_format: Format = seconds_label,
    y_format: Format = count_label,
    y_max: float | None = None,
    x_range: tuple[float, float] | None = None,
    whole: bool = False,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """A titled line chart of ``series`` as an inline ``<figure>``; steps between points.

    Args:
        title: the chart's caption.
        series: the lines; each keeps its newest :data:`MAX_POINTS` points.
        x_format: how an x tick reads (seconds from the start, or ago).
        y_format: how a y tick reads (a share as a percentage, a count).
        y_max: the top of the y axis (default: a round number above the highest point).
        x_range: the x axis's span (default: the points').
        whole: the values are counts: the y axis's ticks are whole numbers.
        width: the drawing's width in pixels.
        height: its height.

    Returns:
        The figure's HTML; with no point at all it says there is no data yet.
    """
    shown = [
        Series(s.name, s.points[-MAX_POINTS:], s.colour or colour(i), s.dashed)
        for i, s in enumerate(series)
    ]
    xs = [x for s in shown for x, _ in s.points]
    ys = [y for s in shown for _, y in s.points]
    caption = f"<figcaption>{esc(title)}</figcaption>"
    legend = _legend(shown)
    if not xs:
        return (
            f'<figure class="chart" data-chart="{esc(title)}">{caption}'
            f'<p class="nodata">no samples yet</p>{legend}</figure>'
        )
    x_lo, x_hi = x_range if x_range is not None else (min(xs), max(xs))
    if x_hi <= x_lo:
        x_hi = x_lo + 1.0
    top = y_max if y_max is not None else _nice_max(max(ys))
    if whole and y_max is None:
        top = 4.0 * max(1, math.ceil(max(ys) / 4.0))
    top = top if top > 0 else 1.0
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (min(max(x, x_lo), x_hi) - x_lo) / (x_hi - x_lo) * plot_w

    def sy(y: float) -> float:
        return TOP + plot_h - min(max(y, 0.0), top) / top * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for tick in _ticks(0.0, top):
        y = sy(tick)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#e3e7ee"/>'
            f'<text class="tick" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" '
            f'font-size="10" fill="#5b6472">{esc(y_format(tick))}</text>'
        )
    for tick in _ticks(x_lo, x_hi):
        x = sx(tick)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{height - 8}" text-anchor="middle" '
            f'font-size="10" fill="#5b6472">{esc(x_format(tick))}</text>'
        )
    for s in shown:
        if not s.points:
            continue
        drawn: list[str] = []
        previous: float | None = None
        for x, y in s.points:
            if previous is not None:
                drawn.append(f"{sx(x):.1f},{sy(previous):.1f}")
            drawn.append(f"{sx(x):.1f},{sy(y):.1f}")
            previous = y
        raw = " ".join(f"{_number(x)},{_number(y)}" for x, y in s.points)
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        parts.append(
            f'<polyline class="series" data-series="{esc(s.name)}" data-points="{raw}" '
            f'points="{" ".join(drawn)}" fill="none" stroke="{esc(s.colour)}" '
            f'stroke-width="2"{dash}><title>{esc(s.name)}: '
            f"{esc(y_format(s.points[-1][1]))}</title></polyline>"
        )
    parts.append("</svg>")
    return (
        f'<figure class="chart" data-chart="{esc(title)}">{caption}{"".join(parts)}'
        f"{legend}</figure>"
    )


def _legend(series: Sequence[Series]) -> str:
    items = "".join(
        f'<li><span class="swatch{" dashed" if s.dashed else ""}" '
        f'style="background:{esc(s.colour)}"></span>{esc(s.name)}</li>'
        for s in series
    )
    return f'<ul class="legend">{items}</ul>' if items else ""


@dataclass(frozen=True, slots=True)
class GanttBar:
    """One job: submitted at ``submitted``, started at ``started``, ended at ``ended``.

    ``started`` is ``None`` for a job that never ran (it waited until ``ended``, or the end
    of the run), ``ended`` ``None`` for a job still running when the run stopped.
    """

    job: str
    queue: str
    submitted: float
    started: float | None
    ended: float | None
    phase: str = ""


def gantt(
    title: str,
    bars: Sequence[GanttBar],
    *,
    end: float,
    queue_colours: dict[str, str] | None = None,
    width: int = WIDTH + 260,
) -> str:
    """A Gantt of ``bars``: per job a pale bar while it waits, a coloured one while it runs.

    Args:
        title: the chart's caption.
        bars: the jobs, drawn in the order given (the first :data:`MAX_BARS`).
        end: when the run stopped (where an unfinished bar ends).
        queue_colours: a colour per queue (default: :func:`colour` in order of first use).
        width: the drawing's width in pixels.

    Returns:
        The figure's HTML.
    """
    colours = dict(queue_colours or {})
    for bar in bars:
        colours.setdefault(bar.queue, colour(len(colours)))
    drawn = bars[:MAX_BARS]
    label_w = 200
    plot_w = width - label_w - RIGHT
    height = TOP + ROW * max(len(drawn), 1) + BOTTOM
    span = end if end > 0 else 1.0

    def sx(x: float) -> float:
        return label_w + min(max(x, 0.0), span) / span * plot_w

    parts = [
        f'<svg class="gantt" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for tick in _ticks(0.0, span):
        x = sx(tick)
        parts.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{height - BOTTOM}" '
            'stroke="#e3e7ee"/>'
            f'<text class="tick" x="{x:.1f}" y="{height - 8}" text-anchor="middle" '
            f'font-size="10" fill="#5b6472">{esc(seconds_label(tick))}</text>'
        )
    for row, bar in enumerate(drawn):
        y = TOP + row * ROW
        fill = colours[bar.queue]
        parts.append(
            f'<text class="job" x="{label_w - 6}" y="{y + ROW - 4}" text-anchor="end" '
            f'font-size="10" fill="#1d2430">{esc(bar.job)}</text>'
        )
        waited_to = bar.started if bar.started is not None else (bar.ended or end)
        parts.append(
            _rect("wait", bar, span=(bar.submitted, waited_to), sx=sx, y=y, paint=(fill, 0.25))
        )
        if bar.started is not None:
            ran_to = bar.ended if bar.ended is not None else end
            parts.append(
                _rect("run", bar, span=(bar.started, ran_to), sx=sx, y=y, paint=(fill, 1.0))
            )
    parts.append("</svg>")
    more = (
        f'<p class="more">{len(bars) - len(drawn)} more jobs not drawn</p>'
        if len(bars) > len(drawn)
        else ""
    )
    legend = _legend([Series(q, (), c) for q, c in colours.items()])
    return (
        f'<figure class="chart gantt" data-chart="{esc(title)}"><figcaption>{esc(title)}'
        f" (pale: waiting, solid: running)</figcaption>{''.join(parts)}{more}{legend}</figure>"
    )


def _rect(
    kind: str,
    bar: GanttBar,
    *,
    span: tuple[float, float],
    sx: Callable[[float], float],
    y: int,
    paint: tuple[str, float],
) -> str:
    (start, stop), (fill, opacity) = span, paint
    x0, x1 = sx(start), sx(max(stop, start))
    return (
        f'<rect class="{kind}" data-job="{esc(bar.job)}" data-queue="{esc(bar.queue)}" '
        f'data-from="{_number(start)}" data-to="{_number(max(stop, start))}" '
        f'x="{x0:.1f}" y="{y + 2}" width="{max(x1 - x0, 1.0):.1f}" height="{ROW - 4}" '
        f'fill="{esc(fill)}" fill-opacity="{opacity}"><title>{esc(bar.job)} ({esc(bar.queue)}) '
        f"{kind} {_number(start)}s–{_number(max(stop, start))}s</title></rect>"
    )
