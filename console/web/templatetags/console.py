"""Template filters every page may use (registered as builtins in settings.TEMPLATES)."""

from django import template
from django.template.loader import render_to_string
from django.utils.html import format_html

from console.web import text

register = template.Library()


@register.filter
def words(value) -> str:
    """A service enum in plain words: ``AWAITING_INPUT`` → ``awaiting input``."""
    return str(value or "").replace("_", " ").lower()


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


@register.inclusion_tag("web/time.html")
def reltime(value, empty="—"):
    """A moment as ``<time>`` in exact UTC, which console.js turns into "3 min ago" (exact on hover)."""
    return {"value": value, "empty": empty}


@register.inclusion_tag("web/copy.html")
def copy_id(value, label="id"):
    """An id in ``<code>`` with a button that copies it (console.js)."""
    return {"value": value, "label": label}
