"""Vaults, their items and item events (``/vaults``; SDK 0.131, docs/service-changes.md §11).

Choices where the SDK leaves room:

- Vaults belong to a project; ``POST /vaults {name}`` creates one or returns the vault of that name
  (an upsert, 200 either way). At most ``projects.MAX_VAULTS`` per organization (403 ``insufficient_plan``).
  DELETE removes the vault and its items.
- Items are ``credential`` items of provider ``kernel`` (the other item types need providers the sandbox
  cannot reach: 400 naming ``type`` or ``spec.provider``). ``PUT /vaults/{v}/items/{key}`` creates the item,
  returns it unchanged when the same specification is sent again, and answers 409 ``item_spec_conflict``
  when it differs. Field values are write-only for ``sensitive`` fields (``state.fields[name]`` says
  ``has_value`` only); a non-sensitive field's value is returned.
- ``PATCH`` (``type: credential``, ``version`` required, 409 ``version_mismatch`` when stale) applies
  ``spec.remove_fields``, then ``spec.add_fields``, then ``spec.fields`` (``{name: {value}}``; ``value: null``
  clears it) and ``spec.description``; each accepted change bumps ``version``.
- Events (``GET …/items/{key}/events``, oldest first, ``after`` an event id, ``wait`` up to 30 s of
  long-polling when none are newer): ``item.created``, ``item.fields_set`` / ``item.fields_cleared`` (field
  names only, never values), ``item.fields_added``, ``item.fields_removed``, ``item.description_changed``.
- ``POST /vaults/{v}/items/{key}/operations`` (SDK ``perform_operation``) on a credential item: ``fill``
  (``browser_id`` of an active session, ``fields`` ``[{field, selector}]``, ``timeout_ms``) types each
  named field's value into the element its selector finds in the session's page (a real browser; in the
  simulated engine every field with a value is reported ``filled``); a field without a value is
  ``not_attempted``, a selector that finds nothing ``failed`` with ``element_not_found``. The answer says
  which fields were filled, never a value. ``collect`` answers the item with a ``collect`` action (the
  sandbox has no hosted collection form: values are set with PUT or PATCH). Any other operation is 409
  ``operation_unavailable`` (``available_operations`` lists ``fill`` and ``collect``).
- ``GET /vaults/{v}/encryption_key``: an ECDH-ES P-256 public key per vault (the sandbox does not decrypt
  ``encrypted_value``: a field sent that way is stored as set).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.chromium import engine
from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.http import endpoint, no_content, ok, paginate, project_of, read_json, scoped
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import sessions
from console.sandbox.resources.projects import MAX_VAULTS

TABLE = "vaults"
FIELD_TYPES = ("text", "email", "password", "totp", "passkey")
SENSITIVE_BY_DEFAULT = ("password", "totp", "passkey")
NAME_MAX = 255
_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_FIELD = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_WAIT = 30


def render(vault: dict) -> dict:
    return {k: vault[k] for k in ("id", "name", "created_at", "updated_at")}


def _vault(request: Request) -> dict:
    wanted = request.path_params["id_or_name"]
    for vault in scoped(request, TABLE):
        if wanted in (vault["id"], vault["name"]):
            return vault
    raise not_found("vault", wanted)


def _item(request: Request) -> tuple[dict, dict]:
    vault = _vault(request)
    key = request.path_params["key"]
    item = vault["_items"].get(key)
    if item is None:
        raise not_found("vault item", key)
    return vault, item


def render_item(item: dict) -> dict:
    fields = item["_fields"]
    state = {
        name: {
            "has_value": field["value"] is not None,
            **({} if field["sensitive"] else {"value": field["value"]}),
        }
        for name, field in fields.items()
    }
    spec = {
        "provider": "kernel",
        "fields": [
            {
                k: v
                for k, v in field.items()
                if k in ("name", "type", "required", "sensitive", "label") and v is not None
            }
            for field in fields.values()
        ],
    }
    if item.get("description"):
        spec["description"] = item["description"]
    ready = all(f["value"] is not None for f in fields.values() if f["required"])
    return {
        "id": item["id"],
        "key": item["key"],
        "type": "credential",
        "version": item["version"],
        "created_at": item["created_at"],
        "updated_at": item["updated_at"],
        "spec": spec,
        "state": {
            "provider": "kernel",
            "status": "ready" if ready else "pending_collection",
            "fields": state,
        },
        "available_operations": [
            {"type": "fill", "description": "Fill the fields into a page of a session"},
            {"type": "collect", "description": "Ask a person for the values of the fields"},
        ],
        "available_expansions": [],
    }


def _event(tenant: Tenant, item: dict, name: str, data: dict | None = None) -> None:
    item["_events"].append(
        {"id": new_id("evt"), "created_at": rfc3339(tenant.now()), "name": name, "data": data or {}}
    )
    tenant.topic(f"vault-item:{item['id']}").publish(None)


def _field(raw, index: int, errors: dict, *, with_value: bool) -> dict | None:
    where = f"spec.fields[{index}]"
    if not isinstance(raw, dict):
        errors[where] = "an object with name and type"
        return None
    name, kind = raw.get("name"), raw.get("type")
    if not isinstance(name, str) or not _FIELD.match(name):
        errors[f"{where}.name"] = "1-64 of letters, digits, _ . -"
    if kind not in FIELD_TYPES:
        errors[f"{where}.type"] = f"one of {', '.join(FIELD_TYPES)}"
    value = raw.get("value") if with_value else None
    if raw.get("encrypted_value") and with_value:
        value = "(encrypted)"  # the sandbox does not decrypt; the field counts as set
    if value is not None and not isinstance(value, str):
        errors[f"{where}.value"] = "a string"
    sensitive = raw.get("sensitive")
    return {
        "name": name,
        "type": kind,
        "label": raw.get("label") if isinstance(raw.get("label"), str) else None,
        "required": bool(raw.get("required", True)),
        "sensitive": bool(kind in SENSITIVE_BY_DEFAULT if sensitive is None else sensitive),
        "value": value,
    }


def _spec_fields(spec: dict, errors: dict) -> dict[str, dict]:
    raw = spec.get("fields")
    if not isinstance(raw, list) or not raw:
        errors["spec.fields"] = "at least one field"
        return {}
    fields = {}
    for index, entry in enumerate(raw):
        field = _field(entry, index, errors, with_value=True)
        if field and field["name"] in fields:
            errors[f"spec.fields[{index}].name"] = "given twice"
        elif field:
            fields[field["name"]] = field
    return fields


def _digest(fields: dict, description) -> str:
    shape = [
        (f["name"], f["type"], f["required"], f["sensitive"], f["label"], f["value"]) for f in fields.values()
    ]
    return hashlib.sha256(json.dumps([shape, description]).encode()).hexdigest()


@endpoint
async def upsert_vault(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX:
        raise invalid("name is required", name=f"1 to {NAME_MAX} characters")
    for vault in scoped(request, TABLE):
        if vault["name"] == name.strip():
            return ok(render(vault))
    if sum(1 for v in tenant.table(TABLE).values() if not v.get("_deleted")) >= MAX_VAULTS:
        raise ApiError(403, "insufficient_plan", f"the plan allows at most {MAX_VAULTS} vaults")
    now = rfc3339(tenant.now())
    vault = {"id": new_id("vlt"), "name": name.strip(), "created_at": now, "updated_at": now}
    vault.update(_project=project_of(request), _items={}, _kid=new_id("kid", 12))
    tenant.table(TABLE)[vault["id"]] = vault
    return ok(render(vault))


@endpoint
async def list_vaults(request: Request):
    items = scoped(request, TABLE)
    query = (request.query_params.get("query") or "").strip().casefold()
    if query:
        items = [v for v in items if v["id"] == query or query in v["name"].casefold()]
    return paginate(request, items, render=render)


@endpoint
async def get_vault(request: Request):
    return ok(render(_vault(request)))


@endpoint
async def delete_vault(request: Request):
    _vault(request)["_deleted"] = True
    return no_content()


@endpoint
async def encryption_key(request: Request):
    vault = _vault(request)
    seed = hashlib.sha256(vault["id"].encode()).digest()
    coordinate = base64.urlsafe_b64encode(seed).decode().rstrip("=")
    other = base64.urlsafe_b64encode(hashlib.sha256(seed).digest()).decode().rstrip("=")
    return ok(
        {
            "alg": "ECDH-ES",
            "enc": "A256GCM",
            "kid": vault["_kid"],
            "jwk": {"crv": "P-256", "kty": "EC", "x": coordinate, "y": other},
        }
    )


@endpoint
async def list_items(request: Request):
    vault = _vault(request)
    return ok([render_item(item) for item in vault["_items"].values()])


@endpoint
async def get_item(request: Request):
    return ok(render_item(_item(request)[1]))


@endpoint
async def upsert_item(request: Request):
    tenant = request.state.tenant
    vault = _vault(request)
    key = request.path_params["key"]
    if not _KEY.match(key):
        raise invalid("the key is not valid", key="1-128 of letters, digits, . _ : -")
    body = await read_json(request)
    errors: dict[str, str] = {}
    if body.get("type") != "credential":
        errors["type"] = "the sandbox keeps credential items only"
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if spec.get("provider") != "kernel":
        errors["spec.provider"] = "kernel (other providers are out of the sandbox's reach)"
    fields = _spec_fields(spec, errors)
    if errors:
        raise invalid("the item is not valid", **errors)
    description = spec.get("description") or None
    existing = vault["_items"].get(key)
    if existing is not None:
        if existing["_digest"] != _digest(fields, description):
            raise conflict(f"an item {key!r} with another specification exists", code="item_spec_conflict")
        return ok(render_item(existing))
    now = rfc3339(tenant.now())
    item = {"id": new_id("itm"), "key": key, "version": 1, "created_at": now, "updated_at": now}
    item.update(description=description, _fields=fields, _events=[], _digest=_digest(fields, description))
    vault["_items"][key] = item
    _event(tenant, item, "item.created", {"fields": list(fields)})
    return ok(render_item(item), status=201)


@endpoint
async def update_item(request: Request):
    tenant = request.state.tenant
    _, item = _item(request)
    body = await read_json(request)
    errors: dict[str, str] = {}
    if body.get("type") != "credential":
        errors["type"] = "credential"
    version = body.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        errors["version"] = "the item's current version"
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else None
    if spec is None:
        errors["spec"] = "an object"
    if errors:
        raise invalid("the change is not valid", **errors)
    if version != item["version"]:
        raise conflict(f"the item is at version {item['version']}, not {version}", code="version_mismatch")
    fields = {name: dict(field) for name, field in item["_fields"].items()}
    removed = [n for n in spec.get("remove_fields") or [] if n in fields]
    for name in removed:
        del fields[name]
    added = []
    for index, raw in enumerate(spec.get("add_fields") or []):
        field = _field(raw, index, errors, with_value=False)
        if field and field["name"] in fields:
            errors[f"spec.add_fields[{index}].name"] = "a field of that name exists"
        elif field:
            fields[field["name"]] = field
            added.append(field["name"])
    values = spec.get("fields") or {}
    if not isinstance(values, dict):
        errors["spec.fields"] = "an object of field names to {value}"
        values = {}
    set_names, cleared = [], []
    for name, change in values.items():
        if name not in fields:
            errors[f"spec.fields.{name}"] = "no such field"
            continue
        value = ((change or {}).get("encrypted_value") and "(encrypted)") or (change or {}).get("value")
        if value is not None and not isinstance(value, str):
            errors[f"spec.fields.{name}"] = "value must be a string or null"
            continue
        fields[name]["value"] = value
        (set_names if value is not None else cleared).append(name)
    if errors:
        raise invalid("the change is not valid", **errors)
    item["_fields"] = fields
    if "description" in spec:
        item["description"] = spec["description"] or None
        _event(tenant, item, "item.description_changed")
    for name, names in (
        ("item.fields_removed", removed),
        ("item.fields_added", added),
        ("item.fields_set", set_names),
        ("item.fields_cleared", cleared),
    ):
        if names:
            _event(tenant, item, name, {"fields": names})
    item["version"] += 1
    item["updated_at"] = rfc3339(tenant.now())
    item["_digest"] = _digest(fields, item.get("description"))
    return ok(render_item(item))


@endpoint
async def delete_item(request: Request):
    vault, item = _item(request)
    del vault["_items"][item["key"]]
    return no_content()


@endpoint
async def item_events(request: Request):
    tenant = request.state.tenant
    _, item = _item(request)
    after = request.query_params.get("after")
    try:
        wait = min(MAX_WAIT, max(0, int(request.query_params.get("wait") or 0)))
    except ValueError:
        raise invalid("wait must be seconds", wait="an integer of seconds") from None

    def newer() -> list[dict]:
        ids = [e["id"] for e in item["_events"]]
        start = ids.index(after) + 1 if after in ids else 0
        return item["_events"][start:]

    found = newer()
    if not found and wait:
        queue = tenant.topic(f"vault-item:{item['id']}").subscribe()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await queue.get()
        finally:
            tenant.topic(f"vault-item:{item['id']}").unsubscribe(queue)
        found = newer()
    return ok(found)


OPERATIONS = ("fill", "collect")
FILL_TIMEOUT_MS = 30_000


def _fill_fields(body: dict, item: dict) -> list[tuple[str, str]]:
    raw = body.get("fields")
    if raw is None:
        return [(name, f"[name={json.dumps(name)}]") for name in item["_fields"]]
    if not isinstance(raw, list) or not raw:
        raise invalid("the operation is not valid", fields="a non-empty list of {field, selector}")
    pairs = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) and entry.get(k) for k in ("field", "selector")
        ):
            raise invalid(
                "the operation is not valid", **{f"fields[{index}]": "field and selector are required"}
            )
        if entry["field"] not in item["_fields"]:
            raise invalid(
                "the operation is not valid", **{f"fields[{index}].field": "no such field in the item"}
            )
        pairs.append((entry["field"], entry["selector"]))
    return pairs


async def _fill(request: Request, item: dict, body: dict) -> dict:
    tenant = request.state.tenant
    if not isinstance(body.get("browser_id"), str) or not body["browser_id"]:
        raise invalid("the operation is not valid", browser_id="the session to fill is required")
    record = sessions.get_session(request, body["browser_id"])
    pairs = _fill_fields(body, item)
    timeout = body.get("timeout_ms", FILL_TIMEOUT_MS)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 100 <= timeout <= 120_000:
        raise invalid("the operation is not valid", timeout_ms="between 100 and 120000")
    sessions.touch(tenant, record)
    results = []
    for index, (name, selector) in enumerate(pairs):
        value = item["_fields"][name]["value"]
        if value is None:
            results.append({"index": index, "status": "not_attempted"})
            continue
        if record.get("_engine") != "chromium":
            results.append({"index": index, "status": "filled"})
            continue

        async def fill(live, selector=selector, value=value):
            locator = live.page.locator(selector)
            if await locator.count() == 0:
                return "element_not_found"
            if await locator.count() > 1:
                return "ambiguous_selector"
            await locator.fill(value, timeout=timeout)
            return None

        try:
            problem = await engine.get().on_page(tenant, record, fill, "the fill")
        except Exception:  # the page's own failure (not editable, gone): told, never raised
            problem = "execution_failed"
        results.append(
            {"index": index, "status": "failed", "error_code": problem}
            if problem
            else {"index": index, "status": "filled"}
        )
    _event(tenant, item, "item.filled", {"browser_id": record["session_id"], "fields": [n for n, _ in pairs]})
    failed = any(r["status"] == "failed" for r in results)
    return {"type": "fill", "status": "failed" if failed else "completed", "fields": results}


@endpoint
async def perform_operation(request: Request):
    _, item = _item(request)
    body = await read_json(request)
    kind = body.get("type")
    if kind not in OPERATIONS:
        raise ApiError(
            409,
            "operation_unavailable",
            f"{kind!r} is not available on this item (available: {', '.join(OPERATIONS)})",
        )
    if kind == "fill":
        return ok(await _fill(request, item, body))
    return ok({**render_item(item), "action": {"name": "collect"}})


def seed(tenant: Tenant) -> None:
    now = rfc3339(tenant.now())
    vault = {"id": new_id("vlt"), "name": "checkout", "created_at": now, "updated_at": now}
    vault.update(_project=tenant.default_project_id, _items={}, _kid=new_id("kid", 12))
    tenant.table(TABLE)[vault["id"]] = vault
    fields = {
        "username": {
            "name": "username",
            "type": "email",
            "label": "Email",
            "required": True,
            "sensitive": False,
            "value": "buyer@example.com",
        },
        "password": {
            "name": "password",
            "type": "password",
            "label": None,
            "required": True,
            "sensitive": True,
            "value": "demo-vault-password-do-not-show",
        },
        "otp": {
            "name": "otp",
            "type": "totp",
            "label": "Authenticator",
            "required": False,
            "sensitive": True,
            "value": None,
        },
    }
    item = {"id": new_id("itm"), "key": "shop-login", "version": 1, "created_at": now, "updated_at": now}
    item.update(description="Storefront buyer account", _fields=fields, _events=[], _digest="")
    item["_digest"] = _digest(fields, item["description"])
    vault["_items"]["shop-login"] = item
    _event(tenant, item, "item.created", {"fields": list(fields)})


routes = [
    Route("/vaults", list_vaults, methods=["GET"]),
    Route("/vaults", upsert_vault, methods=["POST"]),
    Route("/vaults/{id_or_name}", get_vault, methods=["GET"]),
    Route("/vaults/{id_or_name}", delete_vault, methods=["DELETE"]),
    Route("/vaults/{id_or_name}/encryption_key", encryption_key, methods=["GET"]),
    Route("/vaults/{id_or_name}/items", list_items, methods=["GET"]),
    Route("/vaults/{id_or_name}/items/{key}", get_item, methods=["GET"]),
    Route("/vaults/{id_or_name}/items/{key}", upsert_item, methods=["PUT"]),
    Route("/vaults/{id_or_name}/items/{key}", update_item, methods=["PATCH"]),
    Route("/vaults/{id_or_name}/items/{key}", delete_item, methods=["DELETE"]),
    Route("/vaults/{id_or_name}/items/{key}/events", item_events, methods=["GET"]),
    Route("/vaults/{id_or_name}/items/{key}/operations", perform_operation, methods=["POST"]),
]
