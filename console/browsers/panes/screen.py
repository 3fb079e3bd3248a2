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
the pane's heartbeat (``action=renew``) renew it; "Release" frees it. Audit: taking and releasing control
are rows of their own, and each action sent is one row (the page never sends pointer moves, and coalesces
wheel turns and typed characters), whose detail never holds the typed text, only its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited, record
from console.browsers.panes import common
from console.live import cdp, control, guard
from console.live import screen as relay
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
        return relay.Target(session.cdp_ws_url, width, height, ended=session.ended)

    return relay.Source(key=key(request, session_id), locate=locate, allow_private=svc.allow_private)


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


async def _context(request, session: browsers.Session, notice: str = "") -> dict:
    sid = session.session_id
    chosen, reason = await mode(request, session)
    width, height = common.viewport(session)
    can_operate = request.membership.has_role("operator") and not session.ended
    driver = None if session.ended else await control.driver(request.org.pk, sid)
    mine = driver is not None and driver.is_member(request.membership)
    token = await _kept_token(request, sid) if mine and can_operate else None
    token = token if token and driver.has_token(token) else None
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
        "control_url": common.url(request, "screen-control", sid),
        "renew_seconds": max(1, int(control.lease_seconds() / 4)),
        "pane_url": common.url(request, "screen", sid),
        "can_operate": can_operate,
        "driver": driver,
        "driving_elsewhere": mine and token is None,
        "control_token": token,
        "notice": notice,
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
    return stream_response(request, [source(request, session_id)], fps)


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
) -> StreamingHttpResponse:
    """The event stream of ``sources``' screens; ``before``: events sent first (the wall's paused tiles,
    ``also_ended`` their ids, told too when access ends); ``on_close`` runs once the stream is over."""
    wake = asyncio.Event()
    interval = 0.0 if fps >= MAX_FPS else 1.0 / fps
    keepalive = getattr(settings, "LIVE_KEEPALIVE_SECONDS", 5.0)
    hub.probe_after, hub.probe_timeout = keepalive, keepalive / 2  # "stalled" within two keepalives
    viewers = [hub.subscribe(s, min_interval=interval, wake=wake) for s in sources]
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


@require_http_methods(["POST"])
@org_view("operator")
async def screen_control(request, session_id: str):
    """Take (``action=take``), release (``release``; each an audit row) or renew (``renew``: the pane's
    heartbeat, 204, or 409 once the lease no longer holds) control of the screen."""
    action = request.POST.get("action")
    if action not in ("take", "release", "renew"):
        return _text("Say take, release or renew.", 400)
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
    if action == "take":
        taken = await control.take(membership, session_id)
        if taken.token is None:
            if not request.htmx:
                return _text(_driving(taken.driver), 409)
            notice = f"{taken.driver.username} took control first." if taken.driver else "Try again."
        else:
            await _keep_token(request, session_id, taken.token)
            lapsed = f" ({taken.replaced}'s control had lapsed)" if taken.replaced else ""
            await record(
                request,
                "browser.screen.control",
                target_id=session_id,
                detail=f"took control of the screen{lapsed}",
            )
    else:
        await _keep_token(request, session_id, None)
        if await control.release(membership, session_id):
            await record(
                request,
                "browser.screen.control",
                target_id=session_id,
                detail="released control of the screen",
            )
    if not request.htmx:
        return common.redirect(request, common.session_url(request, session_id, "screen"))
    context = await _context(request, session, notice)
    return render(request, "browsers/panes/screen.html#screen-pane", context)


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


@require_http_methods(["POST"])
@org_view("operator")
async def screen_input(request, session_id: str):
    """One action from the screen (204), refused unless this operator holds the session's control lease
    with this token (409, checked in the database for every action), checked before anything is sent (400)."""
    session = await common.get_session(request, session_id)
    token = _sent_token(request)
    allowed, driver = await control.check(request.membership, session_id, token)
    if session.ended:
        await control.end(request.org.pk, session_id)
        return _text("The session has ended: it cannot be driven any more.", 409)
    if not allowed:
        if driver is not None and not driver.is_member(request.membership):
            return _text(_driving(driver), 409)
        return _text("Take control of the screen first (or again: control expires).", 409)
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
    await control.renew(request.membership, session_id, token)  # renewed while the operator acts
    return HttpResponse(status=204)
