"""Bar charts of usage over a range, drawn as inline SVG by templates/usage/_chart.html (no script, no
inline style: geometry attributes and classes of static/css/overview.css), and the table behind each."""

from __future__ import annotations

from datetime import datetime, timedelta

from console.web.charts import bar

WIDTH = 600
HEIGHT = 80
GAP = 1


def label(start: datetime, size: timedelta) -> str:
    if size >= timedelta(days=1):
        return f"{start:%Y-%m-%d}"
    return f"{start:%m-%d %H:%M}-{start + size:%H:%M}"


def chart(
    key: str,
    title: str,
    noun: str,
    starts: list[datetime],
    size: timedelta,
    values: list,
    *,
    highlight: list | None = None,
    line: list | None = None,
    unit: str = "",
    summed: bool = True,
) -> dict:
    """One chart: a bar per bucket scaled to the highest value (or the line, a cap, when higher); an
    optional highlighted part of each bar (failures) and a line (the cap) across the buckets."""
    top = max([*values, *(v for v in (line or []) if v is not None)], default=0) or 0
    step = WIDTH / len(values) if values else WIDTH
    bars = []
    for index, (start, value) in enumerate(zip(starts, values, strict=True)):
        marked = highlight[index] if highlight else 0
        capped = line[index] if line else None
        words = f"{label(start, size)} UTC: {value:g}{unit} {noun}"
        if highlight:
            words += f", {marked:g} failed"
        if capped is not None:
            words += f" (cap {capped})"
        bars.append(
            {
                **bar(index, step, value, marked, top, height=HEIGHT, gap=GAP),
                "line_y": round(HEIGHT - HEIGHT * capped / top, 1) if capped is not None and top else None,
                "cap": capped,
                "label": words,
                "when": label(start, size),
            }
        )
    return {
        "key": key,
        "title": title,
        "noun": noun,
        "unit": unit,
        "bars": bars,
        "width": WIDTH,
        "height": HEIGHT,
        "peak": max(values, default=0),
        "total": round(sum(values), 1) if summed else None,
        "has_highlight": bool(highlight),
        "has_line": bool(line and any(v is not None for v in line)),
    }
