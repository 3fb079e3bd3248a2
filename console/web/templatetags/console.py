"""Template filters every page may use (registered as builtins in settings.TEMPLATES)."""

from datetime import datetime

from django import template
from django.forms import BoundField
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import format_html

from console.web import status as statuses
from console.web import text

register = template.Library()


@register.filter
def words(value) -> str:
    """A service enum in plain words: ``AWAITING_INPUT`` → ``awaiting input``."""
    return str(value or "").replace("_", " ").lower()


# allauth's buttons that do nothing (or post an empty credential) until its onload script has wired them
# (allauth/static/account/js/onload.js, at DOMContentLoaded). They are served disabled; console.js enables
# them once that script has run, so a click that comes too early waits instead of being lost.
SCRIPT_WIRED_BUTTONS = frozenset(
    {
        "mfa_webauthn_add",
        "mfa_webauthn_signup",
        "mfa_webauthn_authenticate",
        "mfa_webauthn_reauthenticate",
        "passkey_login",
    }
)


@register.filter
def wired_by_script(button_id) -> bool:
    return button_id in SCRIPT_WIRED_BUTTONS


@register.simple_tag(name="status")
def status_badge(kind: str, value, title: str = ""):
    """A service status as one badge, in words and a colour (console/web/status.py): ``{% status "deployment"
    dep.status %}``."""
    return statuses.badge(kind, value, title)


@register.filter
def status_words(value, kind: str) -> str:
    """A status in the words its badge uses, for a filter's options: ``{{ s|status_words:"connection" }}``."""
    return statuses.describe(kind, value)[0]


@register.filter
def safe_url(value) -> str:
    """An upstream URL fit for ``href``/``src`` (absolute http or https), else "" (see console.web.text)."""
    return text.safe_url(value)


@register.inclusion_tag("web/external_link.html")
def external_link(url, label=""):
    """A link to an upstream URL that opens in a new tab; a URL that is not http(s) is shown as text only."""
    return {"url": url, "href": text.safe_url(url), "label": label}


@register.simple_tag(takes_context=True)
def deferred(context, part_id: str):
    """Place a deferred part (console/web/deferred.py): its placeholder while loading, else the part."""
    placeholder = (context.get("deferred_parts") or {}).get(part_id)
    if placeholder is not None:
        return render_to_string(
            "web/deferred.html#deferred-loading",
            {"part_id": part_id, "wait_url": context.get("deferred_wait_url", ""), **placeholder},
        )
    if not part_id:  # "page.html#" would be the page itself, rendered inside itself until the stack ends
        raise ValueError("{% deferred %} needs the id of a part of the page")
    # The page's own template (a view rendering the page whole need not say which it is).
    name = context.get("deferred_template") or context.template.origin.template_name
    template = context.template.engine.get_template(f"{name}#{part_id}")
    return template.render(context)


@register.simple_tag(takes_context=True)
def poll_attrs(context, part_id: str):
    """The attributes that make a deferred part refresh itself every ``poll_seconds`` (static/js/pools.js)."""
    url = (context.get("deferred_poll") or {}).get(part_id)
    if not url:
        return ""
    seconds = context.get("poll_seconds", 10)
    return format_html('hx-get="{}" hx-trigger="poll" data-poll="{}" hx-swap="outerHTML"', url, seconds)


# A list page draws ``reltime`` and ``copy_id`` on every row: as inclusion tags (a sub-template and three
# ``date`` filters each) they were most of a 12-row list's rendering time. They build the same markup here.
TIME_HTML = '<time datetime="{}" title="{} UTC" data-relative>{}</time>'


@register.simple_tag
def reltime(value, empty="—"):
    """A moment as ``<time>`` in exact UTC, which console.js turns into "3 min ago" (exact on hover).

    A datetime is drawn here as templates/web/time.html would draw it (``date:'c'``, ``'Y-m-d H:i:s'``,
    ``'Y-m-d H:i'`` in the current time zone); anything else (a timestamp the service sent in a shape the
    records could not parse) goes through that template.
    """
    if not value:
        return format_html('<span class="muted">{}</span>', empty)
    if not isinstance(value, datetime):
        return render_to_string("web/time.html", {"value": value, "empty": empty})
    moment = timezone.template_localtime(value)
    day = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    minute = f"{day} {moment.hour:02d}:{moment.minute:02d}"
    return format_html(TIME_HTML, moment.isoformat(), f"{minute}:{moment.second:02d}", minute)


@register.simple_tag
def copy_id(value, label="id"):
    """An id in ``<code>`` with a button that copies it (console.js)."""
    if not value:
        return ""
    return format_html(
        '<span class="copyable"><code title="{0}">{0}</code><button type="button" class="copy-button" '
        'data-copy="{0}" aria-label="Copy {1} {0}">Copy</button></span>',
        value,
        label,
    )


@register.inclusion_tag("web/field.html")
def field(bound, label=None, help="", optional=False, required_mark=False, css=""):
    """One form field, the only place its markup is written (templates/web/field.html): a ``<div>`` holding
    the label, the control, its help and its errors, the control pointing at the help and the errors
    (``aria-describedby``) and marked ``aria-invalid`` when it has errors.

    ``label`` replaces the field's label, ``help`` is said after the field's own help text, ``optional``
    marks a field that is not required "(optional)", ``required_mark`` marks a required one "*", ``css``
    adds classes to the ``<div>``.
    """
    if not isinstance(bound, BoundField):
        # No such form in this render: nothing, as {{ form.x }} shows.
        return {"hidden": True, "control": ""}
    ident = bound.auto_id
    helps = [text for text in (bound.help_text, help) if text]
    described = [f"{ident}_helptext"] * bool(helps) + [f"{ident}_error"] * bool(bound.errors) if ident else []
    # What a form set on its widget itself is kept (Django does the same).
    own = bound.field.widget.attrs.get("aria-describedby")
    attrs = {"aria-describedby": " ".join(described)} if described and not own else None
    grouped = bound.field.widget.use_fieldset
    # A group of radios or checkboxes is described as a group (its <div>), each choice has its own label.
    control = bound.as_widget(attrs=None if grouped else attrs)
    return {
        "field": bound,
        "ident": ident,
        "label": bound.label if label is None else label,
        "helps": helps,
        "control": control,
        "described": " ".join(described),
        "grouped": grouped,
        "checkbox": bound.widget_type == "checkbox",
        "optional": optional and not bound.field.required,
        "required": required_mark and bound.field.required,
        "css": css,
        "hidden": bound.is_hidden,
    }
