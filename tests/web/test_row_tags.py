"""``reltime`` and ``copy_id`` draw every row of a list in Python: the same markup the templates made."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.template import engines
from django.utils import timezone as dj_timezone

from console.web.templatetags.console import copy_id, reltime

# templates/web/copy.html as it was (the tag now builds it).
COPY_HTML = (
    '{% if value %}<span class="copyable"><code title="{{ value }}">{{ value }}</code><button type="button" '
    'class="copy-button" data-copy="{{ value }}" aria-label="Copy {{ label }} {{ value }}">Copy</button>'
    "</span>{% endif %}"
)
MOMENTS = [
    datetime(2026, 11, 23, 10, 0, 0, 123456, tzinfo=UTC),
    datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2026, 6, 1, 12, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2026, 6, 1, 12, 30),  # naive
]


def template(name: str, **context) -> str:
    return str(engines["django"].get_template(name).render(context))


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_it_draws_a_moment_as_the_time_template_does(moment, zone):
    with dj_timezone.override(zone):
        assert reltime(moment) == template("web/time.html", value=moment, empty="—")
    assert "data-relative>" in reltime(moment)


@pytest.mark.parametrize("value", [None, "", "not a time", 0])
def test_it_draws_anything_else_as_the_time_template_does(value):
    assert reltime(value, "never") == template("web/time.html", value=value, empty="never")


def test_it_escapes_the_empty_label():
    assert reltime(None, "<b>") == '<span class="muted">&lt;b&gt;</span>'


@pytest.mark.parametrize("value", ["proj_abc", 'a"<b>&c', 42, "", None])
def test_it_draws_an_id_as_the_copy_template_did(value):
    expected = engines["django"].from_string(COPY_HTML).render({"value": value, "label": "project id"})
    assert copy_id(value, "project id") == expected
