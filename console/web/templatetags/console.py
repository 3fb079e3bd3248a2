"""Template filters every page may use (registered as builtins in settings.TEMPLATES)."""

from django import template

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


@register.inclusion_tag("web/time.html")
def reltime(value, empty="—"):
    """A moment as ``<time>`` in exact UTC, which console.js turns into "3 min ago" (exact on hover)."""
    return {"value": value, "empty": empty}


@register.inclusion_tag("web/copy.html")
def copy_id(value, label="id"):
    """An id in ``<code>`` with a button that copies it (console.js)."""
    return {"value": value, "label": label}
