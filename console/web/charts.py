"""The geometry of a bar chart drawn as inline SVG (no chart library, no inline styles: the CSP has
style-src 'self'): each bar a <rect> with geometry attributes, scaled to the chart's highest value."""

from __future__ import annotations


def bar(index: int, step: float, value, marked, top, *, height: int, gap: int) -> dict:
    """Bar ``index`` of a chart ``height`` high whose bars stand ``step`` apart: ``value`` scaled to ``top``,
    with its highlighted part ``marked`` (failures) drawn over it."""
    full = round(height * value / top, 1) if top else 0
    part = round(height * marked / top, 1) if top else 0
    return {
        "x": round(index * step, 1),
        "width": round(max(step - gap, 0.5), 1),
        "y": round(height - full, 1),
        "height": full,
        "marked_y": round(height - part, 1),
        "marked_height": part,
        "value": value,
        "marked": marked,
    }
