"""Small bar charts of the last 24 hours, computed here and drawn as inline SVG by the template.

No chart library and no inline styles (the CSP has style-src 'self'): bars are <rect> elements with
geometry attributes and a class that static/css/overview.css colours.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from console.web.charts import bar

HOURS = 24
WIDTH = 240
HEIGHT = 48
GAP = 1


def hours(now: datetime) -> list[datetime]:
    """The start of each of the last 24 one-hour buckets, oldest first: whole hours, the last one holding
    now (the usage page's edges for its 24 hours). A bar says the same until its data or the hour changes,
    so a poll's answer does too."""
    current = now.replace(minute=0, second=0, microsecond=0)
    return [current - timedelta(hours=HOURS - 1 - i) for i in range(HOURS)]


def alive_during(sessions, start: datetime) -> int:
    """Sessions that existed at some point of the hour from ``start``."""
    end = start + timedelta(hours=1)
    return sum(
        1
        for s in sessions
        if s.created_at is not None and s.created_at < end and (s.deleted_at is None or s.deleted_at >= start)
    )


def started_during(items, start: datetime, *, status: str | None = None) -> int:
    end = start + timedelta(hours=1)
    return sum(
        1
        for i in items
        if i.started_at is not None and start <= i.started_at < end and (status is None or i.status == status)
    )


def bars(starts: list[datetime], values: list[int], noun: str, *, highlight: list[int] | None = None) -> dict:
    """Geometry of one chart: a bar per hour scaled to the highest value, and an optional highlighted
    part of each bar (failed invocations) drawn over it."""
    top = max(values, default=0)
    step = WIDTH / len(values) if values else WIDTH
    drawn = []
    for index, (start, value) in enumerate(zip(starts, values, strict=True)):
        marked = highlight[index] if highlight else 0
        label = f"{start:%H:%M}-{start + timedelta(hours=1):%H:%M} UTC: {value} {noun}"
        label += f", {marked} failed" if marked else ""
        drawn.append({**bar(index, step, value, marked, top, height=HEIGHT, gap=GAP), "label": label})
    return {
        "bars": drawn,
        "peak": top,
        "total": sum(values),
        "width": WIDTH,
        "height": HEIGHT,
        "noun": noun,
        "failed": sum(highlight) if highlight else 0,
    }
