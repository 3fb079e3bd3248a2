"""Sandbox conformance: computer actions (notes §3): pointer tracking, clicks, keys, scrolls, batches that
stop at the first error and name its index, interaction telemetry, and real PNG screenshots."""

import struct
import zlib

import pytest

LONG = 259_200


@pytest.fixture
def session(tenant):
    body = {
        "timeout_seconds": LONG,
        "viewport": {"width": 1280, "height": 800},
        "telemetry": {"enabled": True, "browser": {"interaction": {"enabled": True}}},
    }
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    response = tenant.call("POST", "/browsers", json=body)
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def computer(tenant, session, op, body=None):
    return tenant.call("POST", f"/browsers/{session}/computer/{op}", json=body if body is not None else {})


def position(tenant, session):
    return computer(tenant, session, "get_mouse_position").json()


def events(tenant, session, *categories):
    params = {"since": "1h", "limit": 100, "category": ",".join(categories)}
    return [
        e["event"] for e in tenant.call("GET", f"/browsers/{session}/telemetry/events", params=params).json()
    ]


def decode_png(data: bytes):
    """(width, height, rows of RGB tuples) of an 8-bit RGB PNG without filtering."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc
        chunks.setdefault(kind, b"")
        chunks[kind] += body
        pos += 12 + length
    width, height, depth, colour, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour) == (8, 2) and b"IEND" in chunks
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = width * 3 + 1
    rows = []
    for y in range(height):
        line = raw[y * stride : (y + 1) * stride]
        assert line[0] == 0
        rows.append([tuple(line[1 + 3 * x : 4 + 3 * x]) for x in range(width)])
    return width, height, rows


def test_it_starts_with_the_pointer_in_the_middle_and_tracks_moves(tenant, session):
    assert position(tenant, session) == {"x": 640, "y": 400}
    assert computer(tenant, session, "move_mouse", {"x": 10, "y": 20}).status_code == 204
    assert position(tenant, session) == {"x": 10, "y": 20}
    computer(tenant, session, "click_mouse", {"x": 700, "y": 350, "button": "right"})
    assert position(tenant, session) == {"x": 700, "y": 350}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"x": 1280, "y": 10}, "x"),
        ({"x": -1, "y": 10}, "x"),
        ({"x": 10}, "y"),
        ({"x": "10", "y": 10}, "x"),
        ({"x": 1, "y": 1, "button": "thumb"}, "button"),
        ({"x": 1, "y": 1, "click_type": "double"}, "click_type"),
    ],
)
def test_it_refuses_a_bad_click_with_the_field_named(tenant, session, body, field):
    response = computer(tenant, session, "click_mouse", body)
    assert response.status_code == 400
    assert [d["code"] for d in response.json()["details"]] == [field]
    assert position(tenant, session) == {"x": 640, "y": 400}


def test_it_records_clicks_keys_and_scrolls_as_interaction_telemetry(tenant, session):
    computer(tenant, session, "click_mouse", {"x": 750, "y": 350})  # the "Add to cart" button
    computer(tenant, session, "type", {"text": "ab"})
    computer(tenant, session, "press_key", {"keys": ["Return"]})
    computer(tenant, session, "scroll", {"x": 600, "y": 400, "delta_y": 3})
    seen = events(tenant, session, "interaction")
    assert [e["type"] for e in seen] == [
        "interaction_click",
        "interaction_key",
        "interaction_key",
        "interaction_key",
        "interaction_scroll_settled",
    ]
    click = seen[0]["data"]
    assert (click["x"], click["y"], click["selector"], click["tag"], click["text"]) == (
        750,
        350,
        "button#add-to-cart",
        "BUTTON",
        "Add to cart",
    )
    assert [e["data"]["key"] for e in seen[1:4]] == ["a", "b", "Return"]
    assert seen[1]["data"]["selector"] == "button#add-to-cart"
    scroll = seen[4]["data"]
    assert (scroll["from_y"], scroll["to_y"], scroll["target_selector"]) == (0, 300, "html")
    assert all(e["data"]["target_type"] == "page" and e["data"]["url"] for e in seen)


def test_it_records_control_calls_when_captured(tenant, session):
    computer(tenant, session, "move_mouse", {"x": 1, "y": 1})
    calls = events(tenant, session, "control")
    assert calls[-1]["type"] == "api_call" and calls[-1]["data"]["operation_id"] == "computer.move_mouse"


def test_it_records_nothing_when_interaction_is_not_captured(tenant):
    plain = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
    assert computer(tenant, plain, "click_mouse", {"x": 5, "y": 5}).status_code == 204
    assert tenant.call("GET", f"/browsers/{plain}/telemetry/events").json() == []


def test_it_runs_a_batch_in_order(tenant, session):
    actions = [
        {"type": "move_mouse", "move_mouse": {"x": 100, "y": 100}},
        {"type": "click_mouse", "click_mouse": {"x": 200, "y": 40}},
        {"type": "type_text", "type_text": {"text": "headphones"}},
        {"type": "press_key", "press_key": {"keys": ["Return"]}},
        {"type": "sleep", "sleep": {"duration_ms": 10}},
        {"type": "drag_mouse", "drag_mouse": {"path": [[10, 10], [300, 300]]}},
    ]
    response = computer(tenant, session, "batch", {"actions": actions})
    assert response.status_code == 204, response.text
    assert position(tenant, session) == {"x": 300, "y": 300}
    assert len(events(tenant, session, "interaction")) == 1 + len("headphones") + 1


def test_it_stops_a_batch_at_the_first_error_and_names_its_index(tenant, session):
    actions = [
        {"type": "move_mouse", "move_mouse": {"x": 100, "y": 100}},
        {"type": "click_mouse", "click_mouse": {"x": 110, "y": 110}},
        {"type": "click_mouse", "click_mouse": {"x": 5000, "y": 110}},
        {"type": "move_mouse", "move_mouse": {"x": 900, "y": 700}},
    ]
    response = computer(tenant, session, "batch", {"actions": actions})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "batch_action_failed"
    assert body["details"] == [
        {"code": "actions[2]", "message": "click_mouse.x: must be between 0 and 1279, got 5000"}
    ]
    assert "2 action(s) before it ran" in body["message"]
    assert position(tenant, session) == {"x": 110, "y": 110}  # the first two ran, the last did not
    assert [e["type"] for e in events(tenant, session, "interaction")] == ["interaction_click"]


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"type": "teleport"}, "type: must be one of"),
        ({"type": "click_mouse"}, "click_mouse.x: is required"),
        (
            {"type": "click_mouse", "click_mouse": {"x": 1, "y": 1}, "move_mouse": {}},
            "move_mouse: the action",
        ),
        ("click", "type: each action must be an object"),
        (
            {"type": "sleep", "sleep": {"duration_ms": 60_000}},
            "sleep.duration_ms: must be between 0 and 10000",
        ),
    ],
)
def test_it_explains_malformed_batch_actions(tenant, session, action, message):
    actions = [{"type": "move_mouse", "move_mouse": {"x": 1, "y": 1}}, action]
    response = computer(tenant, session, "batch", {"actions": actions})
    assert response.status_code == 400
    (detail,) = response.json()["details"]
    assert detail["code"] == "actions[1]" and detail["message"].startswith(message), detail


def test_it_refuses_a_batch_without_actions(tenant, session):
    response = computer(tenant, session, "batch", {"actions": []})
    assert response.status_code == 400 and response.json()["details"][0]["code"] == "actions"


def test_it_keeps_the_clipboard_and_cursor_visibility(tenant, session):
    assert computer(tenant, session, "clipboard/write", {"text": "copied"}).status_code == 204
    assert computer(tenant, session, "clipboard/read").json() == {"text": "copied"}
    assert computer(tenant, session, "cursor", {"hidden": True}).json() == {"ok": True}
    assert computer(tenant, session, "cursor", {}).status_code == 400


def test_it_takes_a_png_screenshot_showing_the_pointer_and_the_last_clicks(tenant, session):
    computer(tenant, session, "click_mouse", {"x": 320, "y": 600})
    computer(tenant, session, "move_mouse", {"x": 1000, "y": 200})
    response = computer(tenant, session, "screenshot")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    width, height, rows = decode_png(response.content)
    assert (width, height) == (640, 400)  # 1280x800 scaled by a half
    assert rows[100][508] == rows[108][500] == (220, 38, 38)  # the crosshair at (1000, 200) / 2
    assert rows[300][160] == (37, 99, 235)  # a blue mark for the left click at (320, 600) / 2


def test_it_hides_the_pointer_when_the_cursor_is_hidden(tenant, session):
    computer(tenant, session, "move_mouse", {"x": 1000, "y": 200})
    computer(tenant, session, "cursor", {"hidden": True})
    _, _, rows = decode_png(computer(tenant, session, "screenshot").content)
    assert rows[100][508] != (220, 38, 38)


def test_it_crops_a_screenshot_to_a_region(tenant, session):
    response = computer(
        tenant, session, "screenshot", {"region": {"x": 0, "y": 0, "width": 320, "height": 200}}
    )
    width, height, _ = decode_png(response.content)
    assert (width, height) == (640, 400)
    bad = computer(tenant, session, "screenshot", {"region": {"x": 0, "y": 0, "width": 5000, "height": 10}})
    assert bad.status_code == 400 and bad.json()["details"][0]["code"] == "region"


def test_it_refuses_actions_on_an_ended_session(tenant, session):
    tenant.call("DELETE", f"/browsers/{session}")
    assert computer(tenant, session, "move_mouse", {"x": 1, "y": 1}).status_code == 404
