"""One vocabulary on screen (console/web/status.py): every status the service's contract lists has words
and a colour, and the badge draws them the one way."""

import pytest

from console.web import status


@pytest.mark.parametrize("kind", sorted(status.VOCABULARY))
def test_it_has_words_and_a_tone_for_every_status_of_the_contract(kind):
    table = status.STATUSES[kind]
    for value in status.VOCABULARY[kind]:
        words, tone = table[value]
        assert words and words[0].isupper() and "_" not in words, (kind, value)
        assert tone in {status.OK, status.WARN, status.ERROR, status.MUTED, status.INFO}


def test_it_draws_one_badge_in_words():
    html = str(status.badge("connection", "NEEDS_AUTH"))
    assert html == '<span class="chip chip-warn status status-needs_auth">Needs auth</span>'
    assert ">Building<" in str(status.badge("deployment", "in_progress"))


def test_it_says_a_status_it_does_not_know_in_plain_words():
    assert status.describe("deployment", "SCALING_DOWN") == ("Scaling down", status.MUTED)
    assert status.describe("deployment", None) == ("Unknown", status.MUTED)
    assert "&lt;b&gt;" in str(status.badge("proxy", "<b>"))
