"""Structural checks of the console's HTML: what a parser and a screen reader need to read a page as written.

``problems(html)`` lists what is wrong in a page or an htmx fragment: a block element inside a ``<p>`` (the
parser closes the paragraph early, so the layout and screen readers see another structure than the
template's), duplicate ids, a ``<label for>`` or an ``aria-*`` reference naming no element, a form control
without a label, a form inside a form and a link inside a link. Python's own ``html.parser`` reads the
markup as written (it does not repair it the way a browser does), which is what lets these be seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}
# Elements that may not appear inside a <p> (its content model is phrasing content only).
BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "dialog",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
}
# End tags a template may leave out; a new one of these closes the open one.
IMPLIED_END = {"li": {"li"}, "option": {"option"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "tr": {"tr"}}
LABELLED_INPUTS_EXEMPT = {"hidden", "submit", "button", "reset", "image"}


@dataclass
class Control:
    tag: str
    attrs: dict[str, str]
    in_label: bool
    where: str


@dataclass
class Page(HTMLParser):
    problems: list[str] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)
    label_fors: list[str] = field(default_factory=list)
    references: list[tuple[str, str, str]] = field(default_factory=list)
    controls: list[Control] = field(default_factory=list)

    def __post_init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.stack: list[tuple[str, str]] = []  # (tag, a short description of where it was opened)

    def where(self, tag: str, attrs: dict[str, str]) -> str:
        line, _ = self.getpos()
        detail = "".join(
            f"{sep}{attrs[name]}"
            for name, sep in (("id", "#"), ("name", "[name="), ("class", "."))
            if attrs.get(name)
        )
        return f"<{tag}{detail}> (line {line})"

    def open(self, tag: str) -> list[str]:
        return [name for name, _ in self.stack if name == tag]

    def handle_starttag(self, tag, attr_list):
        attrs = {name: value or "" for name, value in attr_list}
        here = self.where(tag, attrs)
        if tag in IMPLIED_END and self.stack and self.stack[-1][0] in IMPLIED_END[tag]:
            self.stack.pop()
        if tag in BLOCK and "p" in self.open_until_container():
            outer = next(w for name, w in reversed(self.stack) if name == "p")
            self.problems.append(f"{here} inside {outer}: a <p> holds phrasing content only")
        if tag == "form" and self.open("form"):
            self.problems.append(f"{here} inside another form")
        if tag == "a" and self.open("a"):
            self.problems.append(f"{here} inside another link")
        if "id" in attrs:
            self.ids[attrs["id"]] = self.ids.get(attrs["id"], 0) + 1
        if tag == "label" and attrs.get("for") is not None:
            self.label_fors.append((attrs["for"], here))
        for name in ("aria-describedby", "aria-labelledby", "aria-controls", "list"):
            for ref in attrs.get(name, "").split():
                self.references.append((name, ref, here))
        if tag in ("input", "select", "textarea") and (
            tag != "input" or attrs.get("type", "text") not in LABELLED_INPUTS_EXEMPT
        ):
            self.controls.append(Control(tag, attrs, bool(self.open("label")), here))
        if tag not in VOID:
            self.stack.append((tag, here))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not any(name == tag for name, _ in self.stack):
            line, _ = self.getpos()
            self.problems.append(f"</{tag}> (line {line}) closes nothing open")
            return
        while self.stack:
            name, here = self.stack.pop()
            if name == tag:
                break
            if name not in IMPLIED_END and name != "p":
                self.problems.append(f"{here} is not closed before </{tag}>")

    def open_until_container(self) -> list[str]:
        """The open elements up to the nearest one that starts a new flow (a <p> beyond it is not ours)."""
        names = []
        for name, _ in reversed(self.stack):
            if name in ("template", "button", "object", "table", "td", "th", "caption"):
                break
            names.append(name)
        return names


def problems(html: str, *, fragment: bool = False) -> list[str]:
    """What is wrong with ``html``. A ``fragment`` (an htmx partial) may name ids of the page around it, so
    its references are not checked."""
    page = Page()
    page.feed(html)
    page.close()
    found = list(page.problems)
    found += [
        f"<{name}> not closed: opened at {here}" for name, here in page.stack if name not in ("p", "li")
    ]
    found += [f'id="{ident}" appears {count} times' for ident, count in page.ids.items() if count > 1]
    if not fragment:
        found += [
            f'<label for="{ref}"> at {here} names no element'
            for ref, here in page.label_fors
            if ref not in page.ids
        ]
        found += [
            f'{name}="{ref}" at {here} names no element'
            for name, ref, here in page.references
            if ref not in page.ids
        ]
    labelled = {ref for ref, _ in page.label_fors}
    for control in page.controls:
        attrs = control.attrs
        if (
            control.in_label
            or attrs.get("aria-label", "").strip()
            or attrs.get("aria-labelledby", "").strip()
        ):
            continue
        if attrs.get("id") and attrs["id"] in labelled:
            continue
        found.append(f"{control.where} has no label (a <label>, aria-label or aria-labelledby)")
    return found
