"""The screen relay's tab strip (console/live/screen.py, console/live/tabs.py) against a CDP endpoint over a
real loopback websocket: the browser's page targets listed (bounded, checked), the screencast following the
front tab, the driver's choice brought to front; and an upstream that lies or floods. Real Chromium:
tests/browser/test_screen.py ("Tabs").
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json

import pytest
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

from console.live import cdp as cdp_client
from console.live import screen as relay
from console.live import tabs as tab_list
from tests.live.test_screen import events, jpeg, source, until


class Browser:
    """A CDP websocket server with tabs: ``open_tab`` and ``close_tab`` say so to whoever discovers targets;
    each attached page has its session ``S-<target>``, and ``frame(target)`` sends a frame of it."""

    def __init__(self):
        self.targets = {
            "T1": {"targetId": "T1", "type": "page", "title": "First", "url": "https://one.test/"}
        }
        self.asked: list[tuple[str, dict]] = []
        self.discovering = set()
        self.casting: dict[str, object] = {}  # session: socket
        self.sockets = set()

    async def handler(self, socket):
        self.sockets.add(socket)
        try:
            async for raw in socket:
                message = json.loads(raw)
                method, params = message.get("method"), message.get("params") or {}
                self.asked.append((method, params))
                reply: dict = {}
                if method == "Target.setDiscoverTargets":
                    self.discovering.add(socket)
                elif method == "Target.getTargets":
                    reply = {"targetInfos": list(self.targets.values())}
                elif method == "Target.attachToTarget":
                    if params["targetId"] not in self.targets:
                        await socket.send(
                            json.dumps({"id": message["id"], "error": {"message": "No target"}})
                        )
                        continue
                    reply = {"sessionId": "S-" + params["targetId"]}
                elif method == "Page.startScreencast":
                    self.casting[message["sessionId"]] = socket
                elif method == "Target.detachFromTarget":
                    self.casting.pop(params["sessionId"], None)
                await socket.send(json.dumps({"id": message["id"], "result": reply}))
        finally:
            self.sockets.discard(socket)
            self.discovering.discard(socket)

    def methods(self) -> list[str]:
        return [method for method, _ in self.asked]

    async def tell(self, method: str, params: dict) -> None:
        for socket in list(self.discovering):
            await socket.send(json.dumps({"method": method, "params": params}))

    async def open_tab(self, target_id: str, title: str = "", url: str = "about:blank", **info) -> None:
        self.targets[target_id] = {"targetId": target_id, "type": "page", "title": title, "url": url, **info}
        await self.tell("Target.targetCreated", {"targetInfo": self.targets[target_id]})

    async def close_tab(self, target_id: str) -> None:
        del self.targets[target_id]
        session = "S-" + target_id
        socket = self.casting.pop(session, None)
        if socket is not None:
            await socket.send(
                json.dumps({"method": "Target.detachedFromTarget", "params": {"sessionId": session}})
            )
        await self.tell("Target.targetDestroyed", {"targetId": target_id})

    async def frame(self, target_id: str, label: bytes) -> None:
        session = "S-" + target_id
        params = {
            "data": base64.b64encode(jpeg(label)).decode(),
            "metadata": {"timestamp": 1.0},
            "sessionId": 1,
        }
        message = {"method": "Page.screencastFrame", "sessionId": session, "params": params}
        for socket in list(self.sockets):
            await socket.send(json.dumps(message))


@pytest.fixture
async def browser():
    fake = Browser()
    async with serve(fake.handler, "127.0.0.1", 0) as server:
        fake.url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/devtools/browser/x?jwt=secret"
        yield fake


def strips(chunk: bytes | None) -> list[dict]:
    return [json.loads(e["data"][0]) for e in events(chunk or b"") if e["event"] == ["tabs"]]


def frames(chunk: bytes | None) -> list[bytes]:
    return [base64.b64decode(e["data"][1]) for e in events(chunk or b"") if e["event"] == ["frame"]]


async def watch(browser) -> tuple[relay.Viewer, asyncio.Event]:
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(browser.url), wake=wake, tabs=True)
    await until(lambda: viewer.screen.following and "S-T1" in browser.casting)
    return viewer, wake


async def test_it_lists_the_browser_s_pages_and_moves_to_a_tab_the_page_opened(browser):
    viewer, wake = await watch(browser)
    first = strips(await relay.next_chunk([viewer], wake, 1))
    assert first[-1]["tabs"] == [{"id": "T1", "title": "First", "url": "https://one.test/"}]
    assert first[-1]["shown"] == "T1" and first[-1]["s"] == "s1" and first[-1]["more"] is False
    assert browser.methods()[:2] == ["Target.setDiscoverTargets", "Target.getTargets"]

    # Not a page (a worker): not listed, nothing sent. A tab a client made (no opener): listed, not followed.
    await browser.tell("Target.targetCreated", {"targetInfo": {"targetId": "W1", "type": "service_worker"}})
    await browser.open_tab("C1", "Made by a client")
    await until(lambda: len(viewer.screen.tabs_body["tabs"]) == 2)
    assert viewer.screen.tabs_body["shown"] == "T1" and browser.methods().count("Target.attachToTarget") == 1
    # Then a popup: listed, and the screen moves to it.
    await browser.open_tab("T2", "Second", "https://two.test/", openerId="T1")
    await until(lambda: "S-T2" in browser.casting and "S-T1" not in browser.casting)
    await browser.frame("T1", b"the old tab")  # its session let go: not shown
    await browser.frame("T2", b"the new tab")
    await until(lambda: viewer.screen.frames_in == 1)
    chunk = await relay.next_chunk([viewer], wake, 1)
    assert frames(chunk) == [jpeg(b"the new tab")]
    assert [t["id"] for t in viewer.screen.tabs_body["tabs"]] == ["T1", "C1", "T2"]
    assert viewer.screen.tabs_body["shown"] == "T2" and viewer.screen.moves == 1
    # Chromium brought the popup to front itself: the relay did not.
    assert "Target.activateTarget" not in browser.methods()

    # A title change: sent once; the same again: nothing.
    changed = {**browser.targets["T2"], "title": "Second, loaded"}
    await browser.tell("Target.targetInfoChanged", {"targetInfo": changed})
    await until(lambda: viewer.screen.tabs_body["tabs"][2]["title"] == "Second, loaded")
    version = viewer.screen.tabs_version
    await browser.tell("Target.targetInfoChanged", {"targetInfo": changed})
    await browser.tell(
        "Target.targetInfoChanged", {"targetInfo": {**changed, "targetId": "W1", "type": "worker"}}
    )
    await browser.frame("T2", b"marker")
    await until(lambda: viewer.screen.frames_in == 2)
    assert viewer.screen.tabs_version == version
    viewer.screen.task.cancel()


async def test_it_asks_again_for_a_title_chromium_does_not_announce(browser, monkeypatch):
    """A loading tab is named by a part of its URL ("two.test/path", then "two.test"); its real title may
    come without a ``targetInfoChanged``: the relay asks for the list again until the title is not a part
    of the URL (at most UNTITLED_REFRESHES times)."""
    monkeypatch.setattr(relay, "REFRESH_AFTER", 0.05)
    viewer, _ = await watch(browser)
    await browser.open_tab("C1", "two.test/path", "https://two.test/path")
    await until(lambda: len(viewer.screen.tabs_body["tabs"]) == 2)
    browser.targets["C1"]["title"] = "two.test"  # changed without a word: still a part of the URL
    await until(lambda: viewer.screen.tabs_body["tabs"][1]["title"] == "two.test")
    # Asked again with nothing changed (the page still loading), then the title comes.
    asked = browser.methods().count("Target.getTargets")
    await until(lambda: browser.methods().count("Target.getTargets") >= asked + 2)
    browser.targets["C1"]["title"] = "Second, loaded"
    await until(lambda: viewer.screen.tabs_body["tabs"][1]["title"] == "Second, loaded")
    viewer.screen.task.cancel()


async def test_it_keeps_asking_more_slowly_for_the_title_of_a_page_slow_to_load(browser, monkeypatch):
    """A page that takes longer than the quick asks to load (a slow site, a busy machine) still gets its
    title in the strip: the relay goes on asking, every UNTITLED_SLOW_GAP, up to UNTITLED_ASKS in all. It
    gave up after the quick asks, and such a tab kept its URL for a name (a CI run saw it)."""
    monkeypatch.setattr(relay, "REFRESH_AFTER", 0.01)
    monkeypatch.setattr(relay, "UNTITLED_REFRESHES", 3)
    monkeypatch.setattr(relay, "UNTITLED_SLOW_GAP", 0.05)
    monkeypatch.setattr(relay, "UNTITLED_ASKS", 8)
    viewer, _ = await watch(browser)
    await browser.open_tab("C1", "two.test/path", "https://two.test/path")
    await until(lambda: len(viewer.screen.tabs_body["tabs"]) == 2)
    asked = browser.methods().count("Target.getTargets")
    await until(lambda: browser.methods().count("Target.getTargets") >= asked + 5)  # past the quick asks
    browser.targets["C1"]["title"] = "Loaded at last"
    await until(lambda: viewer.screen.tabs_body["tabs"][1]["title"] == "Loaded at last")
    viewer.screen.task.cancel()


async def test_it_stops_asking_for_a_title_that_never_comes(browser, monkeypatch):
    """A page with no title at all: the relay asks UNTITLED_ASKS times, then never again."""
    monkeypatch.setattr(relay, "REFRESH_AFTER", 0.01)
    monkeypatch.setattr(relay, "UNTITLED_REFRESHES", 2)
    monkeypatch.setattr(relay, "UNTITLED_SLOW_GAP", 0.02)
    monkeypatch.setattr(relay, "UNTITLED_ASKS", 5)
    viewer, _ = await watch(browser)
    asked = browser.methods().count("Target.getTargets")
    await browser.open_tab("C1", "two.test/path", "https://two.test/path")
    await until(lambda: viewer.screen.untitled_refreshes == 5)
    await until(lambda: viewer.screen.refresh_at is None)  # no ask planned any more
    assert browser.methods().count("Target.getTargets") - asked <= 5 + 2  # while it changed, then five
    assert viewer.screen.tabs_body["tabs"][1]["title"] == "two.test/path"  # the strip keeps the URL
    viewer.screen.task.cancel()


async def test_it_waits_a_moment_for_the_page_of_a_browser_that_has_none_yet(browser, monkeypatch):
    """A browser just started or woken takes connections before it lists its page: the relay asks again
    (every FIRST_PAGE_POLL, for FIRST_PAGE_SECONDS) rather than say at once there is nothing to show."""
    monkeypatch.setattr(relay, "FIRST_PAGE_POLL", 0.02)
    page = browser.targets.pop("T1")
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(browser.url), tabs=True)
    await until(lambda: browser.methods().count("Target.getTargets") >= 2)  # asked, and found none
    browser.targets["T1"] = page  # the page restored, without a word
    await until(lambda: viewer.screen.following and "S-T1" in browser.casting)
    assert viewer.screen.tabs_body["tabs"] == [{"id": "T1", "title": "First", "url": "https://one.test/"}]
    viewer.screen.task.cancel()


async def test_it_gives_a_new_viewer_the_current_strip_at_once(browser):
    viewer, _wake = await watch(browser)
    await browser.open_tab("T2", "Second", openerId="T1")
    await until(lambda: viewer.screen.tabs_body.get("shown") == "T2")
    late_wake = asyncio.Event()
    late = relay.ScreenHub.subscribe(viewer.screen.hub, source(browser.url), wake=late_wake, tabs=True)
    assert late.screen is viewer.screen
    said = strips(await relay.next_chunk([late], late_wake, 1))
    assert said == [viewer.screen.tabs_body] and len(said[0]["tabs"]) == 2
    # A wall's tile (no strip) gets none.
    tile = relay.ScreenHub.subscribe(viewer.screen.hub, source(browser.url), wake=asyncio.Event())
    assert strips(tile.pending()) == []
    viewer.screen.task.cancel()


async def test_it_moves_to_the_opener_when_the_shown_tab_closes_and_brings_it_to_front(browser):
    viewer, _wake = await watch(browser)
    await browser.open_tab("T3", "Other")
    await browser.open_tab("T2", "Popup", openerId="T1")
    await until(lambda: "S-T2" in browser.casting)
    await browser.close_tab("T2")
    await until(lambda: "S-T1" in browser.casting and viewer.screen.tabs_body["shown"] == "T1")
    assert ("Target.activateTarget", {"targetId": "T1"}) in browser.asked  # the screen is the front tab
    assert [t["id"] for t in viewer.screen.tabs_body["tabs"]] == ["T1", "T3"]
    assert viewer.screen.connections == 1  # moved within the connection, no reconnection
    # Without an opener: the newest tab left.
    await browser.close_tab("T1")
    await until(lambda: "S-T3" in browser.casting and viewer.screen.tabs_body["shown"] == "T3")
    assert not viewer.screen.ended and viewer.screen.status.startswith("live:")
    viewer.screen.task.cancel()


async def test_it_brings_the_driver_s_choice_to_front_and_shows_it(browser):
    viewer, wake = await watch(browser)
    await browser.open_tab("T2", "Second", openerId="T1")
    await until(lambda: "S-T2" in browser.casting)
    await viewer.screen.bring("T1")
    assert browser.asked[-1][0] in ("Target.activateTarget", "Target.attachToTarget")
    await until(lambda: "S-T1" in browser.casting and viewer.screen.tabs_body["shown"] == "T1")
    assert ("Target.activateTarget", {"targetId": "T1"}) in browser.asked
    assert viewer.screen.activations == 1
    await browser.frame("T1", b"first again")
    await until(lambda: viewer.screen.frames_in == 1)
    assert frames(await relay.next_chunk([viewer], wake, 1)) == [jpeg(b"first again")]
    viewer.screen.task.cancel()


async def test_it_keeps_at_most_so_many_tabs_with_short_visible_text_and_well_formed_ids(browser):
    viewer, _wake = await watch(browser)
    await browser.tell(
        "Target.targetCreated",
        {"targetInfo": {"targetId": 'T"><img src=x>', "type": "page", "title": "bad id", "url": ""}},
    )
    await browser.tell("Target.targetCreated", {"targetInfo": {"targetId": "x" * 65, "type": "page"}})
    await browser.tell("Target.targetCreated", {"targetInfo": {"targetId": 7, "type": "page"}})
    await browser.tell("Target.targetCreated", {"targetInfo": ["not", "an", "object"]})
    await browser.open_tab("LONG", "\u202eevil\x1b[31m" + "t" * 10_000, "https://x.test/" + "u" * 10_000)
    await browser.tell(
        "Target.targetCreated", {"targetInfo": {"targetId": "ODD", "type": "page", "title": {"a": 1}}}
    )
    for number in range(tab_list.MAX_TABS + 20):
        await browser.open_tab(f"MANY{number}", f"tab {number}", openerId="T1")
    await until(lambda: viewer.screen.tabs_body.get("more") and viewer.screen.tabs_body["shown"] != "T1")
    body = viewer.screen.tabs_body
    ids = [t["id"] for t in body["tabs"]]
    assert len(ids) == tab_list.MAX_TABS and ids[:3] == ["T1", "LONG", "ODD"]
    long = body["tabs"][1]
    assert len(long["title"]) <= tab_list.MAX_TITLE + 1 and len(long["url"]) <= tab_list.MAX_URL + 1
    assert "\u202e" not in long["title"] and "\x1b" not in long["title"]
    assert body["tabs"][2]["title"] == ""
    event = viewer.screen.tabs_bytes
    assert event.count(b"\n\n") == 1 and len(event) < 50 * 1024  # one event, however long the text sent
    # A tab beyond the bound is none of the strip's: the screen does not go there.
    assert "MANY60" not in ids and "S-MANY60" not in browser.casting
    viewer.screen.task.cancel()


async def test_it_asks_for_the_list_again_when_target_events_were_dropped_over_the_budget(browser):
    viewer, _wake = await watch(browser)
    socket = next(iter(browser.discovering))
    burst = cdp_client.UNSOLICITED_BUDGET["burst"]
    noise = json.dumps(
        {"method": "Target.targetInfoChanged", "params": {"targetInfo": {"targetId": "W", "type": "x"}}}
    )
    for _ in range(burst + 100):  # beyond the budget, short of a flood: some of them dropped
        await socket.send(noise)
    browser.targets["T9"] = {"targetId": "T9", "type": "page", "title": "Missed", "url": "https://nine.test/"}
    await browser.tell("Target.targetCreated", {"targetInfo": browser.targets["T9"]})  # maybe dropped too
    await until(lambda: viewer.screen.upstream.unsolicited.dropped > 0)
    await until(lambda: "T9" in [t["id"] for t in viewer.screen.tabs_body["tabs"]])
    assert browser.methods().count("Target.getTargets") >= 2 and not viewer.screen.ended
    viewer.screen.task.cancel()


async def test_it_ends_an_upstream_that_floods_it_with_target_events(browser):
    viewer, _wake = await watch(browser)
    socket = next(iter(browser.discovering))
    flood = json.dumps(
        {
            "method": "Target.targetInfoChanged",
            "params": {"targetInfo": {"targetId": "T1", "type": "page", "title": "x" * 50_000}},
        }
    )
    with contextlib.suppress(ConnectionClosed):
        for _ in range(100_000):
            await socket.send(flood)
            if viewer.screen.ended:
                break
    await until(lambda: viewer.screen.ended and not browser.sockets)
    assert "flooded the relay" in viewer.screen.status
    assert (
        viewer.screen.tabs_version < cdp_client.UNSOLICITED_BUDGET["burst"] + 10
    )  # the strip stayed bounded


async def test_it_takes_no_frame_without_a_page_attached(browser):
    """A frame without a session id once no page is attached (the shown tab detached) is not shown."""
    viewer, _wake = await watch(browser)
    await browser.open_tab("T2", "Second", openerId="T1")
    await until(lambda: "S-T2" in browser.casting)
    socket = next(iter(browser.sockets))
    await socket.send(json.dumps({"method": "Target.detachedFromTarget", "params": {"sessionId": "S-T2"}}))
    params = {"data": base64.b64encode(jpeg(b"stray")).decode(), "metadata": {}, "sessionId": 1}
    await socket.send(json.dumps({"method": "Page.screencastFrame", "params": params}))
    await until(lambda: "S-T2" in browser.casting and browser.methods().count("Target.attachToTarget") == 3)
    assert viewer.screen.frames_in == 0
    viewer.screen.task.cancel()
