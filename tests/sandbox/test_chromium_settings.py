"""Real browsers, configured for real: the jail and user of the browser process, managed policies,
headful and kiosk windows, and the session's proxy (console/sandbox/chromium/engine.py, browser_jail.py,
forward_proxy.py). One Chromium sandbox serves them (``chromium_sandbox``); each test deletes its sessions.
The display tests have their own, whose shared browsers close with their last session (``closing_sandbox``).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import secrets
import stat
import threading
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import sync_playwright

from tests.sandbox.test_chromium import create, pixel, png_size, wait_for_event, x_sockets
from tests.sandbox.test_displays import abstract_x_sockets, cookie_of, x11_setup, x11_windows
from tests.sandbox_fixtures import (
    ROOT,
    browser_processes,
    displays,
    new_tenant,
    running_sandbox,
    socket_inodes,
    tenant_of,
)


@pytest.fixture
def real(chromium_tenant):
    """A fresh tenant of the real-browser sandbox, its sessions deleted after the test."""
    return chromium_tenant


@pytest.fixture(scope="module")
def closing_sandbox():
    """A Chromium sandbox whose shared browsers close with their last session (no linger): the display
    tests watch displays and their cookies end with their browsers. (url, owner marker)"""
    owner = "sandbox-test-closing-" + os.urandom(6).hex()
    settings = {"SANDBOX_BROWSER_LINGER_SECONDS": "0", "SANDBOX_BROWSER_OWNER": owner}
    with running_sandbox(SANDBOX_ENGINE="chromium", SANDBOX_MAX_BROWSERS="2", **settings) as url:
        yield url, owner


@pytest.fixture
def closing(closing_sandbox):
    """A tenant of ``closing_sandbox``, its sessions deleted after the test."""
    with tenant_of(closing_sandbox[0]) as tenant:
        yield tenant


def uids(pid: int) -> list[int]:
    """Real, effective, saved and filesystem uid of a process, as the host sees them."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(value) for value in line.split()[1:]]
    raise AssertionError(f"no Uid line for {pid}")


@pytest.mark.chromium
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox changes the browser's user only when it is root")
def test_it_runs_chromium_as_an_unprivileged_user_that_cannot_see_the_console(real, chromium_sandbox):
    url, owner = chromium_sandbox
    assert httpx.get(url + "/").json()["browsers"]["confinement"] == "bubblewrap, as an unprivileged user"
    session = create(real, start_url="https://lab.example.com/")
    processes = browser_processes(owner)
    assert processes
    for pid in processes:
        assert 0 not in uids(pid), f"browser process {pid} runs as root"
    secret = ROOT / "manage.py"  # readable by anyone on the host; the browser must not see the tree at all
    assert secret.exists()
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            # file: URLs reach the browser's filesystem (the system's files are there): only the jail stands
            # between the page and the host's.
            page = browser.contexts[0].pages[0]
            page.goto("file:///usr/share/", timeout=10_000)
            assert "chromium" in page.content()
            for target in (secret, ROOT / ".env", Path("/root"), Path("/home")):
                with pytest.raises(Exception, match="ERR_FILE_NOT_FOUND"):
                    page.goto(target.as_uri(), timeout=10_000)
        finally:
            browser.close()


def page_of(browser):
    return next(page for context in browser.contexts for page in context.pages)


def listening_ports(pids: list[int], table: str = "/proc/net/tcp") -> set[int]:
    """The TCP ports on 127.0.0.1 these processes listen on (state 0A) in a network namespace's table:
    the host's, or ``/proc/<pid>/net/tcp`` for that process's own."""
    inodes = socket_inodes(pids)
    ports = set()
    for line in Path(table).read_text().splitlines()[1:]:
        fields = line.split()
        address, _, port = fields[1].partition(":")
        if fields[3] == "0A" and fields[9] in inodes and address == "0100007F":
            ports.add(int(port, 16))
    return ports


def get_inside(pid: int, url: str) -> dict:
    """GET ``url`` from inside process ``pid``'s network namespace (a root test joins it on a thread of
    its own, as the sandbox does)."""
    outcome = {}

    def run() -> None:
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:
                outcome["error"] = OSError(ctypes.get_errno(), "setns")
                return
        finally:
            os.close(fd)
        try:
            outcome["value"] = httpx.get(url, timeout=10, trust_env=False).json()
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# Run in a session's command (python3 from the jail's /usr): its own loopback works, the port does not
# answer; it prints the interfaces it has.
REACH = """
import socket, sys
own = socket.create_server(("127.0.0.1", 0))
socket.create_connection(own.getsockname(), timeout=5).close()
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("reached")
except OSError as error:
    print("unreachable", type(error).__name__)
print(*sorted(line.partition(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]))
"""


def reach_from(tenant, session, port: int) -> list[str]:
    ran = tenant.call(
        "POST",
        f"/browsers/{session['session_id']}/process/exec",
        json={"command": "python3", "args": ["-c", REACH, str(port)]},
        timeout=30,
    )
    assert ran.status_code == 200, ran.text
    reply = ran.json()
    assert reply["exit_code"] == 0, base64.b64decode(reply["stderr_b64"])
    return base64.b64decode(reply["stdout_b64"]).decode().splitlines()


def own_cdp_port(owner: str) -> tuple[int, int]:
    """(pid, port): the browser process that has a debugging port (a session's own, where a CDP client
    moved it) and that port, in the process's network namespace."""
    for pid in browser_processes(owner):
        with contextlib.suppress(OSError):
            ports = listening_ports([pid], f"/proc/{pid}/net/tcp")
            if ports:
                (port,) = ports
                return pid, port
    raise AssertionError("no browser process listens on a port")


@pytest.mark.chromium
@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace per browser needs a root sandbox")
def test_it_keeps_a_browsers_raw_cdp_port_out_of_reach_of_everything_but_the_sandbox(real, chromium_sandbox):
    url, owner = chromium_sandbox
    assert httpx.get(url + "/").json()["browsers"]["cdp_port"] == "a network namespace of its own"
    own = create(real, start_url="https://lab.example.com/")
    other = new_tenant(url)
    neighbour = create(other, start_url="https://lab.example.com/")
    with sync_playwright() as playwright:
        # A CDP client (through the sandbox's guarded relay) moves the session to a process of its own.
        browser = playwright.chromium.connect_over_cdp(own["cdp_ws_url"], timeout=20_000)
        try:
            assert page_of(browser).evaluate("location.href") == "https://lab.example.com/"
            pid, port = own_cdp_port(owner)
            # The raw, unauthenticated endpoint is there, in the browser's own network namespace...
            version = get_inside(pid, f"http://127.0.0.1:{port}/json/version")
            assert version["webSocketDebuggerUrl"].startswith(f"ws://127.0.0.1:{port}/devtools/browser/")
            assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
            # ...and nowhere else: not on the host's loopback, not in another session's command, nor in
            # a command of the browser's own session.
            assert listening_ports(browser_processes(owner)) == set()
            with pytest.raises(httpx.TransportError):
                httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=5, trust_env=False)
            for tenant, session in ((other, neighbour), (real, own)):
                assert reach_from(tenant, session, port) == ["unreachable ConnectionRefusedError", "lo"]
        finally:
            browser.close()
    other.call("DELETE", f"/browsers/{neighbour['session_id']}", timeout=30)


@pytest.mark.chromium
@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace per browser needs a root sandbox")
def test_it_keeps_the_port_out_of_reach_of_commands_sharing_the_hosts_network():
    owner = "sandbox-test-netns-" + os.urandom(4).hex()
    with running_sandbox(
        SANDBOX_ENGINE="chromium", SANDBOX_EXEC_NETWORK="on", SANDBOX_BROWSER_OWNER=owner
    ) as url:
        tenant = new_tenant(url)
        own = create(tenant, start_url="https://lab.example.com/")
        neighbour = create(tenant, start_url="https://lab.example.com/")
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(own["cdp_ws_url"], timeout=20_000)
            try:
                pid, port = own_cdp_port(owner)
                get_inside(pid, f"http://127.0.0.1:{port}/json/version")
                seen = reach_from(tenant, neighbour, port)
                # The command has the host's network (more than a loopback), but not the browser's.
                assert seen[0] == "unreachable ConnectionRefusedError" and seen[1] != "lo"
            finally:
                browser.close()


@pytest.mark.chromium
def test_it_applies_the_sessions_chrome_policy_to_its_browser_alone(real):
    policy = {"URLBlocklist": ["docs.example.com/api"], "PasswordManagerEnabled": False}
    governed = create(real, start_url="https://docs.example.com/", chrome_policy=policy)
    assert governed["chrome_policy"] == policy
    assert "chrome_policy" not in governed["sandbox"]  # applied: nothing to say
    free = create(real, start_url="https://docs.example.com/")
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(governed["cdp_ws_url"], timeout=20_000)
        try:
            page = page_of(browser)
            page.goto("https://docs.example.com/quickstart", timeout=10_000)
            assert page.title() == "Quickstart"
            with pytest.raises(Exception, match="ERR_BLOCKED_BY_ADMINISTRATOR"):
                page.goto("https://docs.example.com/api", timeout=10_000)
        finally:
            browser.close()
        browser = playwright.chromium.connect_over_cdp(free["cdp_ws_url"], timeout=20_000)
        try:
            page = page_of(browser)
            page.goto("https://docs.example.com/api", timeout=10_000)
            assert page.title() == "API reference"
        finally:
            browser.close()


@pytest.mark.parametrize(
    "policy, message",
    [
        (["URLBlocklist"], "must be a JSON object"),
        ({"../../etc/passwd": 1}, "is not a Chrome policy name"),
        ({"ProxyMode": "direct"}, "managed by the service"),
        ({"URLBlocklist": ["x" * 1024] * 5200}, "at most 5 MiB"),
    ],
)
def test_it_refuses_a_chrome_policy_of_the_wrong_shape(tenant, policy, message):
    response = tenant.call("POST", "/browsers", json={"headless": True, "chrome_policy": policy})
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid_request"
    assert any(message in detail.get("message", "") for detail in error["details"]), error
    assert tenant.call("GET", "/browsers").json() == []


def window_of(session) -> list:
    """The session's window and page area and user agent, as its page sees them (over its CDP URL)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            return page_of(browser).evaluate(
                "[outerWidth, outerHeight, innerWidth, innerHeight, navigator.userAgent]"
            )
        finally:
            browser.close()


def shot_size(tenant, session) -> tuple[int, int]:
    shot = tenant.call("POST", f"/browsers/{session['session_id']}/computer/screenshot", json={})
    assert shot.status_code == 200, shot.text
    return png_size(shot.content)


@pytest.mark.chromium
def test_it_runs_headful_sessions_in_a_real_window_and_kiosk_ones_without_browser_chrome(
    closing, closing_sandbox
):
    assert httpx.get(closing_sandbox[0] + "/").json()["browsers"]["display"] == "Xvfb"
    viewport = {"width": 800, "height": 600}
    seen = {}
    # The module's sandbox is shared with the tests before this one: only the displays made here count.
    before = set(displays(closing_sandbox[1]))

    def made() -> list[int]:
        return [pid for pid in displays(closing_sandbox[1]) if pid not in before]

    for name, options in {
        "headful": {"headless": False},
        "kiosk": {"headless": False, "kiosk_mode": True},
        "headless": {"headless": True},
    }.items():
        session = create(closing, start_url="https://lab.example.com/", viewport=viewport, **options)
        assert "window" not in session["sandbox"]
        # The screenshot is of the viewport: first from the shared process (kiosk has its own), then
        # from the process of its own a CDP client moves the session to.
        shared = shot_size(closing, session)
        window = window_of(session)
        seen[name] = {"shared": shared, "window": window, "own": shot_size(closing, session)}
        if name != "headless":
            assert made()
            assert all(0 not in uids(pid) for pid in made())
        if name == "headful":
            # A new viewport keeps the page area equal to it.
            larger = {"width": 1024, "height": 700}
            patched = closing.call("PATCH", f"/browsers/{session['session_id']}", json={"viewport": larger})
            assert patched.status_code == 200, patched.text
            seen["patched"] = {"own": shot_size(closing, session), "window": window_of(session)}
        closing.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)
        deadline = time.monotonic() + 10
        while made() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert made() == []  # the display ends with its browser
    for name in ("headful", "kiosk", "headless"):
        assert seen[name]["shared"] == seen[name]["own"] == (800, 600), name
        assert seen[name]["window"][2:4] == [800, 600], name
    # A real window: its tabs and address bar above a page area of the viewport's size.
    outer_w, outer_h, _, _, agent = seen["headful"]["window"]
    assert outer_w == 800 and outer_h > 600 + 30
    assert "HeadlessChrome" not in agent
    assert seen["patched"]["own"] == (1024, 700)
    assert seen["patched"]["window"][2:4] == [1024, 700] and seen["patched"]["window"][1] > 700 + 30
    # Kiosk: the page is the whole display.
    assert seen["kiosk"]["window"][:4] == [800, 600, 800, 600]
    assert "HeadlessChrome" not in seen["kiosk"]["window"][4]
    assert "HeadlessChrome" in seen["headless"]["window"][4]


def authority_of(xvfb: int) -> Path:
    """The Xauthority file an Xvfb server was started with (its ``-auth``)."""
    arguments = Path(f"/proc/{xvfb}/cmdline").read_bytes().decode().split("\0")
    return Path(arguments[arguments.index("-auth") + 1])


@pytest.mark.chromium
def test_it_lets_only_the_sessions_own_browser_onto_its_display(closing, closing_sandbox):
    owner = closing_sandbox[1]
    viewport = {"width": 800, "height": 600}
    before = set(displays(owner))  # the module's sandbox is shared with the test before this one
    kiosk = create(
        closing, start_url="https://lab.example.com/", headless=False, kiosk_mode=True, viewport=viewport
    )
    headful = create(closing, start_url="https://lab.example.com/", headless=False, viewport=viewport)
    servers = [pid for pid in displays(owner) if pid not in before]
    assert len(servers) == 2  # the kiosk's process and the shared headful one, each on a display of its own
    authorities = [authority_of(xvfb) for xvfb in servers]
    for xvfb, authority in zip(servers, authorities, strict=True):
        cookie = cookie_of(authority)
        info = authority.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o600, uids(xvfb)[0])
        # The browser's copy of the cookie beside it is the browser's user's; a root sandbox's Xvfb runs
        # as neither root nor that user (SANDBOX_HELPER_USER).
        copy = authority.with_name("Xauthority")
        assert cookie_of(copy) == cookie and stat.S_IMODE(copy.stat().st_mode) == 0o600
        browser_uids = {uids(pid)[0] for pid in browser_processes(owner)}
        assert copy.stat().st_uid in browser_uids
        if os.geteuid() == 0:
            assert uids(xvfb) == [uids(xvfb)[0]] * 4 and uids(xvfb)[0] not in {0, *browser_uids}
        (address,) = x_sockets([xvfb])
        assert x11_setup(str(address)) == 0
        assert x11_setup(str(address), b"MIT-MAGIC-COOKIE-1", secrets.token_bytes(16)) == 0
        # The browser reached it with the cookie, through the socket file its jail binds: its window is
        # there. There is no other way in: no abstract socket of the display (nor TCP).
        assert x11_windows(str(address), cookie) >= 1
        assert "@" + str(address) not in abstract_x_sockets()
    # One display's cookie is no key to another.
    (address,) = x_sockets([servers[0]])
    assert x11_setup(str(address), b"MIT-MAGIC-COOKIE-1", cookie_of(authorities[1])) == 0
    # The browsers were given the file at their jail's own path, and show their pages.
    environments = [
        Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") for pid in browser_processes(owner)
    ]
    windowed = [entry for entry in environments if any(item.startswith(b"DISPLAY=") for item in entry)]
    assert windowed and all(b"XAUTHORITY=/tmp/.Xauthority" in entry for entry in windowed)
    shots = [
        closing.call("POST", f"/browsers/{s['session_id']}/computer/screenshot", json={})
        for s in (headful, kiosk)
    ]
    for shot in shots:
        assert shot.status_code == 200, shot.text
        # Not blank: the page's grey button on its white page.
        assert pixel(shot.content, 100, 30) != pixel(shot.content, 400, 300)
    for session in (headful, kiosk):
        closing.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)

    # The cookies go with the displays: their folder is removed once the server has exited, a moment after
    # its process is gone.
    def left() -> tuple[list, list]:
        return displays(owner), [path for path in authorities if path.parent.exists()]

    deadline = time.monotonic() + 10
    while left() != ([], []) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left() == ([], [])


@pytest.mark.chromium
def test_it_says_a_headful_session_runs_headless_without_xvfb():
    with running_sandbox(SANDBOX_ENGINE="chromium", SANDBOX_XVFB="/nonexistent/Xvfb") as url:
        status = httpx.get(url + "/").json()["browsers"]
        assert status["display"].startswith("none: no Xvfb at /nonexistent/Xvfb")
        tenant = new_tenant(url)
        session = create(tenant, headless=False, start_url="https://lab.example.com/")
        assert session["sandbox"]["window"].startswith("headless: no Xvfb at /nonexistent/Xvfb")
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
            try:
                assert "HeadlessChrome" in page_of(browser).evaluate("navigator.userAgent")
            finally:
                browser.close()


NETWORK = {"enabled": True, "browser": {"network": {"enabled": True}}}
IP_PAGE = "https://lab.example.com/ip"  # the client's address and country, as the demo site sees them


def new_proxy(tenant, **body) -> dict:
    response = tenant.call("POST", "/proxies", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def is_ip(data: dict) -> bool:
    return data.get("url") == IP_PAGE


@pytest.mark.chromium
def test_it_sends_a_sessions_traffic_through_its_proxy_and_nothing_past_the_demo_sites(real):
    proxy = new_proxy(real, type="isp", name="isp-london", config={"country": "GB"})
    exit_ip = real.call("POST", f"/proxies/{proxy['id']}/check", json={}).json()["ip_address"]
    proxied = create(real, start_url=IP_PAGE, proxy={"id": proxy["id"]}, telemetry=NETWORK)
    direct = create(real, start_url=IP_PAGE, telemetry=NETWORK)
    seen = wait_for_event(real, proxied["session_id"], "network_response", is_ip)["data"]
    assert json.loads(seen["body"]) == {"ip": exit_ip, "country": "GB"}
    assert seen["headers"]["via"] == f"1.1 {proxy['id']}"
    plain = wait_for_event(real, direct["session_id"], "network_response", is_ip)["data"]
    assert json.loads(plain["body"])["ip"] != exit_ip and "via" not in plain["headers"]
    egress = real.call("GET", f"/_sandbox/browsers/{proxied['session_id']}/egress").json()
    assert {"method": "GET", "url": IP_PAGE, "status": 200} in [
        {k: e[k] for k in ("method", "url", "status")} for e in egress
    ]
    assert {e["exit"] for e in egress} == {exit_ip}
    assert real.call("GET", f"/_sandbox/browsers/{direct['session_id']}/egress").json() == []
    # A host in the proxy's bypass list is reached direct.
    bypassing = new_proxy(real, type="isp", config={"country": "DE"}, bypass_hosts=["lab.example.com"])
    around = create(real, start_url=IP_PAGE, proxy={"id": bypassing["id"]}, telemetry=NETWORK)
    seen = wait_for_event(real, around["session_id"], "network_response", is_ip)["data"]
    assert json.loads(seen["body"]) == json.loads(plain["body"]) and "via" not in seen["headers"]
    egress = real.call("GET", f"/_sandbox/browsers/{around['session_id']}/egress").json()
    assert [(e["url"], e["exit"]) for e in egress if e["url"] == IP_PAGE] == [(IP_PAGE, "direct")]
    real.call("DELETE", f"/browsers/{around['session_id']}", timeout=30)
    # A host outside the demo sites: the proxy answers 502 with the service's proxy error, and the page's
    # telemetry reports it.
    outside = create(real, start_url="https://www.example.org/", proxy={"id": proxy["id"]}, telemetry=NETWORK)
    error = wait_for_event(real, outside["session_id"], "proxy_error")["data"]
    assert (error["code"], error["status"], error["method"]) == ("upstream_dns_failure", 502, "GET")
    # A proxy set later applies from the session's next page.
    assert real.call(
        "PATCH", f"/browsers/{direct['session_id']}", json={"proxy": {"id": proxy["id"]}}
    ).is_success
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(direct["cdp_ws_url"], timeout=20_000)
        try:
            page = page_of(browser)
            page.goto(IP_PAGE, timeout=10_000)
            assert json.loads(page.inner_text("body")) == {"ip": exit_ip, "country": "GB"}
        finally:
            browser.close()


@pytest.mark.chromium
def test_it_shows_chromiums_own_errors_for_a_refused_or_unreachable_proxy(real):
    config = {"host": "egress.example.net", "port": 3128, "username": "svc"}
    good = new_proxy(real, type="custom", protocol="http", config={**config, "password": "s3cret"})
    refused = new_proxy(real, type="custom", protocol="http", config={**config, "password": "wrong-s3cret"})
    down = new_proxy(real, type="custom", protocol="http", config={"host": "squid.invalid", "port": 3128})
    session = create(real, start_url=IP_PAGE, proxy={"id": good["id"]}, telemetry=NETWORK)
    seen = wait_for_event(real, session["session_id"], "network_response", is_ip)["data"]
    assert seen["headers"]["via"] == f"1.1 {good['id']}"
    real.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)
    for proxy, error, text in (
        (refused, "net::ERR_HTTP_RESPONSE_CODE_FAILURE", "HTTP ERROR 407"),
        (down, "net::ERR_PROXY_CONNECTION_FAILED", "ERR_PROXY_CONNECTION_FAILED"),
    ):
        session = create(real, start_url=IP_PAGE, proxy={"id": proxy["id"]}, telemetry=NETWORK)
        failed = wait_for_event(real, session["session_id"], "network_loading_failed")["data"]
        assert failed["error_text"] == error
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
            try:
                page = page_of(browser)
                assert page.url == "chrome-error://chromewebdata/"
                assert text in page.inner_text("body")
            finally:
                browser.close()
        real.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)
