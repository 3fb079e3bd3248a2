"""``/o/<org>/usage/``: usage over time from the sampler's rows (console/usage/sampler.py), 24 h, 7 d,
30 d or a custom range, for the project the member works in or every project; a chart per figure with the
table behind it, and the whole as CSV."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django import forms
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from console import capacity
from console.service import ServiceError, projects
from console.usage import charts
from console.usage.models import Sample
from console.usage.sampler import SUMMED, interval_seconds
from console.web.decorators import org_view
from console.web.render import render

RANGES = {
    "24h": ("Last 24 hours", timedelta(hours=24), timedelta(hours=1)),
    "7d": ("Last 7 days", timedelta(days=7), timedelta(hours=6)),
    "30d": ("Last 30 days", timedelta(days=30), timedelta(days=1)),
}
MAX_DAYS = 90
MAX_BUCKETS = 60
ALL = "all"


class RangeForm(forms.Form):
    range = forms.ChoiceField(
        choices=[*((k, v[0]) for k, v in RANGES.items()), ("custom", "Custom")], required=False
    )
    start = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(
        required=False, label="To (inclusive)", widget=forms.DateInput(attrs={"type": "date"})
    )
    project = forms.CharField(required=False, max_length=200)

    def clean(self):
        data = super().clean()
        if data.get("range") == "custom":
            start, end = data.get("start"), data.get("end")
            if not start or not end:
                raise forms.ValidationError("A custom range needs both dates.")
            if end < start:
                self.add_error("end", "The end comes before the start.")
            elif (end - start).days + 1 > MAX_DAYS:
                self.add_error("end", f"At most {MAX_DAYS} days (the console keeps {MAX_DAYS} days).")
        return data


@dataclass
class Window:
    start: datetime
    end: datetime
    bucket: timedelta
    title: str

    def starts(self) -> list[datetime]:
        count = max(1, -(-int((self.end - self.start).total_seconds()) // int(self.bucket.total_seconds())))
        return [self.start + i * self.bucket for i in range(count)]


def window(form: RangeForm, now: datetime) -> Window:
    data = form.cleaned_data if form.is_valid() else {}
    if data.get("range") == "custom":
        start = datetime.combine(data["start"], time.min, tzinfo=UTC)
        end = datetime.combine(data["end"] + timedelta(days=1), time.min, tzinfo=UTC)
        span = end - start
        bucket = next(
            (
                b
                for b in (timedelta(hours=1), timedelta(hours=6), timedelta(days=1))
                if span / b <= MAX_BUCKETS
            ),
            timedelta(days=2),
        )
        return Window(start, end, bucket, f"{data['start']:%Y-%m-%d} to {data['end']:%Y-%m-%d}")
    title, span, bucket = RANGES[data.get("range") or "24h"]
    # Bucket edges on whole buckets (hours, or days for 30 d), the last one holding now.
    size = int(bucket.total_seconds())
    end = datetime.fromtimestamp((int(now.timestamp()) // size + 1) * size, tz=UTC)
    return Window(end - span, end, bucket, title)


def figures(rows: list[Sample], win: Window, *, one_project: bool) -> list[dict]:
    """Per bucket: what happened (sums), the peak concurrency (per interval summed over projects, then the
    highest) against the cap, pool utilisation and how much of the bucket was sampled."""
    starts = win.starts()
    size = win.bucket.total_seconds()
    buckets = [defaultdict(float) for _ in starts]
    peaks: list[dict] = [defaultdict(int) for _ in starts]
    caps: list[int | None] = [None for _ in starts]
    sampled: list[set] = [set() for _ in starts]
    for row in rows:
        index = int((row.interval_start - win.start).total_seconds() // size)
        if not 0 <= index < len(starts):
            continue
        b = buckets[index]
        for name in SUMMED:
            b[name] += getattr(row, name)
        b["pool_size"] += row.pool_size * row.seconds
        b["pool_acquired"] += row.pool_acquired * row.seconds
        peaks[index][row.interval_start] += row.capacity_used
        if one_project and row.cap is not None:
            caps[index] = max(caps[index] or 0, row.cap)
        sampled[index].add((row.interval_start, row.seconds))
    out = []
    for index, start in enumerate(starts):
        b = buckets[index]
        seconds = sum(s for _, s in sampled[index])
        out.append(
            {
                "start": start,
                "sessions_started": int(b["sessions_started"]),
                "sessions_ended": int(b["sessions_ended"]),
                "headful_minutes": round(b["headful_seconds"] / 60, 1),
                "headless_minutes": round(b["headless_seconds"] / 60, 1),
                "peak": max(peaks[index].values(), default=0),
                "cap": caps[index],
                "refusals": int(b["refusals"]),
                "invocations_succeeded": int(b["invocations_succeeded"]),
                "invocations_failed": int(b["invocations_failed"]),
                "pool_utilisation": round(100 * b["pool_acquired"] / b["pool_size"], 1)
                if b["pool_size"]
                else 0.0,
                "sampled_percent": min(100, round(100 * seconds / size)),
            }
        )
    return out


COLUMNS = [
    ("start", "Start (UTC)"),
    ("sessions_started", "Sessions started"),
    ("sessions_ended", "Sessions ended"),
    ("headful_minutes", "Headful browser minutes"),
    ("headless_minutes", "Headless browser minutes"),
    ("peak", "Peak concurrency"),
    ("cap", "Cap"),
    ("refusals", "Refusals at the cap (429)"),
    ("invocations_succeeded", "Invocations succeeded"),
    ("invocations_failed", "Invocations failed"),
    ("pool_utilisation", "Pool utilisation (%)"),
    ("sampled_percent", "Sampled (%)"),
]


def _charts(rows: list[dict], win: Window) -> list[dict]:
    starts = [r["start"] for r in rows]
    col = lambda name: [r[name] for r in rows]  # noqa: E731
    return [
        charts.chart(
            "sessions", "Sessions started", "sessions started", starts, win.bucket, col("sessions_started")
        ),
        charts.chart(
            "headful",
            "Headful browser minutes",
            "headful minutes",
            starts,
            win.bucket,
            col("headful_minutes"),
        ),
        charts.chart(
            "headless",
            "Headless browser minutes",
            "headless minutes",
            starts,
            win.bucket,
            col("headless_minutes"),
        ),
        charts.chart(
            "peak",
            "Peak concurrency against the cap",
            "at the peak",
            starts,
            win.bucket,
            col("peak"),
            line=col("cap"),
            summed=False,  # a sum of peaks means nothing
        ),
        charts.chart("ended", "Sessions ended", "sessions ended", starts, win.bucket, col("sessions_ended")),
        charts.chart(
            "refusals", "Refusals at the cap (429)", "refusals", starts, win.bucket, col("refusals")
        ),
        charts.chart(
            "invocations",
            "Invocations finished",
            "invocations finished",
            starts,
            win.bucket,
            [a + b for a, b in zip(col("invocations_succeeded"), col("invocations_failed"), strict=True)],
            highlight=col("invocations_failed"),
        ),
        charts.chart(
            "pools",
            "Pool utilisation (acquired of size)",
            "acquired",
            starts,
            win.bucket,
            col("pool_utilisation"),
            unit=" %",
            summed=False,
        ),
    ]


async def _scope(svc) -> str:
    """The project the member works in when none is chosen (capacity.scope_project), "" if unknown."""
    try:
        return await capacity.scope_project(svc) or ""
    except ServiceError:
        return ""


async def _project_names(svc) -> dict[str, str]:
    try:
        page = await projects.list_projects(svc, limit=100)
    except ServiceError:
        return {}
    return {p.id: p.name or p.id for p in page.items}


@require_http_methods(["GET"])
@org_view("viewer")
async def usage(request):
    form = RangeForm(request.GET or None)
    now = timezone.now()
    win = window(form, now)
    current = request.service.project or await _scope(request.service)
    wanted = (form.cleaned_data.get("project") if form.is_valid() else "") or current or ALL
    query = Sample.objects.filter(org=request.org, interval_start__gte=win.start, interval_start__lt=win.end)
    if wanted != ALL:
        query = query.filter(project_id=wanted)
    rows = figures([r async for r in query], win, one_project=wanted != ALL)
    if request.GET.get("format") == "csv":
        return _csv(request, rows)
    names = await _project_names(request.service)
    sampled = [
        p
        async for p in Sample.objects.filter(org=request.org).values_list("project_id", flat=True).distinct()
    ]
    choices = sorted({*names, *sampled} - {""}, key=lambda p: names.get(p, p))
    totals = {
        "sessions_started": sum(r["sessions_started"] for r in rows),
        "sessions_ended": sum(r["sessions_ended"] for r in rows),
        "headful_minutes": round(sum(r["headful_minutes"] for r in rows), 1),
        "headless_minutes": round(sum(r["headless_minutes"] for r in rows), 1),
        "peak": max((r["peak"] for r in rows), default=0),
        "cap": max((r["cap"] for r in rows if r["cap"] is not None), default=None),
        "refusals": sum(r["refusals"] for r in rows),
        "invocations_succeeded": sum(r["invocations_succeeded"] for r in rows),
        "invocations_failed": sum(r["invocations_failed"] for r in rows),
        "sampled_percent": round(sum(r["sampled_percent"] for r in rows) / len(rows)) if rows else 0,
    }
    context = {
        "form": form,
        "window": win,
        "rows": rows,
        "charts": _charts(rows, win),
        "totals": totals,
        "columns": COLUMNS,
        "project": wanted,
        "project_name": names.get(wanted, wanted),
        "choices": [(p, names.get(p, p)) for p in choices],
        "all": ALL,
        "current": current,
        "ranges": [(k, v[0]) for k, v in RANGES.items()],
        "range": (form.cleaned_data.get("range") if form.is_valid() else "") or "24h",
        "csv_query": _with(request, format="csv"),
        "interval": interval_seconds(),
    }
    return render(request, "usage/index.html", context)


def _with(request, **params) -> str:
    query = request.GET.copy()
    for key, value in params.items():
        query[key] = value
    return query.urlencode()


def _csv(request, rows: list[dict]) -> HttpResponse:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([title for _, title in COLUMNS])
    for row in rows:
        writer.writerow(
            [
                row[name].isoformat() if name == "start" else ("" if row[name] is None else row[name])
                for name, _ in COLUMNS
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="usage-{request.org.slug}.csv"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
