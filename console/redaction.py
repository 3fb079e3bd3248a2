"""What a browser sent or received, without its secrets: the one set of rules for telemetry.

Two sides use it. The sandbox applies ``headers`` and ``post_data`` when it records a real page's traffic
(``console/sandbox/chromium/page_events.py``), as the service would. The console applies ``event`` (and
``walk`` to the rest of an envelope) to every telemetry envelope it reads, from a page or from the stream,
as the record is built (``console/service/telemetry.py``): nothing after that holds the secret. It must,
because whatever the service sends reaches every viewer's browser: an ``Authorization`` header, a cookie
or the ``password=`` of a form an automation typed must not. It keeps what an operator debugs with: the
method, the URL's path and parameter names, the status, every header name, the fields that are not
secrets.

The rules:
- headers: ``Authorization``, ``Cookie``, ``Set-Cookie``, ``Proxy-Authorization``, ``X-Api-Key`` and every
  header whose name reads like a secret (``X-CSRF-Token``, ``X-Session-Id``…) keep their name, not their
  value; headers holding a URL (``Referer``, ``Location``, ``:path``) get the URL rule;
- bodies (``post_data``, a response's ``body``): a JSON body loses the values of its secret-named keys at
  any depth, a form body the values of its secret-named fields, a multipart body everything (a file or a
  field of any name: nothing to tell apart cheaply); any other text (or a body that does not parse) is
  kept with the secret-looking pairs in it redacted (``password=…``, ``"token": "…"``,
  ``Authorization: Bearer …``), and an HTML body's secret or hidden form fields and secret-named meta tags
  (a CSRF token) lose their value;
- URLs: a secret-named query or fragment parameter (``?token=``, ``#access_token=``) loses its value, a
  password in the user info and a JSON Web Token anywhere in it too; the URL stays a URL;
- any other string of an event (console text, stack frames, titles…): the URLs and secret-looking pairs in
  it as above, and JSON Web Tokens wherever they appear;
- a key pressed in a field whose selector reads like a secret (``input#password``) is ``•`` (named keys
  such as Enter kept), as the sandbox's pages already report it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import operator
import re
from typing import Any
from urllib.parse import unquote_plus

REDACTED = "[redacted]"
# In a form body or a URL the value stays encoded, so the body or URL still parses.
REDACTED_ENCODED = "%5Bredacted%5D"
MASKED_KEY = "\u2022"

# A field, parameter or header name that reads like a secret. Broad on purpose: a postcode shown as
# [redacted] costs less than a card number shown.
SECRET_NAME = re.compile(r"pass|pwd|secret|token|otp|code|totp|cvc|cvv|card|auth|session|key", re.I)
SECRET_HEADERS = frozenset({"authorization", "cookie", "set-cookie", "proxy-authorization", "x-api-key"})
# Names that match SECRET_NAME but only describe: a challenge, the host of an HTTP/2 request.
PLAIN_HEADERS = frozenset({"www-authenticate", "proxy-authenticate", ":authority"})
URL_HEADERS = frozenset({"referer", "location", "content-location", ":path"})
BODY_KEYS = frozenset({"post_data", "postdata", "body", "request_body", "response_body"})
# Values no rule applies to and that are large (a screenshot's base64).
OPAQUE_KEYS = frozenset({"png"})

# In free text the names are narrower than SECRET_NAME: "error code: 404" or "key: Enter" are not secrets.
_TEXT_WORDS = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"authorization|cookie|session[_-]?id|sessionid|otp|totp|cvv|cvc|card[_-]?number)"
)
_TEXT_NAME = re.compile(_TEXT_WORDS, re.I)
# One pass over the text, so that what a rule wrote (a redacted URL) is not read again by another.
_TEXT = re.compile(
    r"(?P<url>(?<![A-Za-z0-9+.-])(?i:[a-z][a-z0-9+.-]*://)[^\s\"'<>]+)"
    r"|(?P<jwt>\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]+)"
    r"|(?P<cookie>(?<![\w-])(?i:(?:set-)?cookie)\s*:\s*)[^\r\n]+"
    rf"|(?<![\w.-])(?P<name>(?i:[\w.-]*?{_TEXT_WORDS}[\w.-]*))(?P<sep>\s*[:=]\s*[\"']?)"
    r"(?P<scheme>(?i:bearer|basic|digest|token)\s+)?(?P<value>[^\s&;,\"'<>]+)"
    r'|"(?P<key>[^"\\\n]{1,100})"(?P<colon>\s*:\s*)(?P<quoted>"(?:[^"\\]|\\.)*"|-?[\w.+-]+)'
)
# In an HTML body: a form field or meta tag (a CSRF token, a prefilled password) whose name or type says
# secret loses its value.
_HTML_FIELD = re.compile(r"<(?:input|meta)\b[^>]*>", re.I)
_HTML_NAME = re.compile(r"\b(?:name|id)\s*=\s*[\"']?([^\"'\s>]*)", re.I)
_HTML_SECRET_TYPE = re.compile(r"\btype\s*=\s*[\"']?(?:password|hidden)\b", re.I)
_HTML_VALUE = re.compile(r"(\b(?:value|content)\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I)
# Cheap tests first: most strings of an event (ids, types, selectors, plain messages) hold nothing to
# redact (no "=", ":" or "eyJ" in them: three substring tests, cheaper than a regex), and many are one URL.
_JWT = re.compile(r"\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]+")
_WHOLE_URL = re.compile(r"(?i:[a-z][a-z0-9+.-]*://)[^\s\"'<>]+")


def secret_name(name: Any) -> bool:
    return _secret_name(name if isinstance(name, str) else str(name))


# Names repeat from event to event (the same headers, the same fields): each is judged once. Bounded, as
# the names come from the service.
@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


@functools.lru_cache(maxsize=4096)
def _header_rule(name: str) -> str:
    lower = name.lower()
    if lower in SECRET_HEADERS or (lower not in PLAIN_HEADERS and SECRET_NAME.search(lower)):
        return "secret"
    return "url" if lower in URL_HEADERS else "text"


def headers(values: dict) -> dict:
    """Headers with every secret value replaced; the names stay."""
    result = {}
    for name, value in values.items():
        rule = _header_rule(name if isinstance(name, str) else str(name))
        if rule == "secret":
            result[name] = REDACTED
        else:
            result[name] = _each(value, url if rule == "url" else text)
    return result


def post_data(body: str, values: dict | None = None, *, mime_type: str = "") -> str:
    """A request or response body without its secrets; its type from ``Content-Type`` in ``values`` (the
    headers sent with it), else ``mime_type``."""
    kind = mime_type.lower()
    for name, value in (values or {}).items():
        if str(name).lower() == "content-type":
            kind = str(value[0] if isinstance(value, list) and value else value).lower()
    if "multipart/form-data" in kind:
        return REDACTED
    if "json" in kind or (not kind and body.lstrip()[:1] in ("{", "[")):
        with contextlib.suppress(ValueError, RecursionError):
            return json.dumps(_json(json.loads(body)), ensure_ascii=False)
        return text(body, names=SECRET_NAME)  # cut short (bodies are truncated) or not JSON after all
    if "x-www-form-urlencoded" in kind or (not kind and "=" in body and not any(c.isspace() for c in body)):
        return _pairs(body, "&")
    if "html" in kind:
        body = _HTML_FIELD.sub(_html_field, body)
    return text(body)


def url(value: str) -> str:
    """The URL without the values of its secret-named parameters or a user info password."""
    rest, hash_, fragment = value.partition("#")
    rest, question, query = rest.partition("?")
    scheme, sep, after = rest.partition("://")
    if sep:
        authority, slash, path = after.partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at and ":" in userinfo:
            authority = f"{userinfo.split(':', 1)[0]}:{REDACTED_ENCODED}@{host}"
        rest = f"{scheme}://{authority}{slash}{path}"
    if question:
        rest += "?" + _pairs(query, "&")
    if hash_:
        rest += "#" + (_pairs(fragment, "&") if "=" in fragment else fragment)
    return _JWT.sub(REDACTED_ENCODED, rest) if "eyJ" in rest else rest  # a token in a path (/verify/eyJ…)


def text(value: str, *, names: re.Pattern = _TEXT_NAME) -> str:
    """Free text with the URLs, secret-looking pairs and JSON Web Tokens in it redacted (``names``: which
    quoted keys are secrets; a body's are SECRET_NAME's, free text's narrower)."""
    if "=" not in value and ":" not in value and "eyJ" not in value:
        return value
    if _WHOLE_URL.fullmatch(value):
        return url(value)
    plain = "://" not in value and "eyJ" not in value and not _TEXT_NAME.search(value)
    if plain and (names is _TEXT_NAME or not names.search(value)):
        return value
    return _TEXT.sub(lambda match: _replace(match, names), value)


def event(value: dict) -> dict:
    """One telemetry event: its ``data`` (and anything else it carries) by the rules above."""
    result = _fields(value) if type(value) is dict else walk(value)
    data = result.get("data")
    if value.get("type") == "interaction_key" and isinstance(data, dict):
        key, where = data.get("key"), f"{data.get('selector') or ''} {data.get('target_selector') or ''}"
        if isinstance(key, str) and len(key) == 1 and SECRET_NAME.search(where):
            result = {**result, "data": {**data, "key": MASKED_KEY}}
    return result


def walk(value: Any) -> Any:
    """Any value of an event or envelope: headers and bodies by their rules wherever they are nested, every
    other string as free text. What holds nothing to redact is returned as it is (the same object): a dict
    or list is copied only when something in it changed."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return _fields(value)
    if isinstance(value, list):
        return _items(value)
    return value


def _fields(value: dict) -> dict:
    # This runs on every field of every event the relay renders: the exact types JSON gives are tested
    # first, each key's rule is looked up rather than worked out, and an unchanged field costs no copy.
    changed = None
    for key, item in value.items():
        kind = type(item)
        if kind is str:
            rule = _rules[key]
            if rule is _BODY:
                new = _body(item, value)
            elif rule is _OPAQUE or ("=" not in item and ":" not in item and "eyJ" not in item):
                continue  # (the first test of text(), without the call)
            else:
                new = text(item)
        elif kind in _SCALARS:
            continue
        elif kind is dict:
            new = headers(item) if _rules[key] is _HEADERS else _fields(item)
        elif kind is list:
            new = _items(item)
        else:
            new = _other(key, item, value)
        if new is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = new
    if "value" in value:
        # {name, value} pairs (cookies, header lists): the value goes with a secret name, whatever it is.
        name = value.get("name")
        if isinstance(name, str) and secret_name(name):
            if changed is None:
                changed = dict(value)
            changed["value"] = REDACTED
    return value if changed is None else changed


def _other(key: Any, item: Any, value: dict) -> Any:
    """A field of a subclass of str, dict or list (JSON gives none) by the same rules; anything else kept."""
    if isinstance(item, str):
        rule = _rules[key]
        if rule is _BODY:
            return _body(item, value)
        return item if rule is _OPAQUE else text(item)
    if isinstance(item, dict):
        return headers(item) if _rules[key] is _HEADERS else _fields(item)
    if isinstance(item, list):
        return _items(item)
    return item


def _items(value: list) -> list:
    """A list by ``walk``'s rules: the list itself when nothing in it changed."""
    items = [walk(item) for item in value]
    return value if all(map(operator.is_, items, value)) else items


def _body(body: str, value: dict) -> str:
    """A body found in ``value``, by the ``headers`` and ``mime_type`` sent with it there."""
    sent = value.get("headers")
    mime = value.get("mime_type")
    return post_data(
        body, sent if isinstance(sent, dict) else None, mime_type=mime if isinstance(mime, str) else ""
    )


_SCALARS = frozenset({int, float, bool, type(None)})
# What a key means for its value: a body (a string), an opaque value (a string), headers (an object), or
# nothing special. Keys repeat from event to event: each is judged once (bounded: keys come from the service).
_BODY, _OPAQUE, _HEADERS, _PLAIN = "body", "opaque", "headers", "plain"


class _Rules(dict):
    """Each key's rule, worked out the first time the key is looked up."""

    def __missing__(self, key: Any) -> str:
        lower = key.lower() if isinstance(key, str) else ""
        if lower in BODY_KEYS:
            rule = _BODY
        elif lower in OPAQUE_KEYS:
            rule = _OPAQUE
        elif lower.endswith("headers"):
            rule = _HEADERS
        else:
            rule = _PLAIN
        if len(self) >= 4096:
            self.clear()
        self[key] = rule
        return rule


_rules = _Rules()


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (REDACTED if secret_name(k) else _json(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, str):
        return text(value)
    return value


def _pairs(query: str, separator: str) -> str:
    """``a=1&password=x`` → ``a=1&password=%5Bredacted%5D``: the rest kept byte for byte."""
    parts = []
    for part in query.split(separator):
        name, equals, _ = part.partition("=")
        parts.append(f"{name}={REDACTED_ENCODED}" if equals and secret_name(unquote_plus(name)) else part)
    return separator.join(parts)


def _replace(match: re.Match, names: re.Pattern) -> str:
    found = match.groupdict()
    if found["url"]:
        return url(found["url"])
    if found["jwt"]:
        return REDACTED
    if found["cookie"]:
        return found["cookie"] + REDACTED
    if found["name"]:
        if found["value"] in (REDACTED, REDACTED_ENCODED):
            return match.group()
        return f"{found['name']}{found['sep']}{found['scheme'] or ''}{REDACTED}"
    if not names.search(found["key"]):
        return match.group()
    return f'"{found["key"]}"{found["colon"]}"{REDACTED}"'


def _html_field(match: re.Match) -> str:
    tag = match.group()
    named = _HTML_NAME.search(tag)
    if not (named and SECRET_NAME.search(named.group(1))) and not _HTML_SECRET_TYPE.search(tag):
        return tag
    return _HTML_VALUE.sub(lambda m: f'{m.group(1)}"{REDACTED}"', tag)


def _each(value: Any, rule) -> Any:
    if isinstance(value, str):
        return rule(value)
    if isinstance(value, list):
        return [rule(v) if isinstance(v, str) else v for v in value]
    return value
