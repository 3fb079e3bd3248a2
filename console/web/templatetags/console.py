"""Template filters every page may use (registered as builtins in settings.TEMPLATES)."""

from django import template

register = template.Library()


@register.filter
def words(value) -> str:
    """A service enum in plain words: ``AWAITING_INPUT`` → ``awaiting input``."""
    return str(value or "").replace("_", " ").lower()
