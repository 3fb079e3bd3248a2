"""`make screenshots`: PNGs of each main page at 1440 and 400 px wide, in light and dark, into screenshots/.

Starts a sandbox and a console with demo data the way the browser tests do (tests/browser/conftest.py),
logs in as the demo admin and visits every section of the sidebar, a session's page, the palette and a
missing page; then the states that need more than a visit: a list loading and a list that failed (through
the sandbox's faults), the bulk delete's confirmation, and, when the sandbox runs real Chromium, the session
wall, a session's live screen and a recorded replay in its player. The files are for people to look at:
screenshots/ is git-ignored.

    python -m tests.screenshots [--out screenshots] [--dark]
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, DEMO_PASSWORD, running_console
from tests.sandbox_fixtures import TEST_DEMO_KEY, running_sandbox

ORG = "demo"
CHROMIUM = Path("/usr/bin/chromium")
WIDTHS = (1440, 400)
# Every section of the sidebar (console/nav.py), as paths under /o/<org>/.
MAIN_PAGES = {
    "overview": "",
    "usage": "usage/",
    "sessions": "browsers/",
    "pools": "pools/",
    "profiles": "profiles/",
    "proxies": "proxies/",
    "extensions": "extensions/",
    "telemetry-export": "telemetry_destinations/",
    "connections": "auth/",
    "credentials": "credentials/",
    "providers": "credential_providers/",
    "vaults": "vaults/",
    "apps": "apps/",
    "invocations": "invocations/",
    "deployments": "deployments/",
    "projects": "projects/",
    "members": "members/",
    "api-keys": "api_keys/",
    "audit": "audit/",
    "service-audit": "audit_logs/",
    "settings": "settings/",
    "settings-metrics": "settings/metrics/",
    "search": "search/?q=demo",
    "not-found": "no-such-page/",
}


def log_in(page: Page, base_url: str, username: str = "demo") -> None:
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username or e-mail").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/o/{ORG}/")


def first_session_path(sandbox_url: str) -> str | None:
    reply = httpx.get(
        f"{sandbox_url}/browsers", headers={"Authorization": f"Bearer {TEST_DEMO_KEY}"}, timeout=10
    )
    items = reply.json() if reply.status_code == 200 else []
    items = items.get("items", []) if isinstance(items, dict) else items
    return f"browsers/{items[0]['session_id']}/" if items else None


def demo_call(sandbox_url: str, method: str, path: str, body: dict | None = None, **options):
    reply = httpx.request(
        method,
        f"{sandbox_url}{path}",
        json=body,
        headers={"Authorization": f"Bearer {TEST_DEMO_KEY}"},
        timeout=120,
        **options,
    )
    reply.raise_for_status()
    return reply.json() if reply.content else None


LAB = "https://lab.example.com/?color={}"
LOGIN = [
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "jo@example.com"}},
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "hunter22"}},
    {"type": "press_key", "press_key": {"keys": ["Return"]}},
]
TELEMETRY = {name: {"enabled": True} for name in ("console", "network", "page", "interaction")}


def real_sessions(sandbox_url: str) -> dict[str, str] | None:
    """Two tagged real sessions and a replay of one: the paths of the wall, the screen and the player;
    None (with a message) when the sandbox runs simulated sessions."""
    engine = httpx.get(f"{sandbox_url}/", timeout=10).json()
    if engine.get("engine") != "chromium":
        print(f"No wall, live screen or replay screenshots: {engine.get('engine_reason', 'no Chromium')}")
        return None
    tag = secrets.token_hex(4)
    sids = []
    for colour, start_url in (("1f6feb", LAB.format("1f6feb")), ("login", "https://plain.example.com/login")):
        body = {
            "name": f"shot-{colour}",
            "headless": True,
            "viewport": {"width": 1024, "height": 640},
            "start_url": start_url,
            "timeout_seconds": 3600,
            "tags": {"shot": tag},
            "telemetry": {"enabled": True, "browser": TELEMETRY},
        }
        sids.append(demo_call(sandbox_url, "POST", "/browsers", body)["session_id"])
    # The screen's tab strip: the page opens a second tab (the screen follows it), then the first is brought
    # back to front (the strip then shows both, the first shown).
    opened = "await page.evaluate(() => window.open('https://docs.example.com/', '_blank')); return 1"
    demo_call(sandbox_url, "POST", f"/browsers/{sids[0]}/playwright/execute", {"code": opened})
    recorded = sids[1]
    replay = demo_call(sandbox_url, "POST", f"/browsers/{recorded}/replays", {"framerate": 10})
    time.sleep(1)
    demo_call(sandbox_url, "POST", f"/browsers/{recorded}/computer/batch", {"actions": LOGIN})
    time.sleep(2)
    demo_call(sandbox_url, "POST", f"/browsers/{recorded}/replays/{replay['replay_id']}/stop")
    return {
        "wall": f"browsers/wall/?tag=shot:{tag}",
        "screen": f"browsers/{sids[0]}/",
        "replay": f"browsers/{recorded}/replays/{replay['replay_id']}/",
    }


def take_states(
    page: Page, out: Path, base_url: str, sandbox_url: str, real: dict | None, suffix: str
) -> list[Path]:
    """The states a plain visit does not show, as files in ``out``."""
    shots = []

    def shoot(name: str, **options) -> None:
        shots.append(out / f"{name}-{suffix}.png")
        page.screenshot(path=shots[-1], **options)

    # A list still loading (the service answers after 8 s), and one that failed (three 503s in a row).
    fault(sandbox_url, method="GET", path="^/proxies$", latency_ms=8000, count=1)
    page.goto(f"{base_url}/o/{ORG}/proxies/")
    page.wait_for_selector("#proxies-table.deferred-loading")
    shoot("list-loading", full_page=True)
    fault(sandbox_url, method="GET", path="^/profiles$", status=503, count=3)
    page.goto(f"{base_url}/o/{ORG}/profiles/")
    page.wait_for_selector("#profiles-table.deferred-failed", timeout=20_000)
    shoot("list-failed", full_page=True)

    shots += take_forms_with_errors(page, out, base_url, suffix)

    # The bulk delete's confirmation (not confirmed).
    page.goto(f"{base_url}/o/{ORG}/browsers/")
    page.wait_for_selector('tbody input[form="sessions-bulk"]', timeout=20_000)
    page.get_by_label("Select every active session on this page").check()
    page.get_by_role("button", name="Delete selected…").click()
    page.wait_for_selector("#sessions-bulk-delete button", timeout=20_000)
    shoot("bulk-confirm", full_page=True)

    if real:
        page.goto(f"{base_url}/o/{ORG}/{real['wall']}")
        # Every tile showing its first frame: only tiles on screen are live (a phone shows one at a time), and
        # a tile scrolled past keeps its last picture.
        for tile in page.locator("[data-tile]").all():
            tile.scroll_into_view_if_needed()
            page.wait_for_function(
                "tile => Number(tile.dataset.frames) > 0", arg=tile.element_handle(), timeout=60_000
            )
        page.evaluate("() => window.scrollTo(0, 0)")
        time.sleep(1)
        shoot("wall", full_page=True)
        page.goto(f"{base_url}/o/{ORG}/{real['screen']}")
        page.wait_for_selector(
            "#screen-pane[data-mode='relay'] [data-screen-state][data-state='live']", timeout=30_000
        )
        page.wait_for_selector("#screen-pane:not([data-frames='0'])", timeout=30_000)
        time.sleep(1)
        page.wait_for_selector(
            "#screen-pane [data-screen-tabs]:not([hidden]) [data-tab] + [data-tab]", timeout=30_000
        )
        shoot("session-screen", full_page=True)
        # The driver's strip: a button per tab (released afterwards, for the next width).
        page.get_by_role("button", name="Take control").click()
        page.wait_for_selector(
            "#screen-pane[data-control-token] [data-screen-tabs] [data-tab] button", timeout=30_000
        )
        time.sleep(1)
        shoot("session-screen-driving", full_page=True)
        page.get_by_role("button", name="Release control").click()
        page.wait_for_selector("#screen-pane:not([data-control-token])")
        page.goto(f"{base_url}/o/{ORG}/{real['replay']}")
        page.wait_for_function(
            "() => { const v = document.querySelector('#replay-video'); return v && v.readyState >= 2; }",
            timeout=30_000,
        )
        page.wait_for_load_state("networkidle")
        shoot("replay-player", full_page=True)
    return shots


# Forms sent with bad input (field label → value typed): each comes back with its errors under the fields.
FORMS_WITH_ERRORS = {
    "pool-form-errors": (
        "pools/new/",
        {"Size *": "-1", "Chrome policy (JSON)": "{not json", "Start URL": "x"},
    ),
    "session-form-errors": ("browsers/new/", {"Inactivity timeout (seconds)": "1", "Start URL": "not a url"}),
    "credential-form-errors": ("credentials/new/", {"Name": "", "Domain": ""}),
}


def take_forms_with_errors(page: Page, out: Path, base_url: str, suffix: str) -> list[Path]:
    shots = []
    for name, (path, values) in FORMS_WITH_ERRORS.items():
        page.goto(f"{base_url}/o/{ORG}/{path}")
        for label, value in values.items():
            page.get_by_label(label, exact=True).fill(value)
        field = page.get_by_label(next(iter(values)), exact=True)
        field.evaluate("input => input.form.requestSubmit()")
        page.wait_for_selector('[aria-invalid="true"]', timeout=20_000)
        page.wait_for_load_state("networkidle")
        shots.append(out / f"{name}-{suffix}.png")
        page.screenshot(path=shots[-1], full_page=True)
    return shots


def fault(sandbox_url: str, **body) -> None:
    demo_call(sandbox_url, "POST", "/_sandbox/faults", body)


def take(out: Path, *, dark: bool = False) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with (
        running_sandbox(SANDBOX_ENGINE="chromium" if CHROMIUM.exists() else "simulated") as sandbox_url,
        tempfile.TemporaryDirectory() as db_dir,
        running_console(sandbox_url, Path(db_dir), demo=True) as console,
        sync_playwright() as playwright,
    ):
        base_url = console.url
        pages = dict(MAIN_PAGES)
        session = first_session_path(sandbox_url)
        if session:
            pages["session"] = session
        connections = demo_call(sandbox_url, "GET", "/auth/connections")
        connections = connections.get("items", []) if isinstance(connections, dict) else connections
        if connections:  # its "last login attempt"
            pages["connection"] = f"auth/{connections[0]['id']}/"
        real = real_sessions(sandbox_url)
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for width in WIDTHS:
            context = browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light"
            )
            page = context.new_page()
            log_in(page, base_url)
            suffix = f"{width}{'-dark' if dark else ''}"
            for name, path in pages.items():
                page.goto(f"{base_url}/o/{ORG}/{path}")
                page.wait_for_load_state("networkidle")
                written.append(out / f"{name}-{suffix}.png")
                page.screenshot(path=written[-1], full_page=True)
            page.goto(f"{base_url}/o/{ORG}/")
            page.keyboard.press("Control+k")
            page.keyboard.type("pool")
            page.wait_for_selector("#palette #search-results [role='option']")
            page.wait_for_load_state("networkidle")
            written.append(out / f"palette-{suffix}.png")
            page.screenshot(path=written[-1])
            page.keyboard.press("Escape")
            written += take_states(page, out, base_url, sandbox_url, real, suffix)
            context.close()
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="screenshots", type=Path)
    parser.add_argument("--dark", action="store_true", help="also take them in dark mode")
    args = parser.parse_args()
    written = take(args.out)
    if args.dark:
        written += take(args.out, dark=True)
    print(f"{len(written)} screenshots in {args.out}/")


if __name__ == "__main__":
    main()
