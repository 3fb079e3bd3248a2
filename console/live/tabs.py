"""The tabs of a session's browser as the screen relay keeps them (console/live/screen.py): its page
targets from ``Target.setDiscoverTargets`` (created, changed, destroyed) or ``Target.getTargets``.

Everything here came from the upstream and is untrusted: a target is kept only if it is a page with an id
of ``TARGET_ID``'s shape (an id goes into an attribute, a form and a CDP command); its title and URL are
cut to ``MAX_TITLE`` and ``MAX_URL`` characters with their control and bidi characters made visible; at
most ``MAX_TABS`` are kept (a page that opens a thousand tabs gets the first fifty listed, and the list
says more exist).

Never imports Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.web.text import visible

MAX_TABS = 50
MAX_TITLE = 200
MAX_URL = 1000
# Chromium's target ids are 32 hexadecimal digits; any id of this shape is taken, nothing else.
TARGET_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Tab:
    target_id: str
    title: str
    url: str
    opener: str = ""  # the tab that opened it (``openerId``), if it said and that is an id


def tab_of(info: object) -> Tab | None:
    """The tab a ``TargetInfo`` describes, checked; None for anything else (not a page, a bad id)."""
    if not isinstance(info, dict) or info.get("type") != "page":
        return None
    target_id = info.get("targetId")
    if not isinstance(target_id, str) or not TARGET_ID.fullmatch(target_id):
        return None
    opener = info.get("openerId")
    opener = opener if isinstance(opener, str) and TARGET_ID.fullmatch(opener) else ""
    return Tab(target_id, _text(info.get("title"), MAX_TITLE), _text(info.get("url"), MAX_URL), opener)


def _text(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    text = visible(value[:limit])  # a character made visible takes several: cut again
    return text[:limit] + "…" if len(value) > limit or len(text) > limit else text


class Tabs:
    """The page targets of one browser, in the order they appeared, at most ``MAX_TABS``."""

    def __init__(self):
        self.tabs: dict[str, Tab] = {}
        self.full = False  # a page target was left out because ``MAX_TABS`` were listed

    def reset(self, infos: list) -> None:
        """The whole list again (``Target.getTargets``), keeping the order of those already known."""
        fresh = [t for t in map(tab_of, infos[: 20 * MAX_TABS]) if t is not None]
        known = {t.target_id: t for t in fresh}
        order = [i for i in self.tabs if i in known] + [
            t.target_id for t in fresh if t.target_id not in self.tabs
        ]
        self.full = len(order) > MAX_TABS
        self.tabs = {i: known[i] for i in order[:MAX_TABS]}

    def created(self, info: object) -> Tab | None:
        """A target appeared: the new tab (None if it is none, already known, or beyond the bound)."""
        tab = tab_of(info)
        if tab is None or tab.target_id in self.tabs:
            return None
        if len(self.tabs) >= MAX_TABS:
            self.full = True
            return None
        self.tabs[tab.target_id] = tab
        return tab

    def changed(self, info: object) -> None:
        """A known tab's title or URL changed (an unknown one is listed if there is room)."""
        tab = tab_of(info)
        if tab is None:
            return
        if tab.target_id in self.tabs:
            self.tabs[tab.target_id] = tab
        else:
            self.created(info)

    def destroyed(self, target_id: object) -> Tab | None:
        """A target went away: the tab it was, if listed."""
        gone = self.tabs.pop(target_id, None) if isinstance(target_id, str) else None
        if gone is not None:
            self.full = False  # one left: a tab beyond the bound may be listed by its next change
        return gone

    def after(self, gone: Tab) -> str | None:
        """The tab to show once ``gone`` (the one shown) closed: its opener if open, else the newest."""
        if gone.opener in self.tabs:
            return gone.opener
        return next(reversed(self.tabs), None)

    def listed(self) -> list[dict]:
        return [{"id": t.target_id, "title": t.title, "url": t.url} for t in self.tabs.values()]
