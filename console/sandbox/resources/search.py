"""Web search (``/search``, SDK 0.131): a query answered with ranked results and, on request, their
contents. The sandbox reaches no search provider: it searches **deterministic local data**, a fixed corpus
of its own demo sites' pages (``CORPUS``), through one provider, ``sandbox`` (docs/sandbox.md).

Choices where the SDK leaves room:

- ``POST /search``: ``query`` (1..1000 characters) required. A page scores one point per query word (case
  folded, words of 2+ letters or digits) found in its title, snippet or text, titles counting twice; pages
  scoring 0 are left out; ties go by URL. ``max_results`` 1..20 (default 10); ``include_domains`` keeps
  only those hosts (and their subdomains), ``exclude_domains`` drops them. ``country``, ``language``,
  ``recency``, ``safe_search``, ``start_date`` and ``end_date`` are accepted and ignored with a warning
  (``param_unsupported``) each; with ``strict_params: true`` they are 400 instead. ``content`` fetches
  each result's text inline (``format`` ``text`` or ``markdown``, ``max_chars``).
- A search is kept one hour (``expires_at``; then 404). ``GET /search/{id}`` reads it again;
  ``POST /search/{id}/contents`` fetches the contents of its results (``result_ids`` or the first
  ``limit``), ``method: provider``, ``cache_status: hit`` after a first fetch.
- ``GET /search/providers`` lists the one provider (``slug`` filter: any other slug is an empty list).
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import invalid
from console.sandbox.core.http import endpoint, ok, read_json, record_of
from console.sandbox.core.state import Tenant, new_id, parse_time, rfc3339

TABLE = "searches"
PROVIDER = "sandbox"
LIFETIME = timedelta(hours=1)
MAX_RESULTS = 20
IGNORED = ("country", "language", "recency", "safe_search", "start_date", "end_date")
_WORD = re.compile(r"[a-z0-9]{2,}")
# (url, title, text): the demo sites' pages as a reader sees them.
CORPUS = (
    ("https://shop.example.com/", "Shop", "Headphones. Sony WH-1000XM5 — $349.99. Cart. Checkout."),
    (
        "https://shop.example.com/p/sony-wh-1000xm5",
        "Sony WH-1000XM5",
        "Sony WH-1000XM5 wireless noise cancelling headphones. $349.99. Add to cart.",
    ),
    ("https://shop.example.com/cart", "Cart", "1 x Sony WH-1000XM5 — $349.99. Checkout."),
    (
        "https://shop.example.com/checkout",
        "Checkout",
        "Checkout. Postcode. Pay $349.99. Shipping is calculated at checkout.",
    ),
    ("https://docs.example.com/", "Documentation", "Welcome. Start with the quickstart."),
    (
        "https://docs.example.com/quickstart",
        "Quickstart",
        "Create a session. Connect over CDP. Take a screenshot. Next: the API reference.",
    ),
    ("https://docs.example.com/api", "API reference", "POST /browsers creates a session."),
    ("https://news.example.com/", "Today", "Elections: live results."),
    (
        "https://news.example.com/world/2026/elections-live",
        "Elections live",
        "Elections: live results. Counting continues.",
    ),
)
PROVIDER_RECORD = {
    "slug": PROVIDER,
    "max_results_cap": MAX_RESULTS,
    "content": {"freshness_control": False, "inline": True, "post_hoc": True},
    "params": {
        "country": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "language": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "recency": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "safe_search": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "start_date": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "end_date": {"support": "unsupported", "notes": "ignored by the sandbox"},
        "include_domains": {"support": "native"},
        "exclude_domains": {"support": "native"},
    },
    "provider_options": {"schema": {"type": "object", "properties": {}}, "schema_ref": "#/sandbox/options"},
    "notes": ["The sandbox's local corpus of its demo sites: deterministic, no network."],
}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _domains(raw, field: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(d, str) and d.strip() for d in raw):
        raise invalid("the search is not valid", **{field: "a list of domains"})
    return [d.strip().lower().removeprefix("www.") for d in raw]


def _on(host: str, domains: list[str]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


def _content(url: str, text: str, options: dict, at: str, *, cached: bool, result_id: str) -> dict:
    fmt = options.get("format") or "markdown"
    if fmt not in ("markdown", "text"):
        raise invalid("the search is not valid", **{"content.format": "markdown or text"})
    limit = options.get("max_chars")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise invalid("the search is not valid", **{"content.max_chars": "a positive integer"})
    body = text if fmt == "text" else f"# {dict((u, t) for u, t, _ in CORPUS)[url]}\n\n{text}"
    clipped = limit is not None and len(body) > limit
    return {
        "result_id": result_id,
        "url": url,
        "status": "ok",
        "format": fmt,
        "text": body[:limit] if clipped else body,
        "truncated": clipped,
        "completeness": "full_page",
        "method": "provider",
        "cache_status": "hit" if cached else "miss",
        "fetched_at": at,
        "final_url": url,
        "http_status": 200,
        "extractor_version": "sandbox-1",
    }


def _result_id(search_id: str, url: str) -> str:
    return "res_" + hashlib.sha256(f"{search_id}{url}".encode()).hexdigest()[:16]


@endpoint
async def create(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    query = body.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > 1000:
        raise invalid("the search is not valid", query="1 to 1000 characters")
    count = body.get("max_results", 10)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_RESULTS:
        raise invalid("the search is not valid", max_results=f"between 1 and {MAX_RESULTS}")
    include = _domains(body.get("include_domains"), "include_domains")
    exclude = _domains(body.get("exclude_domains"), "exclude_domains")
    ignored = [name for name in IGNORED if body.get(name) is not None]
    if ignored and body.get("strict_params") is True:
        raise invalid(
            "the search is not valid", **{name: "not supported by the sandbox's provider" for name in ignored}
        )
    content = body.get("content")
    if content is not None and not isinstance(content, dict):
        raise invalid("the search is not valid", content="an object")
    wanted = _words(query)
    scored = []
    for url, title, text in CORPUS:
        host = urlsplit(url).hostname or ""
        if (include and not _on(host, include)) or (exclude and _on(host, exclude)):
            continue
        score = 2 * len(wanted & _words(title)) + len(wanted & _words(text))
        if score:
            scored.append((-score, url, title, text))
    scored.sort()
    now = tenant.now()
    at = rfc3339(now)
    search_id = new_id("srch")
    results = []
    for rank, (_, url, title, text) in enumerate(scored[:count], start=1):
        result = {
            "id": _result_id(search_id, url),
            "rank": rank,
            "url": url,
            "title": title,
            "snippet": text[:200],
            "source": urlsplit(url).hostname,
        }
        if content is not None:
            result["content"] = {
                k: v
                for k, v in _content(url, text, content, at, cached=False, result_id=result["id"]).items()
                if k not in ("result_id", "url")
            }
        results.append(result)
    record = {
        "id": search_id,
        "query": query,
        "provider": PROVIDER,
        "results": results,
        "attempts": [{"provider": PROVIDER, "outcome": "success" if results else "empty", "duration_ms": 1}],
        "usage": {
            "results_count": len(results),
            "content_fetches": len(results) if content is not None else 0,
        },
        "warnings": [
            {
                "code": "param_unsupported",
                "message": f"{name} is ignored by the sandbox's provider",
                "param": name,
            }
            for name in ignored
        ],
        "expires_at": rfc3339(now + LIFETIME),
        "_fetched": [],
    }
    tenant.table(TABLE)[search_id] = record
    return ok(_render(record))


def _render(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _find(tenant: Tenant, search_id: str) -> dict:
    now = tenant.now()
    return record_of(tenant, TABLE, search_id, "search", gone=lambda r: now >= parse_time(r["expires_at"]))


@endpoint
async def retrieve(request: Request):
    return ok(_render(_find(request.state.tenant, request.path_params["id"])))


@endpoint
async def contents(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id"])
    body = await read_json(request)
    options = body.get("content") or {}
    if not isinstance(options, dict):
        raise invalid("the request is not valid", content="an object")
    ids = body.get("result_ids")
    results = record["results"]
    if ids is not None:
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise invalid("the request is not valid", result_ids="a list of result ids")
        by_id = {r["id"]: r for r in results}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise invalid(
                "the request is not valid", result_ids=f"not results of this search: {', '.join(unknown)}"
            )
        results = [by_id[i] for i in ids]
    limit = body.get("limit")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise invalid("the request is not valid", limit="a positive integer")
        results = results[:limit]
    at = rfc3339(tenant.now())
    texts = {url: text for url, _, text in CORPUS}
    answered = []
    for result in results:
        answered.append(
            _content(
                result["url"],
                texts[result["url"]],
                options,
                at,
                cached=result["id"] in record["_fetched"],
                result_id=result["id"],
            )
        )
        if result["id"] not in record["_fetched"]:
            record["_fetched"].append(result["id"])
    return ok(
        {
            "search_id": record["id"],
            "contents": answered,
            "usage": {"results_count": len(record["results"]), "content_fetches": len(answered)},
            "warnings": [],
        }
    )


@endpoint
async def providers(request: Request):
    slug = request.query_params.get("slug")
    return ok([] if slug and slug != PROVIDER else [PROVIDER_RECORD])


routes = [
    Route("/search", create, methods=["POST"]),
    Route("/search/providers", providers, methods=["GET"]),
    Route("/search/{id}", retrieve, methods=["GET"]),
    Route("/search/{id}/contents", contents, methods=["POST"]),
]
