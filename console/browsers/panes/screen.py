"""The screen pane of a session: the browser live, relayed by the console (``console.live.screen``), and
driven by operators who took control.

Modes: **relay** when the session has a ``cdp_ws_url`` the console may open (the frames come from this
process; the browser never sees the URL or its jwt); **live view** otherwise (no usable ``cdp_ws_url``, or
the relay said the upstream refused): the service's live-view URL in the sandboxed iframe, which needs the
page's CSP to frame its origin: the pane offers the page with ``?view=embed`` (one click, not an automatic
reload, which would throw away the state of the page's other panes).

Input: click, double click, right click, scroll, typed text and key combinations become computer actions
through the service client. They are refused (409) unless the operator took control: "Take control" puts
a short-lived random token in the operator's Django session (``CONTROL_SECONDS``, renewed by each action)
and hands it to the page, which sends it with each action; "Release" drops it. Audit: taking and releasing
control are rows of their own, and each action sent is one row (the page never sends pointer moves, and
coalesces wheel turns and typed characters), whose detail never holds the typed text, only its length.
"""

from __future__ import annotations

import json
import re
import secrets
import time

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited, record
from console.browsers.panes import common
from console.live import guard
from console.live import screen as relay
from console.service import Conflict, Invalid, NotFound, ServiceError, browsers, computer
from console.web.decorators import org_view
from console.web.render import render
from console.web.text import safe_url

CONTROL_SECONDS = 600
SESSION_KEY = "screen_control"
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
    """("relay" | "live-view" | "none", why not the relay)."""
    if session.ended:
        return "none", "The session has ended."
    if session.simulated:
        reason = "This sandbox session is simulated: it has no real screen to relay."
    else:
        try:
            await relay.check_cdp_url(session.cdp_ws_url, allow_private=request.service.allow_private)
        except relay.ScreenUnavailable as exc:
            reason = f"The console cannot relay this session's screen: {exc}."
        else:
            return "relay", ""
    return "live-view", reason


def _live_view(request, session: browsers.Session) -> str:
    # Operators get the interactive link, viewers only a view-only one (as the session page decides).
    if request.membership.has_role("operator"):
        return safe_url(session.browser_live_view_url)
    return safe_url(session.read_only_live_view_url)


async def _control(request, session_id: str) -> str | None:
    held = (await request.session.aget(SESSION_KEY, {})).get(f"{request.org.pk}:{session_id}")
    if held and held[1] > time.time():
        return held[0]
    return None


async def _set_control(request, session_id: str, token: str | None) -> None:
    held = dict(await request.session.aget(SESSION_KEY, {}))
    now = time.time()
    held = {k: v for k, v in held.items() if v[1] > now}  # forget expired ones
    name = f"{request.org.pk}:{session_id}"
    if token:
        held[name] = [token, now + CONTROL_SECONDS]
    else:
        held.pop(name, None)
    await request.session.aset(SESSION_KEY, held)


def _renew_now(store_class, session_key: str, name: str, token: str) -> None:
    """Extend the control ``token`` holds, if it still holds it in the Django session as stored now.

    Not through ``request.session``: that copy was read before the action went upstream, and saving it
    would write back a token a "Release" (or a new "Take") dropped meanwhile. The session row is locked
    while it is read and written, so a release saved by another request or process lands before or after,
    never in between."""
    from django.contrib.sessions.models import Session
    from django.db import transaction

    with transaction.atomic():
        list(Session.objects.select_for_update().filter(session_key=session_key).values_list("pk"))
        stored = store_class(session_key=session_key)
        held = dict(stored.get(SESSION_KEY, {}))
        if not held.get(name) or held[name][0] != token:
            return
        held[name] = [token, time.time() + CONTROL_SECONDS]
        stored[SESSION_KEY] = held
        stored.save()


async def _renew(request, session_id: str, token: str) -> None:
    from asgiref.sync import sync_to_async

    key = request.session.session_key
    if key:
        name = f"{request.org.pk}:{session_id}"
        await sync_to_async(_renew_now)(type(request.session), key, name, token)


async def _context(request, session: browsers.Session, embed: bool) -> dict:
    sid = session.session_id
    chosen, reason = await mode(request, session)
    relay_possible = chosen == "relay"
    if embed and chosen == "relay":
        # The operator asked for the service's own live view (the page frames it): one screen at a time.
        chosen, reason = "live-view", "Embedded as asked; the console's relay is one click away."
    width, height = common.viewport(session)
    live_view = _live_view(request, session) if not session.ended else ""
    detail = common.session_url(request, sid)
    can_operate = request.membership.has_role("operator")
    return {
        "session": session,
        "mode": chosen,
        "relay_possible": relay_possible,
        "reason": reason,
        "embed": embed,
        "width": width,
        "height": height,
        "embed_url": f"{detail}?view=embed" if live_view else "",
        "page_url": f"{detail}?view=page",
        "stream_url": common.url(request, "screen-stream", sid),
        "input_url": common.url(request, "screen-input", sid),
        "control_url": common.url(request, "screen-control", sid),
        "pane_url": common.url(request, "screen", sid),
        "can_operate": can_operate and not session.ended,
        "control_token": (await _control(request, sid)) if can_operate else None,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def screen_pane(request, session_id: str):
    session = await common.get_session(request, session_id)
    context = await _context(request, session, request.GET.get("view") == "embed")
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


def stream_response(request, sources: list[relay.Source], fps: float) -> StreamingHttpResponse:
    import asyncio

    wake = asyncio.Event()
    interval = 0.0 if fps >= MAX_FPS else 1.0 / fps
    viewers = [hub.subscribe(s, min_interval=interval, wake=wake) for s in sources]
    keepalive = getattr(settings, "LIVE_KEEPALIVE_SECONDS", 15.0)
    final = access_ended([v.screen.screen_id for v in viewers], guard.sign_in_url(request))
    return guard.stream_response(request, relay.stream(viewers, wake, keepalive), final=final)


@require_http_methods(["POST"])
@org_view("operator")
async def screen_control(request, session_id: str):
    """Take (``action=take``) or release control of the screen; each is an audit row."""
    session = await common.get_session(request, session_id)
    action = request.POST.get("action")
    if action not in ("take", "release"):
        return HttpResponse("Say take or release.", status=400, content_type="text/plain")
    if action == "take" and session.ended:
        return HttpResponse("The session has ended.", status=409, content_type="text/plain")
    token = secrets.token_urlsafe(24) if action == "take" else None
    await _set_control(request, session_id, token)
    what = "took control of the screen" if token else "released control of the screen"
    await record(request, "browser.screen.control", target_id=session_id, detail=what)
    if not request.htmx:
        return common.redirect(request, common.session_url(request, session_id, "screen"))
    context = await _context(request, session, request.GET.get("view") == "embed")
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
        await computer.click_mouse(svc, session_id, **fields)
    elif action == "scroll":
        await computer.scroll(svc, session_id, **fields)
    elif action == "type_text":
        await computer.type_text(svc, session_id, **fields)
    elif action == "press_key":
        await computer.press_key(svc, session_id, **fields)
    else:
        raise ValueError(action)


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


@require_http_methods(["POST"])
@org_view("operator")
async def screen_input(request, session_id: str):
    """One action from the screen (204), refused unless this operator holds control (409), checked before
    anything is sent (400)."""
    session = await common.get_session(request, session_id)
    token = await _control(request, session_id)
    sent = request.headers.get("X-Screen-Control") or request.POST.get("control", "")
    # As bytes: compare_digest raises on a str holding non-ASCII characters (a 500, not a refusal).
    if token is None or not secrets.compare_digest(token.encode(), sent.encode(errors="replace")):
        return _text("Take control of the screen first (or again: control expires).", 409)
    if session.ended:
        return _text("The session has ended: it cannot be driven any more.", 409)
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
    await _renew(request, session_id, token)  # renewed while the operator acts, unless released meanwhile
    return HttpResponse(status=204)
