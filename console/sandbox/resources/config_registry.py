"""The configuration registry (``/config-registry``, SDK 0.131): which browser configuration works for a
target site, from the service's evidence. The sandbox's evidence is **deterministic local data**: a fixed
catalogue of its own demo sites (``CATALOGUE``), documented in docs/sandbox.md.

Choices where the SDK leaves room:

- A target is normalized to its host (lowercase, no ``www.``, no port); its ``domain`` is the last two
  labels. A catalogued host matches ``exact``; a subdomain of a catalogued domain matches ``domain``.
- ``POST /config-registry/lookup {url, allowed_proxy_countries?}`` answers what is known now, never starts
  work: a recommendation, or ``no_recommendation`` (``inconclusive`` for an unknown target;
  ``proxy_restricted`` when the recommended managed proxy's country is not among
  ``allowed_proxy_countries``).
- ``POST /config-registry/resolve {url, allowed_proxy_countries?, intent?}`` answers the same with an
  ``analysis``: a catalogued target's is ``completed`` at once; any other target's is ``running`` and
  completes ``ANALYSIS_SECONDS`` (5 s) later on the tenant clock with a direct, stealth, headless
  recommendation (``tenant.advance`` makes it complete at once). ``GET /config-registry/analyses/{id}``
  reads one (``wait_for_result`` polls it); ``POST …/{id}/cancel`` cancels a running one (409 once
  finished). Analyses expire 24 h after creation (``expired``).
- ``GET /config-registry`` lists every target the organization asked about (catalogued targets appear once
  asked), with ``search`` (substring of the target), ``sort_by`` (``target``, ``analysis_status``,
  ``recommended_config``, ``last_requested_at``, ``success_rate``) and ``sort_order``;
  ``GET /config-registry/analyses`` lists analyses, newest first. Both are offset pages.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.http import endpoint, ok, paginate, read_json, record_of
from console.sandbox.core.state import Tenant, new_id, parse_time, rfc3339

TABLE = "config_registry_analyses"
ANALYSIS_SECONDS = 5
LIFETIME = timedelta(hours=24)
VIEWPORT = {"width": 1920, "height": 1080}
# host -> (label, browser, proxy, success rate, runs): the sandbox's demo sites.
CATALOGUE = {
    "shop.example.com": (
        "stealth, direct",
        {"stealth": True, "headless": True},
        {"mode": "direct"},
        0.98,
        120,
    ),
    "docs.example.com": (
        "headless, direct",
        {"stealth": False, "headless": True},
        {"mode": "direct"},
        1.0,
        80,
    ),
    "news.example.com": (
        "headless, direct",
        {"stealth": False, "headless": True},
        {"mode": "direct"},
        0.95,
        60,
    ),
    "accounts.example.com": (
        "stealth, residential US",
        {"stealth": True, "headless": False},
        {"mode": "managed", "create": {"type": "residential", "config": {"country": "US"}}},
        0.91,
        45,
    ),
}


def _target(raw) -> dict:
    if not isinstance(raw, str) or not raw.strip():
        raise invalid("the target is not valid", url="a URL or host is required")
    text = raw.strip()
    parts = urlsplit(text if "://" in text else f"https://{text}")
    host = (parts.hostname or "").lower().removeprefix("www.")
    if not host or "." not in host:
        raise invalid("the target is not valid", url="a URL with a host name")
    return {"host": host, "domain": ".".join(host.split(".")[-2:]), "normalized": host}


def _countries(body: dict) -> list[str] | None:
    raw = body.get("allowed_proxy_countries")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(c, str) and len(c) == 2 for c in raw):
        raise invalid("the target is not valid", allowed_proxy_countries="two-letter country codes")
    return [c.upper() for c in raw]


def _catalogued(target: dict) -> tuple[str, str] | None:
    """(catalogue host, match scope) for a target, or None."""
    if target["host"] in CATALOGUE:
        return target["host"], "exact"
    for host in CATALOGUE:
        if host.split(".", 1)[1] == target["domain"] or target["host"].endswith("." + host):
            return host, "domain" if host != target["host"] else "exact"
    return None


def _recommendation(host: str, scope: str, at: str, entry=None) -> dict:
    _, browser, proxy, rate, runs = entry or CATALOGUE[host]
    accessed = round(runs * rate)
    return {
        "type": "recommendation",
        "matched_target": host,
        "match_scope": scope,
        "browser": {"gpu": False, "viewport": dict(VIEWPORT), **browser},
        "proxy": proxy,
        "evidence": {
            "accessed": accessed,
            "blocked": runs - accessed,
            "inconclusive": 0,
            "run_count": runs,
            "sample_size": runs,
            "success_rate": rate,
            "last_observed_at": at,
            "last_supported_at": at,
        },
    }


LEARNED = ("stealth, direct", {"stealth": True, "headless": True}, {"mode": "direct"}, 1.0, 3)


def _known(target: dict, countries: list[str] | None, at: str, analysis: dict | None) -> dict:
    """The recommendation part of an answer: what the catalogue, or a completed analysis, says."""
    found = _catalogued(target)
    if found is not None:
        recommendation = _recommendation(*found, at)
    elif analysis is not None and analysis["status"] == "completed":
        recommendation = _recommendation(target["host"], "exact", at, LEARNED)
    else:
        return {
            "recommendation": {
                "type": "no_recommendation",
                "code": "inconclusive",
                "message": "the registry has no evidence for this target yet: resolve it to analyse it",
            },
            "working_configurations": [],
        }
    proxy = recommendation["proxy"]
    country = proxy.get("create", {}).get("config", {}).get("country")
    if countries is not None and country and country not in countries:
        return {
            "recommendation": {
                "type": "no_recommendation",
                "code": "proxy_restricted",
                "message": f"the working configuration needs a proxy in {country}",
            },
            "working_configurations": [recommendation],
        }
    return {"recommendation": recommendation, "working_configurations": [recommendation]}


def _settle(tenant: Tenant, analysis: dict) -> dict:
    """An analysis's status on the tenant clock (computed when read, so a clock move settles it)."""
    now = tenant.now()
    if analysis["status"] == "running" and now >= parse_time(analysis["_done_at"]):
        analysis["status"] = "completed"
        analysis["finished_at"] = analysis["_done_at"]
    if analysis["status"] in ("running", "completed") and now >= parse_time(analysis["expires_at"]):
        analysis["status"] = "expired"
        analysis.setdefault("finished_at", analysis["expires_at"])
    return analysis


def _analysis(analysis: dict) -> dict:
    return {k: v for k, v in analysis.items() if not k.startswith("_")}


def _answer(tenant: Tenant, analysis: dict) -> dict:
    _settle(tenant, analysis)
    at = analysis.get("finished_at") or analysis["created_at"]
    body = {"target": dict(analysis["_target"]), "analysis": _analysis(analysis)}
    body.update(_known(analysis["_target"], analysis["_countries"], at, analysis))
    if analysis["status"] == "running":
        body["guidance"] = "the analysis is running: read it again, or wait_for_result"
    return body


def _new_analysis(tenant: Tenant, target: dict, countries, intent) -> dict:
    now = tenant.now()
    known = _catalogued(target) is not None
    analysis = {
        "id": new_id("cra"),
        "status": "completed" if known else "running",
        "created_at": rfc3339(now),
        "expires_at": rfc3339(now + LIFETIME),
        "_target": target,
        "_countries": countries,
        "_done_at": rfc3339(now if known else now + timedelta(seconds=ANALYSIS_SECONDS)),
    }
    if known:
        analysis["finished_at"] = analysis["created_at"]
    if isinstance(intent, str) and intent.strip():
        analysis["intent"] = intent.strip()[:500]
    tenant.table(TABLE)[analysis["id"]] = analysis
    return analysis


@endpoint
async def lookup(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    target = _target(body.get("url"))
    countries = _countries(body)
    analyses = [a for a in tenant.table(TABLE).values() if a["_target"]["host"] == target["host"]]
    latest = max(analyses, key=lambda a: a["created_at"], default=None)
    if latest is not None:
        _settle(tenant, latest)
    return ok({"target": target, **_known(target, countries, rfc3339(tenant.now()), latest)})


@endpoint
async def resolve(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    target = _target(body.get("url"))
    analysis = _new_analysis(tenant, target, _countries(body), body.get("intent"))
    return ok(_answer(tenant, analysis))


@endpoint
async def list_targets(request: Request):
    tenant = request.state.tenant
    latest: dict[str, dict] = {}
    for analysis in tenant.table(TABLE).values():
        host = analysis["_target"]["host"]
        if host not in latest or analysis["created_at"] > latest[host]["created_at"]:
            latest[host] = _settle(tenant, analysis)
    rows = []
    search = (request.query_params.get("search") or "").lower()
    for host, analysis in latest.items():
        if search and search not in host:
            continue
        row = {
            "target": host,
            "analysis_id": analysis["id"],
            "analysis_status": analysis["status"],
            "last_requested_at": analysis["created_at"],
        }
        known = _known(
            analysis["_target"], None, analysis.get("finished_at") or analysis["created_at"], analysis
        )
        if known["recommendation"]["type"] == "recommendation":
            row["recommendation"] = known["recommendation"]
            row["success_rate"] = known["recommendation"]["evidence"]["success_rate"]
            found = _catalogued(analysis["_target"])
            row["recommended_config_label"] = CATALOGUE[found[0]][0] if found else LEARNED[0]
        rows.append(row)
    sort_by = request.query_params.get("sort_by") or "last_requested_at"
    keys = {
        "target": lambda r: r["target"],
        "analysis_status": lambda r: r["analysis_status"],
        "recommended_config": lambda r: r.get("recommended_config_label") or "",
        "last_requested_at": lambda r: r["last_requested_at"],
        "success_rate": lambda r: r.get("success_rate") or 0.0,
    }
    if sort_by not in keys:
        raise invalid("the listing is not valid", sort_by=f"one of {', '.join(keys)}")
    order = request.query_params.get("sort_order") or ("desc" if sort_by == "last_requested_at" else "asc")
    if order not in ("asc", "desc"):
        raise invalid("the listing is not valid", sort_order="asc or desc")
    rows.sort(key=keys[sort_by], reverse=order == "desc")
    return paginate(request, rows, lambda row: row)


@endpoint
async def list_analyses(request: Request):
    tenant = request.state.tenant
    search = (request.query_params.get("search") or "").lower()
    analyses = sorted(tenant.table(TABLE).values(), key=lambda a: a["created_at"], reverse=True)
    rows = [
        {
            "analysis": _analysis(_settle(tenant, a)),
            "target": {"domain": a["_target"]["domain"], "normalized": a["_target"]["normalized"]},
        }
        for a in analyses
        if not search or search in a["_target"]["host"]
    ]
    return paginate(request, rows, lambda row: row)


def _find(tenant: Tenant, analysis_id: str) -> dict:
    return record_of(tenant, TABLE, analysis_id, "analysis")


@endpoint
async def retrieve_analysis(request: Request):
    tenant = request.state.tenant
    return ok(_answer(tenant, _find(tenant, request.path_params["id"])))


@endpoint
async def cancel_analysis(request: Request):
    tenant = request.state.tenant
    analysis = _settle(tenant, _find(tenant, request.path_params["id"]))
    if analysis["status"] != "running":
        raise conflict(f"the analysis is {analysis['status']}, not running", "analysis_finished")
    analysis["status"] = "canceled"
    analysis["finished_at"] = rfc3339(tenant.now())
    return ok(_answer(tenant, analysis))


routes = [
    Route("/config-registry", list_targets, methods=["GET"]),
    Route("/config-registry/lookup", lookup, methods=["POST"]),
    Route("/config-registry/resolve", resolve, methods=["POST"]),
    Route("/config-registry/analyses", list_analyses, methods=["GET"]),
    Route("/config-registry/analyses/{id}", retrieve_analysis, methods=["GET"]),
    Route("/config-registry/analyses/{id}/cancel", cancel_analysis, methods=["POST"]),
]
