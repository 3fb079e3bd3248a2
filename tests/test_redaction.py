"""The telemetry redaction rules (console/redaction.py): secrets go, what an operator debugs with stays."""

import json

import pytest

from console import redaction
from console.service.telemetry import Envelope

R, E = redaction.REDACTED, redaction.REDACTED_ENCODED


def test_it_keeps_header_names_and_drops_credential_values():
    sent = {
        "Authorization": "Bearer abc",
        "Cookie": "sid=abc; theme=dark",
        "set-cookie": ["sid=abc; HttpOnly", "b=2"],
        "Proxy-Authorization": "Basic abc",
        "X-Api-Key": "abc",
        "X-CSRF-Token": "abc",
        "X-Session-Id": "abc",
        "WWW-Authenticate": 'Bearer realm="api"',
        ":authority": "shop.example.com",
        "Referer": "https://shop.example.com/start?session=abc&lang=en",
        ":path": "/login?token=abc&step=2",
        "Accept": "text/html",
        "Content-Type": "application/json",
    }
    assert redaction.headers(sent) == {
        "Authorization": R,
        "Cookie": R,
        "set-cookie": R,
        "Proxy-Authorization": R,
        "X-Api-Key": R,
        "X-CSRF-Token": R,
        "X-Session-Id": R,
        "WWW-Authenticate": 'Bearer realm="api"',
        ":authority": "shop.example.com",
        "Referer": f"https://shop.example.com/start?session={E}&lang=en",
        ":path": f"/login?token={E}&step=2",
        "Accept": "text/html",
        "Content-Type": "application/json",
    }


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        # A form keeps its encoding, byte for byte, but for the secret values.
        ("email=jo%40example.com&password=hunter2&otp=123456", "application/x-www-form-urlencoded",
         f"email=jo%40example.com&password={E}&otp={E}"),
        ("q=shoes+red&card%5Bnumber%5D=4111", "", f"q=shoes+red&card%5Bnumber%5D={E}"),
        # JSON loses secret-named keys at any depth, values of other keys stay.
        ('{"email": "jo@example.com", "auth": {"pin": 1}, "items": [{"api_key": "k", "n": 2}]}',
         "application/json; charset=utf-8",
         json.dumps({"email": "jo@example.com", "auth": R, "items": [{"api_key": R, "n": 2}]})),
        # Cut short (bodies are truncated): kept, its obvious pairs redacted.
        ('{"user": "jo", "password": "hunter2", "card": "4111", "no', "application/json",
         f'{{"user": "jo", "password": "{R}", "card": "{R}", "no'),
        ('--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1', "multipart/form-data; boundary=x", R),
        ("log in: password=hunter2 user=jo", "text/plain", f"log in: password={R} user=jo"),
        ("<p>no secret here</p>", "text/html", "<p>no secret here</p>"),
        # HTML: hidden and secret-named fields and meta tags lose their values, others keep them.
        ('<input type="hidden" name="next" value="/a"><input name="email" value="jo@x">'
         '<input type=password name=p value=hunter2><meta name="csrf-token" content="abc">', "text/html",
         f'<input type="hidden" name="next" value="{R}"><input name="email" value="jo@x">'
         f'<input type=password name=p value="{R}"><meta name="csrf-token" content="{R}">'),
    ],
)  # fmt: skip
def test_it_redacts_each_kind_of_body(body, content_type, expected):
    assert redaction.post_data(body, {"Content-Type": content_type} if content_type else {}) == expected


def test_it_reads_the_type_of_a_response_body_from_its_mime_type():
    body = json.dumps({"access_token": "abc", "expires_in": 3600})
    redacted = redaction.post_data(body, {}, mime_type="application/json")
    assert json.loads(redacted) == {"access_token": R, "expires_in": 3600}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://x.test/a?q=1&api_key=abc&sessionId=9", f"https://x.test/a?q=1&api_key={E}&sessionId={E}"),
        ("https://x.test/cb#access_token=abc&type=bearer", f"https://x.test/cb#access_token={E}&type=bearer"),
        ("https://jo:pw@x.test/", f"https://jo:{E}@x.test/"),
        ("https://jo@x.test/#section", "https://jo@x.test/#section"),
        ("https://x.test/path/only", "https://x.test/path/only"),
        ("https://x.test/verify/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig?next=/a",
         f"https://x.test/verify/{E}?next=/a"),
    ],
)  # fmt: skip
def test_it_keeps_a_url_a_url_without_its_secret_values(url, expected):
    assert redaction.url(url) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('retry with password: "hunter2" and token=abc&x=1', f'retry with password: "{R}" and token={R}&x=1'),
        ("Authorization: Bearer abc.def", f"Authorization: Bearer {R}"),
        ("Cookie: a=1; b=2\nnext line", f"Cookie: {R}\nnext line"),
        ("GET https://x.test/?access_token=abc 401", f"GET https://x.test/?access_token={E} 401"),
        ('{"password":"x","user":"jo"}', f'{{"password":"{R}","user":"jo"}}'),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-nature here", f"jwt {R} here"),
        # Free text is read narrowly: these are no secrets.
        ("error code: 404, key: Enter, session: 3 tabs", "error code: 404, key: Enter, session: 3 tabs"),
    ],
)  # fmt: skip
def test_it_redacts_secret_looking_pairs_in_free_text(text, expected):
    assert redaction.text(text) == expected


def test_it_applies_each_rule_once():
    once = redaction.text("see https://x.test/?token=abc and password=hunter2")
    assert redaction.text(once) == once == f"see https://x.test/?token={E} and password={R}"


def test_it_masks_a_key_typed_into_a_secret_field_and_keeps_named_keys():
    def key(value, selector):
        event = {"type": "interaction_key", "data": {"key": value, "selector": selector, "tag": "INPUT"}}
        return redaction.event(event)["data"]["key"]

    assert key("h", "input#password") == "\u2022"
    assert key("7", "input.otp-digit") == "\u2022"
    assert key("Enter", "input#password") == "Enter"
    assert key("h", "input#search") == "h"


def test_it_builds_telemetry_records_already_redacted():
    raw = {
        "seq": 7,
        "debug": {"headers": {"Authorization": "Bearer abc"}},  # a field the service may add one day
        "event": {
            "type": "network_request",
            "category": "network",
            "ts": 1,
            "source": {"kind": "cdp", "metadata": {"note": "token=abc"}},
            "data": {
                "method": "POST",
                "url": "https://x.test/login?token=abc",
                "headers": {"content-type": "application/json", "cookie": "sid=abc"},
                "post_data": '{"password": "abc", "user": "jo"}',
            },
            "request": {"postData": "password=abc"},
        },
    }
    envelope = Envelope.from_json(raw)
    assert "abc" not in repr((envelope, envelope.extra, envelope.event.extra))
    assert envelope.event.data["method"] == "POST"
    assert envelope.event.data["headers"] == {"content-type": "application/json", "cookie": R}
    assert json.loads(envelope.event.data["post_data"]) == {"password": R, "user": "jo"}
    assert envelope.extra["debug"]["headers"] == {"Authorization": R}


def test_it_leaves_a_screenshot_alone():
    png = "iVBORw0KGgo" + "A" * 1000 + "token=abc"
    event = {"type": "monitor_screenshot", "data": {"png": png}}
    assert redaction.event(event)["data"]["png"] == png


def test_it_copies_only_what_it_changes_and_never_its_input():
    """The relay redacts every event (issue 28): one with nothing to redact comes back as it is, one with a
    secret in a field comes back as a copy along the way to that field, the rest shared, its input intact."""
    plain = {
        "type": "console_log",
        "source": {"kind": "cdp", "metadata": {"target_type": "page"}},
        "data": {"level": "log", "text": "burst event 7", "items": ["a", 1]},
    }
    assert redaction.event(plain) is plain
    secret = {
        "type": "network_request",
        "source": {"kind": "cdp", "metadata": {"target_type": "page"}},
        "data": {
            "url": "https://shop.example.com/?token=abc",
            "cookies": [{"name": "session", "value": "abc"}],
        },
    }
    result = redaction.event(secret)
    assert result["data"] == {
        "url": f"https://shop.example.com/?token={E}",
        "cookies": [{"name": "session", "value": R}],
    }
    assert result is not secret and result["data"] is not secret["data"]
    assert result["source"] is secret["source"]
    assert secret["data"]["url"].endswith("token=abc") and secret["data"]["cookies"][0]["value"] == "abc"
    typed = {"type": "interaction_key", "data": {"key": "x", "selector": "input#password"}}
    assert redaction.event(typed)["data"]["key"] == redaction.MASKED_KEY and typed["data"]["key"] == "x"
