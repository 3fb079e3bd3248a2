"""The screen pane of a session: the browser live, relayed by the console (``console.live.screen``), and
driven by the operator who holds its control lease (``console.live.control``).

Modes: **relay** when the session has a ``cdp_ws_url`` the console may open (the frames come from this
process; the browser never sees the URL or its jwt); **snapshots** otherwise (a simulated sandbox session,
a ``cdp_ws_url`` the console may not open), and also when the relay says the upstream refused: the
session's screenshots through the console (``computer/screenshot.png``, a request of the member's own each
time, refreshed every ``SNAPSHOT_SECONDS`` while the tab is visible), driven through the same input
endpoint. The service's own live-view URLs are never handed to a browser: they are capabilities the
console cannot take back from a member who lost access (docs/security.md, section 2).

Input: click, double click, right click, scroll, typed text and key combinations become computer actions
through the service client. They are refused (409) unless the operator holds the session's control lease:
"Take control" takes it (unless someone else holds it: "X is driving") and hands its token to the page
(kept in the Django session too, so a reload keeps it), which sends it with each action; each action and
the pane's heartbeat (``action=renew``) renew it; "Release" frees it. Everyone else sees who drives and
may ask for control (``ask``; the holder grants or declines it, or it is granted by itself when the holder
stays idle), and an admin may take it over at once (``force``; the holder is told). Each window watching
checks in (``screen/presence/``) every ``SCREEN_PRESENCE_SECONDS``: its answer is the pane's control bar
(who drives, who watches with their roles, requests, a notice), the same from every console process.
Audit: taking, releasing, asking, granting, declining and forcing control are rows of their own, and each
action sent is one row (the page never sends pointer moves, and coalesces
wheel turns and typed characters), whose detail never holds the typed text, only its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited, deny, record
from console.browsers.panes import common
from console.live import cdp, control, guard
from console.live import screen as relay
from console.live.tabs import TARGET_ID
from console.service import Conflict, Invalid, NotFound, ServiceError, browser_computer, browsers
from console.web.decorators import org_view
from console.web.render import render

SESSION_KEY = "screen_control"  # tokens of the leases this Django session took: {"<org>:<session>": token}
KEPT_TOKENS = 20
SNAPSHOT_SECONDS = 2
MAX_FPS = 30.0
MAX_TEXT = 500
MAX_SCROLL = 5000
# xdotool key names as the service takes them (``Ctrl+Shift+t``, ``Return``, ``F5``), or one character.
MODIFIERS = ("Ctrl", "Alt", "Shift", "Super")
NAMED_KEYS = frozenset(
    {"Return", "Tab", "BackSpace", "Delete", "Escape", "Up", "Down", "Left", "Right", "Home", "End"}
    | {"Page_Up", "Page_Down", "Insert", "space", "Menu"}
    | {f"F{n}" for n in range(1, 13)}
)
KEY = re.compile(r"^((?:(?:Ctrl|Alt|Shift|Super)\+)*)(.+)$")

hub = relay.ScreenHub(linger_seconds=getattr(settings, "SCREEN_LINGER_SECONDS", 3.0))


def key(request, session_id: str) -> tuple:
    svc = request.service
    return (session_id, request.org.pk, svc.project)


def source(request, session_id: str) -> relay.Source:
    """Where the relay reads this session's screen: looked up again at each (re)connection."""
    svc = common.plain_service(request)

    async def locate() -> relay.Target:
        try:
            session = await browsers.get_session(svc, session_id, include_deleted=True)
        except NotFound:
            return relay.Target(None, 0, 0, ended=True)
        width, height = common.viewport(session)
        asleep = session.sandbox is not None and session.sandbox.browser == "standby"
        return relay.Target(session.cdp_ws_url, width, height, ended=session.ended, awake=not asleep)

    async def poster() -> bytes:
        return await browser_computer.screenshot(svc, session_id)

    return relay.Source(
        key=key(request, session_id), locate=locate, allow_private=svc.allow_private, poster=poster
    )


async def mode(request, session: browsers.Session) -> tuple[str, str]:
    """("relay" | "snapshots" | "none", why not the relay)."""
    if session.ended:
        return "none", "The session has ended."
    if session.simulated:
        reason = "This sandbox session is simulated: it has no screencast to relay."
    else:
        try:
            await cdp.check_cdp_url(session.cdp_ws_url, allow_private=request.service.allow_private)
        except cdp.EndpointUnavailable as exc:
            reason = f"The console cannot relay this session's screen: {exc}."
        else:
            return "relay", ""
    return "snapshots", reason


def _name(request, session_id: str) -> str:
    return f"{request.org.pk}:{session_id}"


async def _kept_token(request, session_id: str) -> str | None:
    return (await request.session.aget(SESSION_KEY, {})).get(_name(request, session_id))


async def _keep_token(request, session_id: str, token: str | None) -> None:
    """The token of a lease taken from this Django session, so a reload of the page keeps control (the
    lease itself, and whether the token still holds it, is the database's)."""
    held = dict(await request.session.aget(SESSION_KEY, {}))
    held.pop(_name(request, session_id), None)
    if token:
        held[_name(request, session_id)] = token
    await request.session.aset(SESSION_KEY, dict(list(held.items())[-KEPT_TOKENS:]))


def _controls(
    request,
    session_id: str,
    *,
    ended: bool,
    driver: control.Driver | None,
    token: str | None,
    presence: control.Presence | None = None,
    notice: str = "",
) -> dict:
    """What the control bar shows this member (``screen-controls``): rendered with the pane, and again at
    each check-in of its window."""
    membership = request.membership
    can_operate = membership.has_role("operator") and not ended
    mine = driver is not None and driver.is_member(membership)
    token = token if mine and can_operate and token and driver.has_token(token) else None
    requests = presence.requests if presence and token else []
    if presence and presence.claim:
        state = "claim"
    elif token:
        state = "mine"
    elif driver is not None:
        state = "other"
    else:
        state = "free"
    return {
        "ended": ended,
        "can_operate": can_operate,
        "can_force": can_operate and membership.has_role("admin"),
        "driver": driver,
        "control_token": token,
        "control_state": state,
        "driving_elsewhere": mine and token is None,
        "presence": presence,
        "watchers": presence.watchers if presence else [],
        "requests": requests,
        "asking": bool(presence and presence.asked_at and not mine),
        "notice": " ".join(n for n in (notice, presence.notice if presence else "") if n),
        "control_url": common.url(request, "screen-control", session_id),
        "presence_url": common.url(request, "screen-presence", session_id),
        "presence_seconds": control.presence_seconds(),
    }


async def _context(request, session: browsers.Session, notice: str = "") -> dict:
    sid = session.session_id
    chosen, reason = await mode(request, session)
    width, height = common.viewport(session)
    driver = None if session.ended else await control.driver(request.org.pk, sid)
    token = await _kept_token(request, sid) if driver and driver.is_member(request.membership) else None
    controls = _controls(request, sid, ended=session.ended, driver=driver, token=token, notice=notice)
    return {
        "session": session,
        "mode": chosen,
        "reason": reason,
        "width": width,
        "height": height,
        "stream_url": common.url(request, "screen-stream", sid),
        "snapshot_url": common.url(request, "screenshot", sid),
        "snapshot_seconds": SNAPSHOT_SECONDS,
        "input_url": common.url(request, "screen-input", sid),
        "tab_url": common.url(request, "screen-tab", sid),
        "renew_seconds": max(1, int(control.lease_seconds() / 4)),
        "pane_url": common.url(request, "screen", sid),
        **controls,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def screen_pane(request, session_id: str):
    session = await common.get_session(request, session_id)
    if session.ended:
        await control.end(request.org.pk, session_id)
    context = await _context(request, session)
    return render(request, "browsers/panes/screen.html", context, partial="screen-pane")


@require_http_methods(["GET"])
@org_view("viewer")
async def screen_stream(request, session_id: str):
    """The frames as server-sent events: ``status`` (JSON) and ``frame`` (a JSON line, then base64 JPEG)."""
    await common.get_session(request, session_id)  # 404 for a session that is not this org's
    try:
        fps = min(MAX_FPS, max(0.1, float(request.GET.get("fps") or MAX_FPS)))
    except ValueError:
        fps = MAX_FPS
    return stream_response(request, [source(request, session_id)], fps, tabs=True)


def access_ended(screen_ids: list[str], sign_in: str) -> bytes:
    """What a screen stream says when its member lost access: each screen "ended", which the pane and the
    wall's tiles take as the end (no reconnecting), with where to sign in again (``sign_in``)."""
    events = (
        {"s": sid, "state": "ended", "label": guard.ACCESS_ENDED, "message": "", "sign_in": sign_in}
        for sid in dict.fromkeys(screen_ids)
    )
    return b"".join(f"event: status\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def stream_response(
    request,
    sources: list[relay.Source],
    fps: float,
    *,
    before: bytes = b"",
    also_ended: list[str] = (),
    on_close: Callable[[], None] | None = None,
    tabs: bool = False,
) -> StreamingHttpResponse:
    """The event stream of ``sources``' screens; ``before``: events sent first (the wall's paused tiles,
    ``also_ended`` their ids, told too when access ends); ``on_close`` runs once the stream is over;
    ``tabs``: the tab strip too (``tabs`` events: the pane's, not the wall's)."""
    wake = asyncio.Event()
    interval = 0.0 if fps >= MAX_FPS else 1.0 / fps
    keepalive = getattr(settings, "LIVE_KEEPALIVE_SECONDS", 5.0)
    hub.probe_after, hub.probe_timeout = keepalive, keepalive / 2  # "stalled" within two keepalives
    viewers = [hub.subscribe(s, min_interval=interval, wake=wake, tabs=tabs) for s in sources]
    ids = [v.screen.screen_id for v in viewers] + list(also_ended)
    final = access_ended(ids, guard.sign_in_url(request))
    body = relay.stream(viewers, wake, keepalive, before=before)
    return guard.stream_response(request, _closing(body, on_close) if on_close else body, final=final)


async def _closing(stream: AsyncIterator[bytes], on_close: Callable[[], None]) -> AsyncIterator[bytes]:
    try:
        async with contextlib.aclosing(stream):
            async for chunk in stream:
                yield chunk
    finally:
        on_close()


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _driving(driver: control.Driver) -> str:
    return f"{driver.username} is driving this browser: control frees itself when they release it or stop."


def _sent_token(request) -> str:
    return request.headers.get("X-Screen-Control") or request.POST.get("control", "")


ACTIONS = ("take", "release", "renew", "ask", "withdraw", "grant", "decline", "force")


def _window(request) -> str:
    """The id the page's script gave its window (one per page load); "" when absent or malformed."""
    window = request.POST.get("window", "")
    return window if control.WINDOW.fullmatch(window) else ""


def _member_id(request) -> int | None:
    try:
        return int(request.POST.get("member", ""))
    except ValueError:
        return None


async def _audit(request, session_id: str, detail: str) -> None:
    await record(request, "browser.screen.control", target_id=session_id, detail=detail)


@require_http_methods(["POST"])
@org_view("operator")
async def screen_control(request, session_id: str):
    """Control of the screen: take, release (each an audit row) or renew it (``renew``: the pane's
    heartbeat, 204, or 409 once the lease no longer holds); ask for it or withdraw the request (``window``:
    the asking page's), grant or decline a request (``member``: the asker's membership; the holder only),
    take it over from its holder (``force``: admins only). Every change but a renewal is an audit row."""
    action = request.POST.get("action")
    if action not in ACTIONS:
        return _text("Say take, release, renew, ask, withdraw, grant, decline or force.", 400)
    session = await common.get_session(request, session_id)
    if session.ended:
        await control.end(request.org.pk, session_id)
        if action != "release":
            return _text("The session has ended.", 409)
    membership = request.membership
    notice = ""
    if action == "renew":
        if await control.renew(membership, session_id, _sent_token(request)):
            return HttpResponse(status=204)
        _, driver = await control.check(membership, session_id, None)
        ended = _driving(driver) if driver and not driver.is_member(membership) else "Your control ended."
        return _text(ended, 409)
    if action in ("ask", "withdraw", "grant", "decline"):
        return await _handoff(request, session_id, action)
    if action == "force" and not membership.has_role("admin"):
        await deny(request, "browser.screen.control", needed="admin", target_id=session_id)
    if action in ("take", "force"):
        taken = await control.take(membership, session_id, force=action == "force")
        if taken.token is None:
            if not request.htmx:
                return _text(_driving(taken.driver), 409)
            notice = f"{taken.driver.username} took control first." if taken.driver else "Try again."
        else:
            await _keep_token(request, session_id, taken.token)
            if taken.forced:
                detail = f"took control of the screen from {taken.forced} (admin take-over)"
            elif taken.replaced:
                detail = f"took control of the screen ({taken.replaced}'s control had lapsed)"
            else:
                detail = "took control of the screen"
            await _audit(request, session_id, detail)
            if taken.forced:
                notice = f"You took control from {taken.forced}; they were told."
    else:
        await _keep_token(request, session_id, None)
        if await control.release(membership, session_id):
            await _audit(request, session_id, "released control of the screen")
    if not request.htmx:
        return common.redirect(request, common.session_url(request, session_id, "screen"))
    context = await _context(request, session, notice)
    return render(request, "browsers/panes/screen.html#screen-pane", context)


async def _handoff(request, session_id: str, action: str):
    """Ask, withdraw, grant, decline: the control bar again (htmx) or the pane page."""
    membership = request.membership
    notice = ""
    window = _window(request)
    if action in ("ask", "withdraw"):
        if not window:
            return _refused(
                request, session_id, "Asking for control needs JavaScript: the page keeps the request open."
            )
        if not await control.watching(membership, session_id, window):
            await control.check_in(membership, session_id, window)
        driver = await control.driver(request.org.pk, session_id)
        if action == "ask" and (driver is None or driver.is_member(membership)):
            notice = "Nobody else drives: take control." if driver is None else "You drive this browser."
        elif await control.ask(membership, session_id, window, asking=action == "ask"):
            who = driver.username if driver else "nobody"
            what = "asked for control" if action == "ask" else "withdrew the request for control"
            await _audit(request, session_id, f"{what} of the screen ({who} driving)")
    else:
        member_id = _member_id(request)
        if member_id is None:
            return _refused(request, session_id, "Say which member's request (member=<id>).")
        if action == "grant":
            name = await control.grant(membership, session_id, member_id)
            if name:
                await _keep_token(request, session_id, None)
                await _audit(request, session_id, f"gave control of the screen to {name}")
                notice = f"You gave control to {name}."
        else:
            name = await control.decline(membership, session_id, member_id)
            if name:
                await _audit(request, session_id, f"declined {name}'s request for control of the screen")
                notice = f"You declined {name}'s request."
        if not name:
            notice = "That request is no longer open (withdrawn, gone, or you no longer drive)."
    if not request.htmx:
        return common.redirect(request, common.session_url(request, session_id, "screen"))
    return await _presence_answer(request, session_id, window, notice)


def _refused(request, session_id: str, text: str):
    """A handoff the form could not say: 400 to the page's script; without JavaScript (a plain form post),
    the screen pane again with the reason as its message, rather than a bare text page."""
    if request.htmx:
        return _text(text, 400)
    messages.error(request, text)
    return common.redirect(request, common.session_url(request, session_id, "screen"))


async def _presence_answer(request, session_id: str, window: str, notice: str = ""):
    membership = request.membership
    presence = await control.check_in(membership, session_id, window) if window else None
    if presence is not None and presence.auto_granted:
        await _audit(
            request,
            session_id,
            f"was given control of the screen: the request went unanswered and {presence.auto_granted} "
            f"was idle for {control.request_seconds():.0f} s",
        )
    driver = presence.driver if presence else await control.driver(request.org.pk, session_id)
    token = _sent_token(request)
    context = _controls(
        request, session_id, ended=False, driver=driver, token=token, presence=presence, notice=notice
    )
    return render(request, "browsers/panes/screen.html#screen-controls", context)


@require_http_methods(["POST"])
@org_view("viewer")
async def screen_presence(request, session_id: str):
    """A window watching the screen checks in (``window``: its id; ``leave=1`` when the page goes away):
    the control bar as it stands (who drives, who watches, requests, a notice for this window)."""
    window = _window(request)
    if not window:
        return _text("Say which window (window=<its id>).", 400)
    if request.POST.get("leave"):
        await control.leave(request.membership, session_id, window)
        return HttpResponse(status=204)
    if not await control.watching(request.membership, session_id, window):
        # A new window: the session must be one of this org's (404 otherwise), once; later check-ins are
        # the database's alone.
        session = await common.get_session(request, session_id)
        if session.ended:
            await control.end(request.org.pk, session_id)
            return _text("The session has ended.", 409)
    return await _presence_answer(request, session_id, window)


def _int(data, name: str, low: int, high: int) -> int:
    try:
        value = int(data.get(name, ""))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}")
    return value


def _keys(value: str) -> list[str]:
    combos = value.split()
    if not combos or len(combos) > 8:
        raise ValueError("keys must name one to eight key combinations")
    for combo in combos:
        match = KEY.match(combo)
        if not match or not (match.group(2) in NAMED_KEYS or len(match.group(2)) == 1):
            raise ValueError(f"{combo[:20]} is not a key combination the console sends")
        if not match.group(2).isprintable():
            raise ValueError("keys must be printable")
    return combos


def _typed_character(combo: str) -> bool:
    held, key = KEY.match(combo).groups()
    modifiers = set(held.rstrip("+").split("+")) - {""}
    return len(key) == 1 and (not modifiers or {"Ctrl", "Alt"} <= modifiers)


def parse_input(data, size: tuple[int, int]) -> tuple[str, dict, str]:
    """(the computer action, its fields, its audit description); ValueError when anything is off."""
    kind = data.get("kind")
    width, height = size
    if kind in ("click", "dblclick", "rightclick"):
        x, y = _int(data, "x", 0, width - 1), _int(data, "y", 0, height - 1)
        modifiers = [m for m in data.get("hold", "").split() if m in MODIFIERS]
        fields = {
            "x": x,
            "y": y,
            "button": "right" if kind == "rightclick" else "left",
            "num_clicks": 2 if kind == "dblclick" else None,
            "hold_keys": modifiers or None,
        }
        held = f" holding {'+'.join(modifiers)}" if modifiers else ""
        return "click_mouse", fields, f"{kind} at ({x}, {y}){held}"
    if kind == "scroll":
        x, y = _int(data, "x", 0, width - 1), _int(data, "y", 0, height - 1)
        dx, dy = _int(data, "dx", -MAX_SCROLL, MAX_SCROLL), _int(data, "dy", -MAX_SCROLL, MAX_SCROLL)
        if not dx and not dy:
            raise ValueError("a scroll needs dx or dy")
        fields = {"x": x, "y": y, "delta_x": dx or None, "delta_y": dy or None}
        return "scroll", fields, f"scrolled at ({x}, {y}) by ({dx}, {dy})"
    if kind == "type":
        text = data.get("text", "")
        if not text or len(text) > MAX_TEXT:
            raise ValueError(f"text must hold 1 to {MAX_TEXT} characters")
        if any(not (c.isprintable() or c == " ") for c in text):
            raise ValueError("text must be printable (send Return, Tab and the like as keys)")
        return "type_text", {"text": text}, f"typed {len(text)} characters"  # never the text: a password?
    if kind == "keys":
        combos = _keys(data.get("keys", ""))
        # A single character is typed text (a password's last letter), not a shortcut: counted, not named.
        # So is one held with Ctrl+Alt: AltGr on Windows reports both (a German keyboard's @ is AltGr+Q).
        shown = ["a character" if _typed_character(c) else c for c in combos]
        return "press_key", {"keys": combos}, "pressed " + " ".join(shown)
    raise ValueError("kind must be click, dblclick, rightclick, scroll, type or keys")


async def _send(svc, session_id: str, action: str, fields: dict) -> None:
    """One computer action (audited by the caller)."""
    if action == "click_mouse":
        await browser_computer.click_mouse(svc, session_id, **fields)
    elif action == "scroll":
        await browser_computer.scroll(svc, session_id, **fields)
    elif action == "type_text":
        await browser_computer.type_text(svc, session_id, **fields)
    elif action == "press_key":
        await browser_computer.press_key(svc, session_id, **fields)
    else:
        raise ValueError(action)


async def _not_driver(request, session: browsers.Session, token: str) -> HttpResponse | None:
    """409 unless this member holds the session's control lease with ``token`` (checked in the database
    for every action) and the session runs; None when they may drive."""
    allowed, driver = await control.check(request.membership, session.session_id, token)
    if session.ended:
        await control.end(request.org.pk, session.session_id)
        return _text("The session has ended: it cannot be driven any more.", 409)
    if not allowed:
        if driver is not None and not driver.is_member(request.membership):
            return _text(_driving(driver), 409)
        return _text("Take control of the screen first (or again: control expires).", 409)
    return None


@require_http_methods(["POST"])
@org_view("operator")
async def screen_input(request, session_id: str):
    """One action from the screen (204), refused unless this operator holds the session's control lease
    with this token (409, checked in the database for every action), checked before anything is sent (400)."""
    session = await common.get_session(request, session_id)
    token = _sent_token(request)
    refused = await _not_driver(request, session, token)
    if refused is not None:
        return refused
    try:
        action, fields, what = parse_input(request.POST, common.viewport(session))
    except ValueError as exc:
        return _text(f"Nothing was sent: {exc}.", 400)
    # Typed text may be a password: should the service quote it (or a word of it) back in an error, the
    # audit row and the answer get it blanked out.
    typed = fields["text"] if action == "type_text" else ""
    try:
        async with audited(
            request,
            "browser.screen.input",
            target_id=session_id,
            detail=what,
            secrets=[typed, *typed.split()],
        ):
            await _send(request.service, session_id, action, fields)
    except NotFound:
        return _text("The session has ended: it cannot be driven any more.", 409)
    except (Invalid, Conflict) as exc:
        return _text(f"The service refused it: {exc.message}", 400 if isinstance(exc, Invalid) else 409)
    except ServiceError as exc:
        return _text(f"The service did not take it: {exc.message}", 502)
    await control.renew(request.membership, session_id, token, acted=True)  # not idle: renewed
    return HttpResponse(status=204)


@require_http_methods(["POST"])
@org_view("operator")
async def screen_tab(request, session_id: str):
    """Bring one of the strip's tabs to front (``target``: its id), and the screencast with it (204):
    refused like input unless this operator holds the control lease (409), and unless ``target`` is a tab
    of the list this process's relay keeps (400: nothing sent). The relay's own CDP connection sends
    ``Target.activateTarget``, so it acts only where the screen is relayed (409 elsewhere: reload)."""
    session = await common.get_session(request, session_id)
    token = _sent_token(request)
    refused = await _not_driver(request, session, token)
    if refused is not None:
        return refused
    target_id = request.POST.get("target", "")
    if not TARGET_ID.fullmatch(target_id):
        return _text("Nothing was sent: say which tab (target=<its id>).", 400)
    screen = hub.screens.get(key(request, session_id))
    if screen is None or screen.ended or not screen.following:
        return _text("This console process does not relay this screen right now: reload the page.", 409)
    tab = screen.tabs.tabs.get(target_id)
    if tab is None:
        return _text("Nothing was sent: that is not one of this browser's tabs (it may have closed).", 400)
    what = f"brought the tab {tab.title[:80] or tab.url[:80]!r} ({target_id}) to front"
    try:
        await screen.bring(target_id)
    except (cdp.Closed, cdp.Flooded, cdp.EndpointUnavailable, TimeoutError) as exc:
        reason = str(exc) or type(exc).__name__
        await record(
            request, "browser.screen.tab", target_id=session_id, outcome="error", detail=f"{what}: {reason}"
        )
        return _text(f"The browser did not switch tabs: {reason}", 502)
    await record(request, "browser.screen.tab", target_id=session_id, detail=what)
    await control.renew(request.membership, session_id, token, acted=True)  # not idle: renewed
    return HttpResponse(status=204)
