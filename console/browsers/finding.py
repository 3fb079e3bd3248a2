"""What the telemetry side of a session page is asked to show: the view (events, network, console), a time
window, free text, "errors only", a console level, one browser tab, and one event to open at (a permalink).
All of it lives in the page's URL (Back and a shared link reproduce it) and is read here, once, into
``Finding``; nothing typed is forwarded to the service as typed.

The service filters by category and type, and bounds a read by ``since``/``until`` (RFC 3339, or a duration
such as ``15m``; ``until`` exclusive; a descending read takes no ``since``). The rest (text, errors, level,
tab) it cannot filter: the console applies it to the events it read, and static/js/telemetry.js to the live
ones, with the same rules (``keeps``, ``Pane.prototype.matches``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from console.browsers.presenters import Row
from console.service.contract import CATEGORIES, EVENT_TYPES
from console.service.telemetry import Envelope

VIEWS = ("events", "network", "console")
# Relative windows offered (the service reads the duration itself); "" is the whole retained history.
WINDOWS = {
    "5m": "last 5 minutes",
    "15m": "last 15 minutes",
    "1h": "last hour",
    "6h": "last 6 hours",
    "24h": "last day",
}
# CDP console types the level chips offer (console_error's level is "error").
LEVELS = ("error", "warning", "info", "log", "debug")
MAX_TEXT = 200  # characters of search text kept
TARGET = re.compile(r"[A-Za-z0-9._-]{1,64}")  # a CDP target id


def _moment(value: str) -> datetime | None:
    """An absolute moment from the URL (``2026-11-27T14:03``, seconds and offset optional; naive is UTC)."""
    value = value.strip()
    if not value or len(value) > 40:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _local(moment: datetime | None) -> str:
    """The value of a ``datetime-local`` input (UTC, to the second)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") if moment else ""


@dataclass(frozen=True)
class Finding:
    view: str = "events"
    categories: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    text: str = ""
    errors: bool = False
    level: str = ""
    target: str = ""
    window: str = ""  # a key of WINDOWS
    since: datetime | None = None
    until: datetime | None = None
    event: int | None = None  # the permalinked seq
    notices: tuple[str, ...] = field(default=(), compare=False)

    # Reading the URL ------------------------------------------------------------------------------

    @classmethod
    def from_request(cls, request) -> Finding:
        get = request.GET
        notices: list[str] = []

        def listed(name: str, allowed) -> tuple[str, ...]:
            values = [v.strip() for raw in get.getlist(name) for v in raw.split(",")]
            return tuple(v for v in dict.fromkeys(values) if v in allowed)

        view = get.get("view", "events")
        since = until = None
        window = get.get("window", "")
        if window not in WINDOWS:
            window = ""
        for name in ("since", "until"):
            raw = get.get(name, "")
            moment = _moment(raw)
            if raw and moment is None:
                notices.append(f"“{raw[:40]}” is not a date and time: the {name} bound was left out.")
            if name == "since":
                since = moment
            else:
                until = moment
        if since and until and since >= until:
            notices.append("The window ended before it began: it was left out.")
            since = until = None
        if since:
            window = ""  # an absolute start wins over a relative one
        event = get.get("event", "")
        target = get.get("tab", "")
        return cls(
            view=view if view in VIEWS else "events",
            categories=listed("category", CATEGORIES),
            types=listed("type", EVENT_TYPES),
            text=get.get("q", "").strip()[:MAX_TEXT],
            errors=get.get("errors") in ("1", "on", "true"),
            level=get.get("level", "") if get.get("level", "") in LEVELS else "",
            target=target if TARGET.fullmatch(target) else "",
            window=window,
            since=since,
            until=until,
            event=int(event) if event.isdigit() and len(event) < 19 else None,
            notices=tuple(notices),
        )

    # What the service is asked --------------------------------------------------------------------

    @property
    def windowed(self) -> bool:
        return bool(self.window or self.since or self.until)

    @property
    def service_since(self) -> str | None:
        if self.since:
            return rfc3339(self.since)
        return self.window or None

    @property
    def service_until(self) -> str | None:
        return rfc3339(self.until) if self.until else None

    @property
    def service_categories(self) -> tuple[str, ...]:
        return ("console",) if self.view == "console" else self.categories

    @property
    def local(self) -> bool:
        """Whether the console filters what the service sent (the service pages may then be thin)."""
        return bool(self.text or self.errors or self.level or self.target)

    @property
    def filtered(self) -> bool:
        return bool(self.categories or self.types or self.local or self.windowed)

    # What the console keeps --------------------------------------------------------------------------

    def keeps(self, envelope: Envelope, row: Row) -> bool:
        if self.target and _target(envelope) != self.target:
            return False
        if self.errors and row.severity != "error":
            return False
        if self.level and row.level != self.level:
            return False
        if self.text:
            needle = self.text.casefold()
            haystack = f"{row.type}\n{row.url}\n{row.summary}\n{row.text}".casefold()
            if needle not in haystack:
                return False
        return True

    # Links -------------------------------------------------------------------------------------------

    def params(self, **changes) -> list[tuple[str, str]]:
        """The URL's parameters, with some changed (``None`` or ``""`` removes one)."""
        f = replace(self, **{k: v for k, v in changes.items() if k in self.__dataclass_fields__})
        pairs = [
            ("view", f.view if f.view != "events" else ""),
            ("category", ",".join(f.categories)),
            ("type", ",".join(f.types)),
            ("q", f.text),
            ("errors", "1" if f.errors else ""),
            ("level", f.level if f.view == "console" else ""),
            ("tab", f.target),
            ("window", f.window),
            ("since", rfc3339(f.since) if f.since else ""),
            ("until", rfc3339(f.until) if f.until else ""),
            ("event", str(f.event) if f.event is not None else ""),
        ]
        return [(k, v) for k, v in pairs if v]

    def query(self, **changes) -> str:
        return urlencode(self.params(**changes))

    def url(self, base: str, **changes) -> str:
        query = self.query(**changes)
        return f"{base}?{query}" if query else base

    @property
    def since_input(self) -> str:
        return _local(self.since)

    @property
    def until_input(self) -> str:
        return _local(self.until)

    def describe_window(self) -> str:
        if self.window:
            return WINDOWS[self.window]
        if self.since and self.until:
            return f"{_local(self.since)} to {_local(self.until)} UTC"
        if self.since:
            return f"since {_local(self.since)} UTC"
        if self.until:
            return f"until {_local(self.until)} UTC"
        return "whole history"


def _target(envelope: Envelope) -> str:
    data = envelope.event.fields if envelope.event else {}
    value = data.get("target_id")
    return value if isinstance(value, str) else ""


def permalink_until(moment: datetime) -> datetime:
    """The end of a permalink's window: a second after the event, so what followed it is in view too."""
    return moment + timedelta(seconds=1)
