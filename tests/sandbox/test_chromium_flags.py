"""What the sandbox's browsers start with (console/sandbox/chromium/engine.py ``FLAGS``, confine.py
``browser_jail``): the features Playwright turns off stay off under the sandbox's own ``--disable-features``,
no window loads the address bar's WebUI popups, and each browser reads the system's font cache instead of
scanning the fonts into a cache of its own.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import playwright
import pytest
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

from console.sandbox.chromium.engine import DISABLED_FEATURES, PLAYWRIGHT_DISABLED_FEATURES
from tests.sandbox.test_chromium import create
from tests.sandbox_fixtures import browser_processes

# Playwright's list also names features of Edge ("ms…") and of Windows, which Debian's Chromium has not.
NOT_CHROMIUM_ON_LINUX = re.compile(r"^ms[A-Z]|Win$")


@pytest.fixture
def real(chromium_tenant):
    """A fresh tenant of the real-browser sandbox, its sessions deleted after the test."""
    return chromium_tenant


def playwrights_disabled_features() -> set[str]:
    """The features the pinned Playwright's driver turns off when it launches Chromium (its
    chromiumSwitches, read from the driver's bundle)."""
    bundle = Path(playwright.__file__).parent / "driver" / "package" / "lib" / "coreBundle.js"
    text = bundle.read_text(encoding="utf-8")
    found = re.search(r"disabledFeatures = \[(.*?)\]\.filter", text, re.S)
    assert found, f"no disabledFeatures list in {bundle}: has Playwright's driver changed its layout?"
    features = set(re.findall(r'^\s*"([A-Za-z]+)",?\s*$', found.group(1), re.M))
    assert len(features) >= 10, features
    return {feature for feature in features if not NOT_CHROMIUM_ON_LINUX.search(feature)}


def test_it_restates_every_feature_playwright_turns_off():
    # Chromium keeps only the last --disable-features: the sandbox's replaces Playwright's own list.
    missing = playwrights_disabled_features() - set(PLAYWRIGHT_DISABLED_FEATURES)
    assert not missing, f"Playwright turns these off and the sandbox's flags turn them on again: {missing}"
    assert "Translate" in DISABLED_FEATURES


@pytest.mark.chromium
def test_it_keeps_a_page_sent_to_http_on_http(real):
    """With HttpsUpgrades on (Playwright's list lost), http://lab.example.com/ landed on https://."""
    session = create(real, start_url="http://lab.example.com/?color=00ff00")
    with sync_playwright() as driver:
        browser = driver.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = next(page for context in browser.contexts for page in context.pages)
            assert page.url == "http://lab.example.com/?color=00ff00"
            page.goto("http://shop.example.com/", timeout=10_000)
            assert page.url == "http://shop.example.com/"
        finally:
            browser.close()


@pytest.mark.chromium
def test_it_gives_its_browsers_the_systems_font_cache(real, chromium_sandbox):
    if not os.path.isdir("/var/cache/fontconfig"):
        pytest.fail("this machine has no fontconfig cache (fontconfig's package makes it)")
    create(real, start_url="https://lab.example.com/")
    checked = 0
    for pid in browser_processes(chromium_sandbox[1]):
        jail = Path(f"/proc/{pid}/root")  # the browser's own view of its filesystem
        try:
            cache_seen = (jail / "var/cache/fontconfig").is_dir()
            own_cache = list((jail / "tmp/home/.cache/fontconfig").glob("*"))
        except OSError:
            continue
        if not Path(f"/proc/{pid}").exists():  # it ended meanwhile (another test's browser closing)
            continue
        # Without the system's cache a browser scans every font as it starts and writes its findings
        # into its home (about 0.2 s of a core a launch).
        assert cache_seen and own_cache == [], (pid, cache_seen, own_cache)
        checked += 1
    assert checked


@pytest.mark.chromium
def test_it_loads_no_webui_popup_for_the_address_bar(real):
    """Every window loaded the omnibox's two WebUI popups (chrome://omnibox-popup.top-chrome/) in a
    renderer of their own, about 0.7 s of a core a window that nobody sees."""
    session = create(real, start_url="https://lab.example.com/")
    with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
        socket.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
        reply = json.loads(socket.recv(timeout=30))
    urls = [target["url"] for target in reply["result"]["targetInfos"]]
    assert any(url.startswith("https://lab.example.com/") for url in urls), urls
    assert not [url for url in urls if url.startswith("chrome://")], urls
