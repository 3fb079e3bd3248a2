"""Every status the service reports, in the words and the colour a page shows it with: one table, read by
the ``{% status kind value %}`` tag (console/web/templatetags/console.py), so a status looks the same on
every page. The statuses themselves are the service's vocabulary (console/service/contract.py);
tests/web/test_status.py checks that each has its words here.
"""

from __future__ import annotations

from django.utils.html import format_html

from console.service import contract as c

# Tones are the chip classes of static/css/console.css: chip-ok, chip-warn, chip-error, chip-muted, chip-info.
OK, WARN, ERROR, MUTED, INFO = "ok", "warn", "error", "muted", "info"

STATUSES: dict[str, dict[str, tuple[str, str]]] = {
    # A session's state: the list's filter values are the service's; a record is active or ended.
    "session": {"active": ("Active", OK), "deleted": ("Ended", MUTED), "ended": ("Ended", MUTED)},
    "connection": {c.NEEDS_AUTH: ("Needs auth", WARN), c.AUTHENTICATED: ("Authenticated", OK)},
    "flow": {
        c.FLOW_IN_PROGRESS: ("In progress", INFO),
        c.FLOW_SUCCESS: ("Succeeded", OK),
        "FAILED": ("Failed", ERROR),
        "EXPIRED": ("Expired", MUTED),
        "CANCELED": ("Canceled", MUTED),
    },
    "invocation": {
        "queued": ("Queued", WARN),
        "running": ("Running", INFO),
        "succeeded": ("Succeeded", OK),
        "failed": ("Failed", ERROR),
    },
    "deployment": {
        "queued": ("Queued", WARN),
        "in_progress": ("Building", WARN),
        "running": ("Running", OK),
        "failed": ("Failed", ERROR),
        "stopped": ("Stopped", MUTED),
    },
    "project": {"active": ("Active", OK), "archived": ("Archived", MUTED)},
    "proxy": {"available": ("Available", OK), "unavailable": ("Unavailable", ERROR)},
    "api_key": {"active": ("Active", OK), "deleted": ("Deleted", MUTED)},
}

# A login's history row carries a connection's status (a health check) or a flow's (a login, a re-auth).
STATUSES["auth_event"] = {**STATUSES["connection"], **STATUSES["flow"]}

# The service's lists each kind must cover (a status added to the contract and not here fails a test).
VOCABULARY = {
    "connection": c.CONNECTION_STATUSES,
    "flow": c.FLOW_STATUSES,
    "invocation": c.INVOCATION_STATUSES,
    "deployment": c.DEPLOYMENT_STATUSES,
    "project": c.PROJECT_STATUSES,
    "proxy": c.PROXY_STATUSES,
    "api_key": tuple(s for s in c.API_KEY_STATUSES if s != "all"),
    "session": tuple(s for s in c.SESSION_STATUSES if s != "all"),
}


def describe(kind: str, value) -> tuple[str, str]:
    """(words, tone) for a status; one the table does not know (the service adds values) in plain words."""
    if value is None or value == "":
        return "Unknown", MUTED
    known = STATUSES.get(kind, {}).get(str(value))
    if known:
        return known
    return str(value).replace("_", " ").lower().capitalize(), MUTED


def badge(kind: str, value, title: str = ""):
    words, tone = describe(kind, value)
    return format_html(
        '<span class="chip chip-{} status status-{}"{}>{}</span>',
        tone,
        str(value or "unknown").lower(),
        format_html(' title="{}"', title) if title else "",
        words,
    )
