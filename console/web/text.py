"""Upstream strings made safe to show: control and bidi characters made visible, URLs checked.

Everything the service sends is untrusted. Escaping keeps its markup out of ours, but two kinds of
characters pass escaping and still mislead the reader: terminal escape codes (``ESC[31m`` colours or hides
text, ``CR`` overwrites a line when the HTML is copied into a terminal) and bidirectional controls (a
right-to-left override makes ``exe.txt`` read ``txt.exe``). ``visible`` turns both into symbols a reader
sees. It runs once on every rendered template (``console.web.templates``) and on every live frame
(``console.live.hub.encode``), so no template has to remember a filter; values in records stay as the
service sent them, since ids and names go back upstream.

``safe_url`` is the one check for URLs from the service before they become an ``href`` or ``src``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# C0 controls but tab, line feed and carriage return (which HTML treats as white space), DEL, C1
# controls, and the bidirectional marks, embeddings, overrides and isolates.
_INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _symbol(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ESC → ␛
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"[U+{code:04X}]"


def visible(text: str) -> str:
    """``text`` with every control and bidi character replaced by a visible symbol (markup-safe)."""
    if text.isascii() and text.isprintable():
        return text  # printable ASCII (a live row, mostly): checked by a scan cheaper than the pattern's
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(_symbol, text)


# What a URL may not contain anywhere: white space and controls (browsers strip some of them before
# parsing, so ``java\tscript:`` would run), and the bidi characters above.
_URL_JUNK = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_url(value) -> str:
    """``value`` if it is an absolute http(s) URL fit for an ``href`` or ``src``, else "".

    Refused: other schemes (``javascript:``, ``data:``, ``vbscript:``…), relative or scheme-relative
    URLs, URLs with white space or control characters anywhere, and URLs with user information
    (``https://trusted.example@evil.example/`` reads as the first host and goes to the second).
    """
    if not isinstance(value, str) or not value or _URL_JUNK.search(value) or "\\" in value:
        return ""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return ""
    return value


def url_origin(value) -> str:
    """The origin (``https://host:port``) of a URL that ``safe_url`` accepts, else ""."""
    url = safe_url(value)
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
