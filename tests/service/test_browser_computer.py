"""console.service.browser_computer against the sandbox (notes §3)."""

import pytest

from console.service import Invalid, browser_computer, browsers


@pytest.fixture
async def session(service):
    viewport = {"width": 1024, "height": 768}
    return (await browsers.create_session(service, timeout_seconds=3600, viewport=viewport)).session_id


async def test_it_moves_clicks_types_presses_and_scrolls(service, session):
    await browser_computer.move_mouse(service, session, 10, 20)
    assert await browser_computer.mouse_position(service, session) == (10, 20)
    await browser_computer.click_mouse(service, session, 30, 40, button="right", num_clicks=2)
    await browser_computer.type_text(service, session, "hello")
    await browser_computer.press_key(service, session, ["Ctrl+a", "BackSpace"])
    await browser_computer.scroll(service, session, 50, 60, delta_y=2)
    await browser_computer.drag_mouse(service, session, [[1, 1], [100, 120]])
    assert await browser_computer.mouse_position(service, session) == (100, 120)


async def test_it_sends_a_batch(service, session):
    actions = [
        browser_computer.action("move_mouse", x=5, y=6),
        browser_computer.action("click_mouse", x=7, y=8, button=None),
    ]
    assert actions[1] == {"type": "click_mouse", "click_mouse": {"x": 7, "y": 8}}
    await browser_computer.batch(service, session, actions)
    assert await browser_computer.mouse_position(service, session) == (7, 8)


async def test_it_tells_which_batch_action_failed(service, session):
    actions = [
        browser_computer.action("move_mouse", x=5, y=6),
        browser_computer.action("press_key", keys=["Return"]),
        browser_computer.action("click_mouse", x=5000, y=8),
    ]
    with pytest.raises(Invalid) as refused:
        await browser_computer.batch(service, session, actions)
    index, message = browser_computer.failed_action(refused.value)
    assert index == 2 and "x" in message
    assert browser_computer.failed_action(Invalid("other", details=[{"code": "x", "message": "m"}])) is None


async def test_it_takes_a_screenshot(service, session):
    png = await browser_computer.screenshot(service, session)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    cropped = await browser_computer.screenshot(
        service, session, region={"x": 0, "y": 0, "width": 100, "height": 100}
    )
    assert cropped.startswith(b"\x89PNG") and cropped != png


async def test_it_uses_the_cursor_and_the_clipboard(service, session):
    await browser_computer.set_cursor(service, session, hidden=True)
    await browser_computer.write_clipboard(service, session, "copied text")
    assert await browser_computer.read_clipboard(service, session) == "copied text"
