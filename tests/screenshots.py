"""`make screenshots`: PNGs of each main page at 1440 and 400 px wide, in light and dark, into screenshots/.

Starts a sandbox and a console with demo data the way the browser tests do (tests/browser/conftest.py),
logs in as the demo admin and visits every section of the sidebar, a session's page, the palette and a
missing page. The files are for people to look at: screenshots/ is git-ignored.

    python -m tests.screenshots [--out screenshots] [--dark]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, DEMO_PASSWORD, running_console
from tests.sandbox_fixtures import TEST_DEMO_KEY, running_sandbox

ORG = "demo"
WIDTHS = (1440, 400)
# Every section of the sidebar (console/nav.py), as paths under /o/<org>/.
MAIN_PAGES = {
    "overview": "",
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


def take(out: Path, *, dark: bool = False) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with (
        running_sandbox() as sandbox_url,
        tempfile.TemporaryDirectory() as db_dir,
        running_console(sandbox_url, Path(db_dir)) as base_url,
        sync_playwright() as playwright,
    ):
        pages = dict(MAIN_PAGES)
        session = first_session_path(sandbox_url)
        if session:
            pages["session"] = session
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
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
