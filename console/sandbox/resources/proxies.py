"""Proxies (notes §11): create per type, rename, soft delete, and a deterministic health check.

Choices where the notes leave room (written down in docs by the lead from the module docstring):

- A new proxy has no ``status``, ``ip_address`` or ``last_checked`` until its first check.
- ``protocol`` defaults to ``https``; ``config.country`` defaults to ``US`` for managed types.
- The custom proxy's ``password`` and ``ca_bundle`` are kept privately; a response echoes ``host``,
  ``port``, ``username``, ``has_password`` and ``has_ca_bundle`` only.
- The check (``POST /proxies/{id}/check``, optional JSON ``{"url": ...}``) is deterministic:
  - a custom proxy whose host ends in ``.invalid`` or whose port is 1 is ``unavailable``; every other
    proxy is ``available``;
  - the exit IP is derived from the proxy id: stable for datacenter, ISP and custom proxies (a custom
    proxy whose host is a public IP literal exits from that IP), different on each check for residential
    and mobile proxies (their exit node rotates);
  - the target ``url`` must be http or https and name a public host: ``localhost``, single-label names,
    ``.internal``, ``.local``, ``.localhost``, ``.lan``, ``.home.arpa`` hosts and non-global IP literals
    are refused with 400 (the sandbox resolves nothing, so any other name counts as public);
  - with a target, datacenter, ISP and custom proxies test that target from their stable exit IP: a
    target host ending in ``.invalid`` is unreachable, so the check reports ``unavailable``; residential
    and mobile proxies only validate configuration and connectivity, so the target does not matter;
  - a check with a target answers with the outcome (status, exit IP, time) but stores nothing: the
    proxy's recorded health is unchanged. A check without a target updates ``status``, ``ip_address``
    and ``last_checked``.
- SDK 0.131 retired ``datacenter``: create takes ``isp``, ``residential``, ``mobile`` and ``custom`` (400
  otherwise). Datacenter records made before stay listed, readable, checkable, renamable and deletable
  (the demo seeds some; ``POST /_sandbox/proxies/legacy`` makes one for tests).
- ``{id_or_name}`` routes find a live proxy by id, else by name; names are not unique, so a name shared
  by several proxies answers 409 ``proxy_name_ambiguous`` (use the id).
- DELETE is a soft delete: the record stays (``_deleted``) so sessions that reference it keep their
  ``proxy_id``; it disappears from GET, lists and checks.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.chromium.forward_proxy import UNREACHABLE_SUFFIX, exit_ip, is_ip, reachable
from console.sandbox.core.errors import ApiError, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field, optional_string
from console.sandbox.core.http import endpoint, no_content, ok, paginate, project_of, read_json, scoped
from console.sandbox.core.state import Tenant, new_id, rfc3339

TABLE = "proxies"
TYPES = ("isp", "residential", "mobile", "custom")
# Retired types: records of them still exist and are served, but none can be created.
LEGACY_TYPES = ("datacenter",)
PROTOCOLS = ("http", "https")
RESIDENTIAL_OS = ("windows", "macos", "android")
NAME_MAX = 255
MANAGED_DEFAULT_COUNTRY = "US"
PRIVATE_SUFFIXES = (".internal", ".local", ".localhost", ".lan", ".home.arpa", ".intranet", ".corp")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9-]{1,63})*$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_STATE = re.compile(r"^[A-Za-z]{2}$")
_ZIP = re.compile(r"^\d{5}$")
_ASN = re.compile(r"^(AS)?\d{1,10}$", re.IGNORECASE)


# Validation ---------------------------------------------------------------------------------------


def _name(value, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise invalid("name must be a non-empty string", name="give the proxy a name")
    if len(value) > NAME_MAX:
        raise invalid("name is too long", name=f"at most {NAME_MAX} characters")
    return value.strip()


def _config(kind: str, raw) -> tuple[dict, dict]:
    """(public config, private secrets) for a create body's ``config``; 400 with field details."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid("config must be an object", config="must be a JSON object")
    config = CONFIGS[kind].validate(raw)
    secrets = {name: config.pop(f"_{name}") for name in ("password", "ca_bundle") if f"_{name}" in config}
    return config, secrets


def _text(value) -> str | None:
    """A config string, stripped; null and ``""`` are none."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Bad("must be a string")
    return value.strip()


def _given_country(config: dict) -> str:
    """The country a managed proxy exits in, as given (valid or not: the other checks read it), else US."""
    value = config.get("country")
    return (value.strip().upper() if isinstance(value, str) else "") or MANAGED_DEFAULT_COUNTRY


def _country(value, context: Context) -> str:
    country = _text(value)
    if country is not None and not _COUNTRY.match(country.upper()):
        raise Bad("must be an ISO 3166-1 alpha-2 code such as US or DE")
    return _given_country(context.body)


def _city(value, context: Context) -> str:
    city = _text(value)
    if " " in city:
        raise Bad("no spaces: write the city like new_york")
    if not context.body.get("country"):
        raise Bad("a city needs a country")
    return city.lower()


def _state(example: str, *, us_only: str | None = None):
    def check(value, context: Context) -> str:
        state = _text(value)
        if not _STATE.match(state):
            raise Bad(f"must be a 2-letter state code such as {example}")
        if us_only and _given_country(context.body) != "US":
            raise Bad(us_only)
        return state.upper()

    return check


def _zip(value, context: Context) -> str:
    zip_code = _text(value)
    if not _ZIP.match(zip_code):
        raise Bad("must be a 5-digit US ZIP code")
    if _given_country(context.body) != "US":
        raise Bad("ZIP targeting is for US proxies only")
    return zip_code


def _asn(value, context: Context) -> str:
    asn = _text(value)
    if not _ASN.match(asn):
        raise Bad("must be an AS number such as AS7922")
    return asn.upper() if asn.upper().startswith("AS") else f"AS{asn}"


def _os(value, context: Context) -> str:
    os_name = _text(value)
    if os_name not in RESIDENTIAL_OS:
        raise Bad("must be windows, macos or android")
    return os_name


def _host(value, context: Context) -> str:
    host = _text(value)
    if not host:
        raise Bad("required: the proxy's host name or IP address")
    if not (is_ip(host) or _HOSTNAME.match(host)):
        raise Bad("must be a host name or an IP address")
    return host


def _port(value, context: Context) -> int:
    if value is None or value == "":
        raise Bad("required: the proxy's port")
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise Bad("must be an integer")
    if not 1 <= int(value) <= 65535:
        raise Bad("must be between 1 and 65535")
    return int(value)


def _ca_bundle(value, context: Context) -> str | None:
    if value not in (None, "") and (not isinstance(value, str) or "-----BEGIN CERTIFICATE-----" not in value):
        raise Bad("must be PEM: one or more -----BEGIN CERTIFICATE----- blocks")
    return value


def _secret(name: str):
    """A write-only value: the record says whether there is one, the secret is kept apart (``_config``)."""
    return lambda value: {f"has_{name}": bool(value), **({f"_{name}": value} if value else {})}


def _proxy_config(kind: str, *fields: Field, complete: bool = False) -> Body:
    return Body(
        message=f"invalid {kind} proxy configuration",
        unknown=f"not a field of a {kind} proxy",
        prefix="config.",
        complete=complete,
        fields=fields,
    )


_COUNTRY_FIELD = Field("country", _country, always=True)
_NONE = (None, "")  # a config string that is not there
# A create body's ``config``, by the proxy's type (notes §11): what each kind of provider targets.
CONFIGS = {
    "datacenter": _proxy_config("datacenter", _COUNTRY_FIELD),
    "isp": _proxy_config("isp", _COUNTRY_FIELD),
    "residential": _proxy_config(
        "residential",
        _COUNTRY_FIELD,
        Field("city", _city, skip=_NONE),
        Field("state", _state("NY"), skip=_NONE),
        Field("zip", _zip, skip=_NONE),
        Field("asn", _asn, skip=_NONE),
        Field("os", _os, skip=_NONE),
    ),
    "mobile": _proxy_config(
        "mobile",
        _COUNTRY_FIELD,
        Field("state", _state("CA", us_only="state targeting is for US mobile proxies only"), skip=_NONE),
        Field("city", lambda value, context: _text(value), skip=_NONE),
    ),
    "custom": _proxy_config(
        "custom",
        Field("host", _host),
        Field("port", _port),
        Field(
            "username",
            lambda value, context: _text(value),
            apply=lambda name: {"username": name} if name else {},
        ),
        Field("password", optional_string(), apply=_secret("password")),
        Field("ca_bundle", _ca_bundle, apply=_secret("ca_bundle")),
        complete=True,
    ),
}
CONFIG_FIELDS = {kind: tuple(field.name for field in body.fields) for kind, body in CONFIGS.items()}


def _bypass_hosts(value) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
        raise invalid("bypass_hosts must be a list of host names", bypass_hosts="must be a list of strings")
    hosts = [h.strip().lower() for h in value if h.strip()]
    bad = [h for h in hosts if not _HOSTNAME.match(h.removeprefix("*.")) and not is_ip(h)]
    if bad:
        raise invalid("bypass_hosts has invalid entries", bypass_hosts=f"not a host name: {bad[0]}")
    return hosts


def _target(value) -> str | None:
    """The check's optional target URL: http(s) and a public host, else 400 (field ``url``)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise invalid("url must be a string", url="must be an http or https URL")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid("url must be an http or https URL", url="must be an http or https URL with a host")
    host = parts.hostname.lower().rstrip(".")
    if is_ip(host):
        if not ipaddress.ip_address(host).is_global:
            raise invalid("url must resolve to a public address", url=f"{host} is not a public address")
    elif host == "localhost" or "." not in host or host.endswith(PRIVATE_SUFFIXES):
        raise invalid("url must resolve to a public address", url=f"{host} does not resolve publicly")
    return value.strip()


# Health check -------------------------------------------------------------------------------------


def _check(tenant: Tenant, record: dict, target: str | None) -> dict:
    """The outcome of one check, as the fields it sets on the record."""
    record["_checks"] = record.get("_checks", 0) + 1
    available = reachable(record)
    if available and target and record["type"] in ("datacenter", "isp", "custom"):
        host = (urlsplit(target).hostname or "").lower()
        available = not host.endswith(UNREACHABLE_SUFFIX)
    return {
        "status": "available" if available else "unavailable",
        "ip_address": exit_ip(record, record["_checks"]) if reachable(record) else None,
        "last_checked": rfc3339(tenant.now()),
    }


# Endpoints ----------------------------------------------------------------------------------------


def render(record: dict) -> dict:
    body = {
        "id": record["id"],
        "type": record["type"],
        "name": record.get("name"),
        "protocol": record["protocol"],
        "bypass_hosts": list(record["bypass_hosts"]),
        "config": dict(record["config"]),
    }
    for key in ("status", "ip_address", "last_checked"):
        if record.get(key) is not None:
            body[key] = record[key]
    return body


def create(tenant: Tenant, project: str, body: dict, *, legacy: bool = False) -> dict:
    kind = body.get("type")
    if kind not in TYPES and not (legacy and kind in LEGACY_TYPES):
        raise invalid("type is required", type=f"must be one of {', '.join(TYPES)}")
    unknown = sorted(set(body) - {"type", "name", "protocol", "bypass_hosts", "config"})
    if unknown:
        raise invalid("unknown proxy fields", **{key: "not a proxy field" for key in unknown})
    protocol = body.get("protocol") or "https"
    if protocol not in PROTOCOLS:
        raise invalid("protocol is not valid", protocol="must be http or https")
    name = _name(body.get("name"), required=False)
    bypass = _bypass_hosts(body.get("bypass_hosts"))
    config, secrets = _config(kind, body.get("config"))
    record = {
        "id": new_id("proxy"),
        "type": kind,
        "name": name,
        "protocol": protocol,
        "bypass_hosts": bypass,
        "config": config,
        "_secrets": secrets,
        "_project": project,
    }
    tenant.table(TABLE)[record["id"]] = record
    return record


def get_live(tenant: Tenant, project: str, proxy_id: str) -> dict | None:
    """A live proxy of a project (other resources validate a ``proxy_id`` with this)."""
    record = tenant.table(TABLE).get(proxy_id)
    if record is None or record.get("_deleted") or record.get("_project") != project:
        return None
    return record


def _by_id(request: Request) -> dict:
    """The live proxy named by ``{id_or_name}``: the id first, else a name only one proxy has."""
    wanted = request.path_params["id_or_name"]
    record = get_live(request.state.tenant, project_of(request), wanted)
    if record is not None:
        return record
    named = [p for p in scoped(request, TABLE) if p.get("name") == wanted]
    if len(named) > 1:
        raise ApiError(
            409, "proxy_name_ambiguous", f"{len(named)} proxies are named {wanted!r}: use the proxy's id"
        )
    if not named:
        raise ApiError(404, "not_found", f"proxy {wanted!r} was not found")
    return named[0]


def _filtered(request: Request) -> list[dict]:
    items = scoped(request, TABLE)
    name = request.query_params.get("name")
    if name:
        items = [p for p in items if (p.get("name") or "") == name]
    query = (request.query_params.get("query") or "").strip().casefold()
    if query:
        items = [
            p
            for p in items
            if p["id"] == query
            or query in (p.get("name") or "").casefold()
            or query in str(p["config"].get("host") or "").casefold()
            or query in (p.get("ip_address") or "")
        ]
    return items


@endpoint
async def list_proxies(request: Request):
    return paginate(request, _filtered(request), render=render)


@endpoint
async def create_proxy(request: Request):
    record = create(request.state.tenant, project_of(request), await read_json(request))
    return ok(render(record), status=201)


@endpoint
async def get_proxy(request: Request):
    return ok(render(_by_id(request)))


@endpoint
async def rename_proxy(request: Request):
    record = _by_id(request)
    body = await read_json(request)
    others = sorted(set(body) - {"name"})
    if others:
        raise invalid(
            "only the name of a proxy can change",
            **{key: "cannot be changed: create a new proxy instead" for key in others},
        )
    record["name"] = _name(body.get("name"), required=True)
    return ok(render(record))


@endpoint
async def delete_proxy(request: Request):
    _by_id(request)["_deleted"] = True
    return no_content()


@endpoint
async def check_proxy(request: Request):
    record = _by_id(request)
    body = await read_json(request)
    target = _target(body.get("url"))
    outcome = _check(request.state.tenant, record, target)
    if target:
        # A check against a target reports its outcome but leaves the recorded health alone (notes §11).
        return ok({**render(record), **{k: v for k, v in outcome.items() if v is not None}})
    record.update(outcome)
    return ok(render(record))


@endpoint
async def control_legacy(request: Request):
    """A datacenter proxy as the service still holds from before the type was retired (tests)."""
    body = await read_json(request)
    record = create(request.state.tenant, project_of(request), {**body, "type": "datacenter"}, legacy=True)
    return ok(render(record), status=201)


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    specs = [
        ({"type": "datacenter", "name": "dc-us-east", "config": {"country": "US"}}, True),
        ({"type": "datacenter", "name": "dc-frankfurt", "config": {"country": "DE"}}, True),
        ({"type": "isp", "name": "isp-london", "config": {"country": "GB"}}, True),
        (
            {
                "type": "residential",
                "name": "resi-nyc-windows",
                "config": {"country": "US", "city": "new_york", "state": "NY", "os": "windows"},
            },
            True,
        ),
        ({"type": "residential", "name": "resi-paris", "config": {"country": "FR", "city": "paris"}}, False),
        ({"type": "mobile", "name": "mobile-us-ca", "config": {"country": "US", "state": "CA"}}, True),
        (
            {
                "type": "custom",
                "name": "corp-egress",
                "protocol": "http",
                "bypass_hosts": ["*.corp.example.com", "status.example.com"],
                "config": {
                    "host": "egress.example.net",
                    "port": 3128,
                    "username": "svc-automation",
                    "password": "demo-proxy-password-do-not-show",
                },
            },
            True,
        ),
        (
            {
                "type": "custom",
                "name": "legacy-squid",
                "protocol": "http",
                "config": {"host": "squid.decommissioned.invalid", "port": 8080},
            },
            True,
        ),
        # Names need not be unique: two proxies share this one.
        ({"type": "datacenter", "name": "dc-us-east", "config": {"country": "US"}}, False),
    ]
    for minutes_ago, (body, checked) in enumerate(specs):
        record = create(tenant, project, body, legacy=True)
        if checked:
            record.update(_check(tenant, record, None))
            record["last_checked"] = rfc3339(tenant.now() - timedelta(minutes=7 * minutes_ago + 3))


routes = [
    Route("/proxies", list_proxies, methods=["GET"]),
    Route("/proxies", create_proxy, methods=["POST"]),
    Route("/proxies/{id_or_name}", get_proxy, methods=["GET"]),
    Route("/proxies/{id_or_name}", rename_proxy, methods=["PATCH"]),
    Route("/proxies/{id_or_name}", delete_proxy, methods=["DELETE"]),
    Route("/proxies/{id_or_name}/check", check_proxy, methods=["POST"]),
    Route("/_sandbox/proxies/legacy", control_legacy, methods=["POST"]),
]
