"""Upstream text on every page and stream: terminal escapes and bidi controls become visible symbols.

The service's strings reach the HTML escaped, but escaping lets an ESC (colours, hidden text when copied to
a terminal) and a right-to-left override (``exe.txt`` reading as ``txt.exe``) through. Each test plants such
a string where the service sends it and checks that none of those characters reaches the HTML, while the
text is still there, with its controls shown.
"""

import asyncio
import re

import pytest

from console.web.text import safe_url, visible

HOSTILE = "red\x1b[31mALERT\x1b[0m \u202etxt.exe\x07\x9b2J"
SHOWN = "red\u241b[31mALERT\u241b[0m [U+202E]txt.exe\u2407[U+009B]2J"
# Every C0 control but tab, LF and CR, DEL, C1, and the bidi controls.
INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
ON = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}
LONG = 259_200


def clean(body: str) -> str:
    found = INVISIBLE.findall(body)
    assert not found, f"raw control or bidi characters in the HTML: {found!r}"
    return body


async def read_stream(response, until: str) -> str:
    received = ""
    stream = aiter(response.streaming_content)
    while until not in received:
        received += (await asyncio.wait_for(anext(stream), 10)).decode()
    await response.streaming_content.aclose()
    return received


def session(tenant, **body):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    response = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG, "telemetry": ON, **body})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def test_it_makes_controls_and_bidi_overrides_visible_and_keeps_lines():
    assert visible(HOSTILE) == SHOWN
    assert visible("a\tb\nc\r\n") == "a\tb\nc\r\n"
    assert visible("\u2066x\u2069\u200f\u061c\x7f\x00") == "[U+2066]x[U+2069][U+200F][U+061C]\u2421\u2400"
    assert visible("plain ünïcode 日本") == "plain ünïcode 日本"


def test_it_makes_every_control_visible_in_plain_ascii_text_too():
    """Printable ASCII (most of a live row) passes a cheaper test than the pattern; any control, tab and
    line breaks aside, still becomes its symbol."""
    for code in [*range(0x20), 0x7F]:
        text = f"<li>row {chr(code)} end</li>"
        expected = (
            text if chr(code) in "\t\n\r" else text.replace(chr(code), INVISIBLE.sub(_shown, chr(code)))
        )
        assert visible(text) == expected
        assert not INVISIBLE.search(visible(text))
    assert visible("<li>plain row</li>") == "<li>plain row</li>"


def _shown(match) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else f"[U+{code:04X}]"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        " https://ok.example/",
        "java\tscript:alert(1)",
        "\x01javascript:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "https://ok.example@evil.example/",
        "//evil.example/",
        "/relative/path",
        "https:/\\evil.example",
        "https://ok.example:notaport/",
        "https://",
        "",
        None,
    ],
)
def test_it_refuses_every_url_but_absolute_http_and_https(url):
    assert safe_url(url) == ""


def test_it_keeps_http_and_https_urls_as_they_are():
    for url in ("https://live.example:8443/view?jwt=a.b.c", "HTTP://Example.com/x#y"):
        assert safe_url(url) == url


async def test_it_shows_telemetry_text_visibly_in_history_and_live_rows(viewer_client, tenant):
    sid = session(tenant)
    tenant.control(
        "POST",
        "telemetry/emit",
        {"session_id": sid, "events": [{"type": "console_log", "data": {"text": HOSTILE}}]},
    )
    body = clean((await viewer_client.get(f"/o/acme/browsers/{sid}/")).content.decode())
    assert SHOWN in body
    response = await viewer_client.get(f"/o/acme/browsers/{sid}/telemetry/stream/", {"last_event_id": 0})
    emitted = {"session_id": sid, "events": [{"type": "console_log", "data": {"text": "live " + HOSTILE}}]}
    await asyncio.to_thread(tenant.control, "POST", "telemetry/emit", emitted)
    stream = clean(await read_stream(response, "live red"))
    assert "live " + SHOWN in stream


async def test_it_shows_file_names_visibly(viewer_client, tenant):
    sid = session(tenant)
    name = "report\x1b[8m\u202ecod.exe"
    path = f"/home/kernel/Downloads/{name}"
    tenant.call("PUT", f"/browsers/{sid}/fs/write_file", params={"path": path}, content=b"x")
    listing = await viewer_client.get(f"/o/acme/browsers/{sid}/files/", {"path": "/home/kernel/Downloads"})
    body = clean(listing.content.decode())
    assert "report\u241b[8m[U+202E]cod.exe" in body
    assert "report%1B%5B8m%E2%80%AEcod.exe" in body  # links still name the real file


async def test_it_shows_proxy_names_visibly(admin_client, tenant):
    created = tenant.call("POST", "/proxies", json={"type": "isp", "name": "isp"}).json()
    tenant.fault(method="GET", path="^/proxies", fields={"name": HOSTILE}, count=None)
    for page in ("", f"{created['id']}/", f"{created['id']}/rename/"):
        body = clean((await admin_client.get(f"/o/acme/proxies/{page}")).content.decode())
        assert SHOWN in body


async def test_it_shows_auth_flow_messages_visibly(viewer_client, tenant):
    body = {"domain": "plain.example.com", "profile_name": "team"}
    cid = tenant.call("POST", "/auth/connections", json=body).json()["id"]
    planted = {"flow_status": "FAILED", "flow_type": "LOGIN", "error_code": "x", "error_message": HOSTILE}
    tenant.fault(method="GET", path=f"^/auth/connections/{cid}$", fields=planted, count=None)
    flow = clean((await viewer_client.get(f"/o/acme/auth/{cid}/flow/")).content.decode())
    assert "The login failed" in flow and SHOWN in flow
    clean((await viewer_client.get(f"/o/acme/auth/{cid}/")).content.decode())


async def test_it_shows_process_output_without_escapes(operator_client, tenant):
    sid = session(tenant)
    command = "printf 'red\\033[31mALERT\\342\\200\\256txt'"
    response = await operator_client.post(
        f"/o/acme/browsers/{sid}/processes/exec/",
        {"exec-command": command},
        headers={"HX-Request": "true", "HX-Target": "exec-pane"},
    )
    body = clean(response.content.decode())
    assert "ALERT" in body
