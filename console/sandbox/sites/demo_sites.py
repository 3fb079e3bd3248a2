"""The demo websites real sessions browse, with no internet: the sandbox serves them itself.

Every request of a session's browser context is routed here (``fulfil``, a Playwright route handler): a
request to one of the demo hosts below (http or https, any port) is answered in-process by this module's
Starlette app, chosen by the host name; any other host is aborted with ``net::ERR_NAME_NOT_RESOLVED``
(Chromium's own error page and a ``network_loading_failed`` event), so nothing leaves the machine. A
redirect is answered as a page that moves on to its target (``location.replace``): Chromium would
follow a fulfilled redirect by itself, past the routes.

- ``shop.example.com``: a small shop (home, product, cart, checkout). The checkout asks
  ``/api/checkout/quote`` for shipping, which fails with 503, and logs a console error with its stack;
  its analytics beacon (``metrics.shop-cdn.example.net``, not a demo host) fails to load.
- ``docs.example.com``: a documentation site of a few linked pages.
- ``news.example.org``: a front page and an article.
- the scripted login sites of ``docs/sandbox-sites.md`` (``auth_sites``), as real HTML forms with their
  MFA steps, at ``/login`` (and their subdomains): the same rules (a password starting with ``wrong`` is
  refused, a code is six digits and not ``000000``); a push approval arrives 20 s after the page appears;
  after the last step the site sets a cookie and shows ``post_login_path``. ``bot.example.com`` answers
  403 with a CAPTCHA wall.
- ``lab.example.com``: a test bench: ``/ip`` answers the client's address and country as the site sees
  them (a session with a proxy: the proxy's exit, ``forward_proxy``); ``/?log=TEXT`` logs TEXT with
  ``console.log``, ``color=RRGGBB`` paints the page, a button at (20, 20)-(220, 80) logs
  ``button clicked`` when clicked, and a link at (20, 100)-(220, 140) downloads ``report.csv``;
  ``animate=1`` repaints a counter every animation frame (a screen that always changes, for the live
  screen's benchmark); ``delay_ms=N`` answers N ms late (at most 10 s: a slow page).
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from urllib.parse import urljoin, urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from console.sandbox.sites import auth_sites

BLOCKED_ERROR = "namenotresolved"
STYLE = (
    "body{font:16px system-ui,sans-serif;margin:0;color:#111827;background:#fff}"
    "header{background:#1f2937;color:#fff;padding:12px 24px;display:flex;gap:24px;align-items:center}"
    "header a{color:#fff}main{padding:24px;max-width:960px}"
    "form{display:grid;gap:12px;max-width:360px}label{display:grid;gap:4px}"
    "input{padding:8px;font:inherit}button{padding:10px 16px;font:inherit;cursor:pointer}"
    ".error{color:#b91c1c}.hint{color:#6b7280;font-size:14px}"
)


def page(title: str, body: str, *, nav: str = "", script: str = "", status: int = 200) -> HTMLResponse:
    header = f"<header><strong>{html.escape(title)}</strong>{nav}</header>" if nav else ""
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{header}<main>{body}</main>"
        + (f"<script>{script}</script>" if script else "")
        + "</body></html>",
        status_code=status,
    )


def _js(value: str) -> str:
    """A JavaScript string literal safe inside a <script> element."""
    return json.dumps(value).replace("</", "<\\/")


# The shop ------------------------------------------------------------------------------------------

SHOP_NAV = (
    "<a href='/'>Shop</a><a href='/p/sony-wh-1000xm5'>Headphones</a><a href='/cart'>Cart</a>"
    "<a href='/checkout'>Checkout</a>"
)


def shop(request: Request):
    path = request.url.path
    if path == "/api/checkout/quote":
        return JSONResponse({"error": "upstream_unavailable", "service": "shipping-quotes"}, status_code=503)
    if path == "/api/cart":
        return JSONResponse({"items": [{"sku": "WH1000XM5", "qty": 1, "price": 349.99}], "currency": "USD"})
    if path.startswith("/p/"):
        return page(
            "Sony WH-1000XM5",
            "<h1>Sony WH-1000XM5</h1><p class=price>$349.99</p>"
            "<button id=add-to-cart onclick=\"fetch('/api/cart').then(()=>location.href='/cart')\">"
            "Add to cart</button>",
            nav=SHOP_NAV,
        )
    if path == "/cart":
        return page(
            "Your cart",
            "<h1>Cart</h1><p>1 x Sony WH-1000XM5 — $349.99</p><a id=checkout href='/checkout'>Checkout</a>",
            nav=SHOP_NAV,
            script="fetch('/api/cart').then(r => r.json())"
            ".then(cart => console.info('[cart] items', cart.items.length))",
        )
    if "checkout" in path:
        return page(
            "Checkout",
            "<h1>Checkout</h1><form id=shipping onsubmit='return false'><label>Postcode "
            "<input id=postcode value='10115'></label><button id=pay>Pay $349.99</button></form>"
            "<p id=status class=error></p><img alt='' src='https://metrics.shop-cdn.example.net/beacon.gif'>",
            nav=SHOP_NAV,
            script="""
function renderQuote(response) {
  if (!response.ok) {
    document.getElementById('status').textContent = 'Shipping is unavailable right now.';
    console.error('Checkout failed: shipping quote returned ' + response.status);
  }
}
function requestQuote() {
  return fetch('/api/checkout/quote', {method: 'POST', headers: {'content-type': 'application/json'},
    body: JSON.stringify({postcode: document.getElementById('postcode').value})}).then(renderQuote);
}
console.log('[checkout] loaded');
requestQuote();
document.getElementById('pay').addEventListener('click', requestQuote);
""",
        )
    return page(
        "Shop",
        "<h1>Headphones</h1><ul><li><a href='/p/sony-wh-1000xm5'>Sony WH-1000XM5 — $349.99</a></li></ul>",
        nav=SHOP_NAV,
        script="console.log('[app] boot v2.14.3')",
    )


# The docs and the news ---------------------------------------------------------------------------

DOCS = {
    "/": ("Documentation", "<p>Welcome. Start with <a href='/quickstart'>the quickstart</a>.</p>"),
    "/quickstart": (
        "Quickstart",
        "<ol><li>Create a session.</li><li>Connect over CDP.</li><li>Take a screenshot.</li></ol>"
        "<p>Next: <a href='/api'>the API reference</a>.</p>",
    ),
    "/api": (
        "API reference",
        "<p><code>POST /browsers</code> creates a session.</p><p><a href='/'>Home</a></p>",
    ),
}


def docs(request: Request):
    found = DOCS.get(request.url.path.rstrip("/") or "/")
    if found is None:
        return page("Not found", "<h1>Page not found</h1><a href='/'>Documentation home</a>", status=404)
    title, body = found
    nav = "<a href='/'>Home</a><a href='/quickstart'>Quickstart</a><a href='/api'>API</a>"
    return page(title, f"<h1>{title}</h1>{body}", nav=nav)


def news(request: Request):
    nav = "<a href='/'>Front page</a>"
    if request.url.path.startswith("/world"):
        return page("Elections live", "<h1>Elections: live results</h1><p>Counting continues.</p>", nav=nav)
    return page(
        "Example News",
        "<h1>Today</h1><a href='/world/2026/elections-live'>Elections: live results</a>",
        nav=nav,
    )


# The lab (tests and demos) -------------------------------------------------------------------------


MAX_DELAY_MS = 10_000  # lab.example.com's ``delay_ms``: at most a navigation's timeout
# The demo world's geolocation: exit addresses of the sandbox's proxies and their country.
GEOLOCATION: dict[str, str] = {}


async def lab(request: Request):
    # A slow page: the answer comes DELAY ms late (a navigation that keeps a wake busy, for tests).
    try:
        delay = min(max(int(request.query_params.get("delay_ms", "0")), 0), MAX_DELAY_MS)
    except ValueError:
        delay = 0
    if delay:
        await asyncio.sleep(delay / 1000)
    return _lab(request)


def _lab(request: Request):
    if request.url.path == "/ip":
        address = request.client.host if request.client else None
        if len(GEOLOCATION) > 10_000:
            GEOLOCATION.clear()
        return JSONResponse({"ip": address, "country": GEOLOCATION.get(address or "")})
    if request.url.path == "/report.csv":
        return Response(
            "day,orders\n2026-11-23,42\n",
            media_type="text/csv",
            headers={"Content-Disposition": 'attachment; filename="report.csv"'},
        )
    params = request.query_params
    colour = params.get("color", "ffffff")
    if not (len(colour) == 6 and all(c in "0123456789abcdefABCDEF" for c in colour)):
        colour = "ffffff"
    script = "document.getElementById('hello').onclick = () => console.log('button clicked');"
    if params.get("log"):
        script += f"console.log({_js(params['log'])});"
    if params.get("error"):
        script += f"setTimeout(() => {{ throw new Error({_js(params['error'])}); }});"
    if params.get("animate") == "1":
        script += (
            "const tick = document.createElement('p'); tick.id = 'tick';"
            "tick.style.cssText = 'position:absolute;left:20px;top:160px;font:32px monospace';"
            "document.body.append(tick); let n = 0;"
            "(function frame() { tick.textContent = String(n++); requestAnimationFrame(frame); })();"
        )
    return HTMLResponse(
        "<!doctype html><html><head><meta charset=utf-8><title>Lab</title></head>"
        f"<body style='margin:0;background:#{colour};height:3000px'>"
        "<button id=hello style='position:absolute;left:20px;top:20px;width:200px;height:60px'>Hello</button>"
        "<a id=report href='/report.csv' style='position:absolute;left:20px;top:100px;width:200px;"
        "height:40px;display:block;background:#eee'>Download the report</a>"
        f"<script>{script}</script></body></html>"
    )


# Login sites ---------------------------------------------------------------------------------------

STEP_COOKIE = "sandbox_login_step"
SIGNED_IN_COOKIE = "sandbox_signed_in"


def _login_form(site: auth_sites.Site, step: str, errors: dict[str, str], values: dict) -> str:
    spec = site.pages[step]
    parts = [f"<h1>Sign in to {html.escape(site.domain)}</h1>"]
    if spec.external_message:
        parts.append(f"<p id=push>{html.escape(spec.external_message)}</p>")
    parts.append(f"<form method=post action='/login'><input type=hidden name=step value='{step}'>")
    for item in spec.fields:
        kind = {"password": "password", "identifier": "email"}.get(item.type, "text")
        if item.type in ("code", "totp_code"):
            kind = "text' inputmode='numeric' autocomplete='one-time-code"
        value = "" if item.type == "password" else html.escape(values.get(item.id, ""))
        parts.append(
            f"<label>{html.escape(item.label)}<input name='{item.id}' id='{item.id}' type='{kind}' "
            f"value='{value}' placeholder='{html.escape(item.placeholder or '')}'></label>"
        )
        if item.hint:
            parts.append(f"<span class=hint>{html.escape(item.hint)}</span>")
        if item.id in errors:
            parts.append(f"<span class=error role=alert>{html.escape(errors[item.id])}</span>")
    if spec.fields:
        parts.append("<button type=submit name=action value=submit>Continue</button>")
    for choice in spec.choices:
        label = choice.label + (f" ({choice.masked_destination})" if choice.masked_destination else "")
        parts.append(
            f"<button type=submit name=choice value='{choice.id}' id='{choice.id}'>"
            f"{html.escape(label)}</button>"
        )
    parts.append("</form>")
    return "".join(parts)


def _next_step(site: auth_sites.Site, step: str, form) -> tuple[str | None, dict[str, str]]:
    """The step after a submit of ``step`` (``auth_sites.DONE`` when signed in) and the field errors."""
    spec = site.pages[step]
    choice_id = form.get("choice")
    if choice_id:
        chosen = next((c for c in spec.choices if c.id == choice_id), None)
        if chosen is None:
            return step, {"choice": "Choose one of the options."}
        return chosen.next, {}
    errors = {}
    for item in spec.fields:
        problem = auth_sites.check_value(item, str(form.get(item.id, "")))
        if problem:
            errors[item.id] = problem
    if errors or not spec.fields:
        return step, errors
    return spec.next, {}


async def login_site(request: Request):
    site = auth_sites.site_for(request.url.hostname or "")
    if site.fail:
        return page(
            "Access denied",
            f"<h1>Access denied</h1><p>{html.escape(site.fail[1])}</p>"
            "<div id=captcha>Verify you are human</div>",
            status=403,
        )
    path = request.url.path
    if request.cookies.get(SIGNED_IN_COOKIE) and path != "/logout":
        if path != site.post_login_path:
            return RedirectResponse(site.post_login_path, status_code=303)
        return page(site.domain, f"<h1>Signed in</h1><p>Welcome to {html.escape(site.domain)}.</p>")
    if path == "/logout":
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SIGNED_IN_COOKIE)
        response.delete_cookie(STEP_COOKIE)
        return response
    if path != "/login":
        return RedirectResponse("/login", status_code=303)
    step, _, since = (request.cookies.get(STEP_COOKIE) or f"{site.start}:").partition(":")
    if step not in site.pages:
        step = site.start
    errors: dict[str, str] = {}
    values: dict = {}
    if request.method == "POST":
        form = await request.form()
        values = {k: str(v) for k, v in form.items()}
        if form.get("step") in site.pages:
            step = str(form["step"])
        following, errors = _next_step(site, step, form)
        if following == auth_sites.DONE:
            response = RedirectResponse(site.post_login_path, status_code=303)
            response.set_cookie(SIGNED_IN_COOKIE, "1", max_age=int(site.session_hours * 3600))
            response.delete_cookie(STEP_COOKIE)
            return response
        if following != step:
            response = RedirectResponse("/login", status_code=303)
            response.set_cookie(STEP_COOKIE, f"{following}:{time.time():.0f}")
            return response
    spec = site.pages[step]
    if spec.external_message and since and time.time() - float(since) >= spec.approve_after:
        # The phone approved the sign-in.
        response = RedirectResponse(site.post_login_path, status_code=303)
        response.set_cookie(SIGNED_IN_COOKIE, "1", max_age=int(site.session_hours * 3600))
        response.delete_cookie(STEP_COOKIE)
        return response
    script = "setTimeout(() => location.reload(), 5000);" if spec.external_message else ""
    return page(f"Sign in · {site.domain}", _login_form(site, step, errors, values), script=script)


# Dispatch ------------------------------------------------------------------------------------------

SITES = {
    "shop.example.com": shop,
    "docs.example.com": docs,
    "news.example.org": news,
    "lab.example.com": lab,
}


def handler_for(host: str):
    host = (host or "").lower().rstrip(".")
    if host in SITES:
        return SITES[host]
    probe = host
    while probe:
        if probe in auth_sites.SITES:
            return login_site
        _, _, probe = probe.partition(".")
    return None


async def dispatch(request: Request):
    handler = handler_for(request.url.hostname or "")
    if handler is None:
        return Response("not a demo site", status_code=404)
    result = handler(request)
    if hasattr(result, "__await__"):
        result = await result
    return result


app = Starlette(
    routes=[Route("/{path:path}", dispatch, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])]
)
# The transport alone, not a client: a client's cookie jar would carry one session's cookies to another.
_transport = httpx.ASGITransport(app=app)


def direct_transport() -> httpx.ASGITransport:
    """The transport of requests that reach the demo sites without a proxy."""
    return _transport


def hosts() -> list[str]:
    return sorted({*SITES, *auth_sites.SITES})


async def fulfil(route, *, files: bool = False) -> None:
    """A Playwright route handler: a demo host is answered by ``app``; ``file:`` URLs go on to the
    browser's own filesystem when ``files`` (a jailed browser, which sees its jail only); anything else is
    aborted."""
    request = route.request
    url = urlsplit(request.url)
    if files and url.scheme == "file":
        await route.continue_()
        return
    if url.scheme not in ("http", "https") or handler_for(url.hostname or "") is None:
        await route.abort(BLOCKED_ERROR)
        return
    headers = await request.all_headers()
    target = f"{url.scheme}://{url.hostname}{url.path or '/'}" + (f"?{url.query}" if url.query else "")
    outgoing = httpx.Request(
        request.method,
        target,
        headers={k: v for k, v in headers.items() if not k.startswith(":")},
        content=request.post_data_buffer,
    )
    response = await _transport.handle_async_request(outgoing)
    body = await response.aread()
    headers = {}
    for key, value in response.headers.multi_items():
        headers[key] = f"{headers[key]}\n{value}" if key in headers and key == "set-cookie" else value
    status, location = response.status_code, response.headers.get("location")
    if 300 <= status < 400 and location:
        # Chromium would follow a fulfilled redirect by itself, past the routes (into the dead proxy): the
        # page moves on instead, a new navigation that is routed again. Its cookies still apply.
        target = urljoin(request.url, location)
        body = (
            f"<!doctype html><meta http-equiv=refresh content='0;url={html.escape(target)}'>"
            f"<script>location.replace({_js(target)})</script>"
        ).encode()
        cookies = {"set-cookie": headers["set-cookie"]} if "set-cookie" in headers else {}
        headers, status = {"content-type": "text/html; charset=utf-8", **cookies}, 200
    await route.fulfill(status=status, headers=headers, body=body)
