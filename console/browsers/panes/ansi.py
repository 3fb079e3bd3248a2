"""Terminal output → safe HTML: UTF-8 decoded across chunk boundaries, everything escaped, SGR colour
codes mapped to spans with classes (``ansi-fg-1``, ``ansi-bold``…), every other escape and control
character stripped. Colours never come from the output itself: only class names we choose.
"""

from __future__ import annotations

import codecs
import html
import re

# CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), and two-character escapes.
_ESCAPE = re.compile(
    r"\x1b\[(?P<csi>[0-?]*[ -/]*)(?P<final>[@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[@-Z\\-_]"
)
# An escape sequence that may continue in the next chunk.
_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*(?:\x1b)?)?$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
MAX_PARTIAL = 256


class Terminal:
    """Renders one output stream chunk by chunk, keeping the colour state and split characters."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self.fg: int | None = None
        self.bg: int | None = None
        self.bold = False
        self.dim = False
        self.italic = False
        self.underline = False

    def feed(self, data: bytes, *, final: bool = False) -> str:
        text = self._pending + self._decoder.decode(data, final=final)
        self._pending = ""
        if not final:
            partial = _PARTIAL.search(text)
            if partial and len(text) - partial.start() <= MAX_PARTIAL:
                self._pending = text[partial.start() :]
                text = text[: partial.start()]
        out: list[str] = []
        position = 0
        open_span = self._open()
        out.append(open_span)
        for match in _ESCAPE.finditer(text):
            out.append(_plain(text[position : match.start()]))
            position = match.end()
            if match.group("final") == "m":
                self._sgr(match.group("csi"))
                if open_span:
                    out.append("</span>")
                open_span = self._open()
                out.append(open_span)
        out.append(_plain(text[position:]))
        if open_span:
            out.append("</span>")
        return "".join(out)

    def _classes(self) -> list[str]:
        classes = []
        if self.fg is not None:
            classes.append(f"ansi-fg-{self.fg}")
        if self.bg is not None:
            classes.append(f"ansi-bg-{self.bg}")
        for name in ("bold", "dim", "italic", "underline"):
            if getattr(self, name):
                classes.append(f"ansi-{name}")
        return classes

    def _open(self) -> str:
        classes = self._classes()
        return f'<span class="{" ".join(classes)}">' if classes else ""

    def _sgr(self, params: str) -> None:
        codes = [_code(p) for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                self.fg = self.bg = None
                self.bold = self.dim = self.italic = self.underline = False
            elif code == 1:
                self.bold = True
            elif code == 2:
                self.dim = True
            elif code == 3:
                self.italic = True
            elif code == 4:
                self.underline = True
            elif code == 22:
                self.bold = self.dim = False
            elif code == 23:
                self.italic = False
            elif code == 24:
                self.underline = False
            elif 30 <= code <= 37:
                self.fg = code - 30
            elif 90 <= code <= 97:
                self.fg = code - 90 + 8
            elif code == 39:
                self.fg = None
            elif 40 <= code <= 47:
                self.bg = code - 40
            elif 100 <= code <= 107:
                self.bg = code - 100 + 8
            elif code == 49:
                self.bg = None
            elif code in (38, 48):
                # 256-colour (5;n) and true colour (2;r;g;b): map the 16 basic ones, skip the rest.
                mode = codes[i + 1] if i + 1 < len(codes) else None
                if mode == 5 and i + 2 < len(codes):
                    value = codes[i + 2]
                    if value < 16:
                        if code == 38:
                            self.fg = value
                        else:
                            self.bg = value
                    i += 2
                elif mode == 2:
                    i += 4
            i += 1


def _code(param: str) -> int:
    """One SGR parameter: empty is 0; one too long to be a code (``int()`` refuses more than 4300
    digits: an escape of 5000 was a ValueError, a 500 or an ended stream) or not a number means nothing."""
    if not param:
        return 0
    return int(param) if param.isdigit() and len(param) <= 6 else -1


def _plain(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return html.escape(_CONTROL.sub("", text), quote=False)


def to_html(data: bytes) -> str:
    """One complete output (an exec result) as HTML."""
    return Terminal().feed(data, final=True)
