import ast
import functools
from pathlib import Path

import pytest

from console.accounts.models import AuditLog

# No module-wide database mark: every test here that uses the database asks for it through its fixtures (org,
# a client), and the two that read the console's source need none (so the PostgreSQL tier skips them).


@pytest.fixture
def entries(org, other_org):
    rows = [
        AuditLog(org=org, actor_username="alice", action="member.invite", outcome="ok"),
        AuditLog(
            org=org, actor_username="oscar", action="pool.acquire", outcome="error", request_id="req_42"
        ),
        AuditLog(org=org, actor_username="alice", action="member.role", outcome="denied"),
        AuditLog(org=other_org, actor_username="olga", action="member.secret-thing", outcome="ok"),
    ]
    AuditLog.objects.bulk_create(rows)


async def test_it_lists_this_orgs_entries(entries, admin_client):
    html = (await admin_client.get("/o/acme/audit/")).content.decode()
    assert "pool.acquire" in html
    assert "req_42" in html
    assert "member.secret-thing" not in html


async def test_it_filters_by_action_prefix_actor_and_outcome(entries, admin_client):
    html = (await admin_client.get("/o/acme/audit/?action=member.")).content.decode()
    assert "member.invite" in html and "pool.acquire" not in html
    html = (await admin_client.get("/o/acme/audit/?actor=oscar")).content.decode()
    assert "pool.acquire" in html and "member.invite" not in html
    html = (await admin_client.get("/o/acme/audit/?outcome=denied")).content.decode()
    assert "member.role" in html and "member.invite" not in html


async def test_it_pages(org, admin_client):
    await AuditLog.objects.abulk_create(AuditLog(org=org, action=f"x.{i}") for i in range(60))
    first = (await admin_client.get("/o/acme/audit/")).content.decode()
    assert "page=2" in first
    second = (await admin_client.get("/o/acme/audit/?page=2")).content.decode()
    assert "page=3" not in second
    assert second.count("<code>x.") == 10


async def test_it_returns_the_table_partial_for_htmx(entries, admin_client):
    response = await admin_client.get(
        "/o/acme/audit/", headers={"HX-Request": "true", "HX-Target": "audit-table"}
    )
    assert response.content.decode().lstrip().startswith('<section id="audit-table">')


async def test_it_refuses_the_audit_log_to_an_operator(org, operator_client):
    assert (await operator_client.get("/o/acme/audit/")).status_code == 403


# --- every mutation leaves one row, whatever its end (proxy delete as the representative) ----------


@pytest.fixture
def proxy(tenant):
    return tenant.call("POST", "/proxies", json={"type": "isp", "name": "isp-east"}).json()


@pytest.fixture
def short_read_timeout(monkeypatch):
    from console.service import http

    monkeypatch.setattr(http, "TIMEOUT", http.httpx.Timeout(connect=3, read=0.3, write=3, pool=3))


async def delete_proxy(client, proxy):
    return await client.post(f"/o/acme/proxies/{proxy['id']}/delete/")


async def only_row(action):
    rows = [row async for row in AuditLog.objects.filter(action=action)]
    assert len(rows) == 1, rows
    return rows[0]


async def test_it_records_a_successful_mutation_as_ok(admin_client, tenant, proxy):
    await delete_proxy(admin_client, proxy)
    row = await only_row("proxy.delete")
    assert (row.outcome, row.target_id) == ("ok", proxy["id"])
    assert row.request_id.startswith("req_")


async def test_it_records_a_refused_mutation_with_the_services_code_and_request_id(
    admin_client, tenant, proxy
):
    tenant.fault(method="DELETE", path="^/proxies/", status=409, code="proxy_in_use", message="in use")
    response = await delete_proxy(admin_client, proxy)
    row = await only_row("proxy.delete")
    assert (row.outcome, row.target_id) == ("error", proxy["id"])
    assert "proxy_in_use" in row.detail and "in use" in row.detail
    assert row.request_id.startswith("req_") and row.request_id in response.content.decode()


async def test_it_records_a_5xx_as_an_error(admin_client, tenant, proxy):
    tenant.fault(method="DELETE", path="^/proxies/", status=500, code="internal")
    response = await delete_proxy(admin_client, proxy)
    assert response.status_code == 503
    row = await only_row("proxy.delete")
    assert row.outcome == "error" and "HTTP 500 internal" in row.detail
    assert row.request_id.startswith("req_")


async def test_it_records_a_timeout_as_unknown_and_says_to_check(
    admin_client, tenant, proxy, short_read_timeout
):
    # The service deletes the proxy, then answers too late: the console cannot know it happened.
    tenant.fault(method="DELETE", path="^/proxies/", delay_response_ms=1500)
    response = await delete_proxy(admin_client, proxy)
    html = response.content.decode()
    assert response.status_code == 504
    assert "Result unknown" in html and "Check the resource" in html
    row = await only_row("proxy.delete")
    assert (row.outcome, row.target_id) == ("unknown", proxy["id"])
    assert "did not answer" in row.detail
    assert tenant.call("GET", f"/proxies/{proxy['id']}").status_code == 404


async def test_it_records_a_dropped_connection_as_unknown(admin_client, tenant, proxy):
    tenant.fault(method="DELETE", path="^/proxies/", drop_response=True)
    response = await delete_proxy(
        admin_client,
        proxy,
    )
    assert "Result unknown" in response.content.decode()
    row = await only_row("proxy.delete")
    assert row.outcome == "unknown" and row.request_id.startswith("req_")
    assert tenant.call("GET", f"/proxies/{proxy['id']}").status_code == 404


async def test_it_records_a_refused_form_with_field_errors_as_an_error(admin_client, tenant, proxy):
    tenant.fault(method="PATCH", path="^/proxies/", status=400, code="invalid", message="name taken")
    response = await admin_client.post(f"/o/acme/proxies/{proxy['id']}/rename/", {"name": "dup"})
    assert response.status_code == 200
    row = await only_row("proxy.rename")
    assert row.outcome == "error" and "name taken" in row.detail


async def test_it_offers_the_new_outcomes_as_filters(org, admin_client):
    await AuditLog.objects.acreate(org=org, action="proxy.delete", outcome="unknown")
    await AuditLog.objects.acreate(org=org, action="proxy.rename", outcome="ok")
    html = (await admin_client.get("/o/acme/audit/?outcome=unknown")).content.decode()
    assert 'value="unknown" selected' in html
    assert "proxy.delete" in html and "proxy.rename" not in html


# --- every mutation in every view goes through the one helper --------------------------------------

CONSOLE = Path(__file__).resolve().parents[2] / "console"
SERVICE = "console.service"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# POSTs that only read (the service's interface uses POST for them).
READS = {
    ("browser_computer", "screenshot"),
    ("browser_computer", "mouse_position"),
    ("browser_computer", "read_clipboard"),
}


def _imports(tree) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """What a module's names stand for: ``{alias: service module}`` for ``from console.service import
    x as alias`` (and ``import console.service.x as alias``), ``{name: (module, function)}`` for
    ``from console.service.x import f as name``; imports inside functions count too."""
    modules, functions = {}, {}
    stems = {path.stem for path in (CONSOLE / "service").glob("*.py")}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SERVICE:
            modules |= {a.asname or a.name: a.name for a in node.names if a.name in stems}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{SERVICE}."):
            stem = node.module.removeprefix(f"{SERVICE}.")
            functions |= {a.asname or a.name: (stem, a.name) for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(f"{SERVICE}.") and a.asname:
                    modules[a.asname] = a.name.removeprefix(f"{SERVICE}.")
    return modules, functions


# A resource module's collection (``console/service/collection.py``): ``PROXIES = Collection(...)``, whose
# methods are called (``PROXIES.delete(svc, id)``) or exported under a name (``delete_profile =
# PROFILES.delete``). Its methods count as functions named ("collection", "Collection.<method>").
NO_COLLECTIONS: tuple[set[str], dict[str, str]] = (set(), {})


def _method(name: str) -> tuple[str, str]:
    return ("collection", f"Collection.{name}")


def _collections(tree) -> tuple[set[str], dict[str, str]]:
    """A module's ``Collection`` instances, and ``{name: method}`` of the module-level names bound to their
    methods."""
    instances, aliases = set(), {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        value, target = node.value, node.targets[0].id
        made_by = (
            value.func.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript)
            else None
        )
        made_by = made_by or (value.func if isinstance(value, ast.Call) else None)
        if isinstance(made_by, ast.Name) and made_by.id == "Collection":
            instances.add(target)
        elif (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id in instances
        ):
            aliases[target] = value.attr
    return instances, aliases


def _callee(
    call, module: str, local: set[str], imports, collections=NO_COLLECTIONS
) -> tuple[str, str] | None:
    """The (service module, function) a call reaches, if it names one."""
    modules, functions = imports
    instances, aliases = collections
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in aliases:
            return _method(aliases[func.id])
        return (module, func.id) if func.id in local else functions.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id in instances or (module == "collection" and func.value.id == "self"):
            return _method(func.attr)
        if func.value.id in modules:
            return modules[func.value.id], func.attr
    return None


def _argument(call, index: int | None, name: str):
    if index is not None and index < len(call.args):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == name), None)


@functools.cache  # both tests below read it; neither changes it
def mutating_functions() -> frozenset[tuple[str, str]]:
    """(module, function) of every service-client function that sends a mutating request.

    Judged by what it sends, not how its source spells it: the method each call hands to the one
    function that touches httpx (``http._send``), followed through whatever passes a method along
    (``request``, ``upload_file`` and its default ``"POST"``, a module's own helper) and through calls
    between service functions, whatever name they are imported under. A method that is not a plain
    string counts as mutating.
    """
    functions, imports, collections, methods = {}, {}, {}, set()
    for path in (CONSOLE / "service").glob("*.py"):
        tree = ast.parse(path.read_text())
        imports[path.stem] = _imports(tree)
        collections[path.stem] = _collections(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[(path.stem, node.name)] = node
            elif isinstance(node, ast.ClassDef) and path.stem == "collection" and node.name == "Collection":
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        functions[_method(member.name)] = member
                        methods.add(_method(member.name))
    local = {stem: {name for module, name in functions if module == stem} for stem in imports}
    # A name bound to a collection's method is that method, under the module's name.
    exported = {
        (stem, alias): _method(name)
        for stem, (_, aliases) in collections.items()
        for alias, name in aliases.items()
    }

    # (module, function) -> (position, name, default) of its parameter that becomes the HTTP method.
    senders = {("http", "_send"): (1, "method", None)}
    found = set()
    while True:
        before = (len(senders), len(found))
        found |= {alias for alias, method in exported.items() if method in found}
        for (module, name), node in functions.items():
            params = [*node.args.posonlyargs, *node.args.args]
            if (module, name) in methods:
                params = params[1:]  # self: callers never pass it
            defaults = dict(zip(reversed(params), reversed(node.args.defaults), strict=False))
            defaults |= {a: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d}
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                callee = _callee(call, module, local[module], imports[module], collections[module])
                callee = exported.get(callee, callee)
                if callee in found:
                    found.add((module, name))
                if callee not in senders:
                    continue
                method = _argument(call, *senders[callee][:2]) or senders[callee][2]
                passed = [a for a in [*params, *node.args.kwonlyargs] if getattr(method, "id", None) == a.arg]
                if passed:
                    index = params.index(passed[0]) if passed[0] in params else None
                    senders[(module, name)] = (index, passed[0].arg, defaults.get(passed[0]))
                elif not (isinstance(method, ast.Constant) and str(method.value).upper() in SAFE_METHODS):
                    found.add((module, name))
        if (len(senders), len(found)) == before:
            break
    return (
        frozenset((module, name) for module, name in found if module not in ("http", "uploads", "collection"))
        - READS
    )


def view_modules() -> list[Path]:
    """Every console module that can act for a user: all but the client itself and the sandbox."""
    skip = {CONSOLE / "service", CONSOLE / "sandbox"}
    return [path for path in CONSOLE.rglob("*.py") if not skip & set(path.parents)]


@functools.cache  # parsed once for both tests below (one xdist group): neither changes the trees
def call_sites() -> tuple[tuple[Path, ast.Call, dict], ...]:
    """Every call of a mutating service function in a view module, with the module's parent map.

    A form's ``call`` method or a view module's undecorated helper that makes such a call is itself a
    mutation: its own call sites are the ones checked.
    """
    return tuple(_call_sites())


def _call_sites():
    mutating = mutating_functions()
    for path in view_modules():
        tree = ast.parse(path.read_text())
        imports = _imports(tree)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        helpers = set()

        def calls(node, imports=imports, helpers=helpers):
            if not isinstance(node, ast.Call):
                return False
            if isinstance(node.func, ast.Name) and node.func.id in helpers:
                return True
            is_form_call = isinstance(node.func, ast.Attribute) and ast.unparse(node.func) == "form.call"
            return is_form_call or _callee(node, "", set(), imports) in mutating

        while True:
            more = {
                node.name
                for node in tree.body
                if isinstance(node, ast.AsyncFunctionDef)
                and not node.decorator_list
                and any(calls(call) and not inside_audited(call, parents) for call in ast.walk(node))
            }
            if more <= helpers:
                break
            helpers |= more
        for node in ast.walk(tree):
            if path.name.endswith("forms.py") and _enclosing(node, parents) == "call":
                continue  # a form's ``call`` is checked where views call ``form.call``
            if calls(node) and _enclosing(node, parents) not in helpers:
                yield path.relative_to(CONSOLE.parent), node, parents


def _enclosing(node, parents) -> str:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
            return node.name
    return ""


def inside_audited(node, parents) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.AsyncWith) and any(
            isinstance(item.context_expr, ast.Call) and getattr(item.context_expr.func, "id", "") == "audited"
            for item in node.items
        ):
            return True
    return False


SOURCE = pytest.mark.xdist_group("audit-source")  # one worker parses the console's source for both


@SOURCE
def test_it_finds_the_mutations_it_checks():
    sites = list(call_sites())
    assert len(sites) >= 40
    mutating = mutating_functions()
    assert {("proxies", "delete_proxy"), ("browser_computer", "move_mouse")} <= mutating
    # Through a resource's collection: a method called on it, and one exported under the module's name.
    assert {
        ("proxies", "rename_proxy"),
        ("profiles", "delete_profile"),
        ("credentials", "delete_credential"),
    } <= mutating
    assert not {("profiles", "get_profile"), ("profiles", "list_profiles")} & mutating
    # A method left to upload_file's default ("POST"), and functions of modules views import under an alias.
    assert {("browser_files", "upload_zip"), ("extensions", "upload_extension")} <= mutating
    aliased = {("telemetry_destinations", "delete_destination"), ("credential_providers", "test_provider")}
    assert aliased <= mutating
    assert (
        not {("proxies", "get_proxy"), ("browser_computer", "screenshot"), ("browser_files", "read_file")}
        & mutating
    )
    paths = {str(path) for path, _, _ in sites}
    assert {"console/telemetry_destinations/views.py", "console/credential_providers/views.py"} <= paths


@SOURCE
def test_it_sends_every_mutation_of_every_view_through_audited():
    outside = [
        f"{path}:{node.lineno}" for path, node, parents in call_sites() if not inside_audited(node, parents)
    ]
    assert outside == []


@pytest.mark.parametrize("page", ["99999999999999999999", "-3", "0", "two", "1e9", "9" * 5000])
async def test_it_answers_a_bad_page_number_with_the_first_page_and_a_notice(org, admin_client, page):
    await AuditLog.objects.acreate(org=org, action="proxy.delete")
    response = await admin_client.get("/o/acme/audit/", {"page": page})
    html = response.content.decode()
    assert response.status_code == 200
    assert "proxy.delete" in html and "Page 1" in html
    assert "“page” must be a whole number" in html


async def test_it_shows_an_empty_page_past_the_end_without_error(org, admin_client):
    await AuditLog.objects.acreate(org=org, action="proxy.delete")
    response = await admin_client.get("/o/acme/audit/", {"page": "100000"})
    assert response.status_code == 200
    assert "No entries." in response.content.decode()


async def test_it_shows_each_outcome_as_a_labelled_chip(org, admin_client):
    await AuditLog.objects.acreate(org=org, action="proxy.delete", outcome="unknown")
    await AuditLog.objects.acreate(org=org, action="proxy.rename", outcome="error")
    html = (await admin_client.get("/o/acme/audit/")).content.decode()
    assert '<span class="chip chip-warn">unknown (check the resource)</span>' in html
    assert '<span class="chip chip-error">error</span>' in html


# --- the resources that came after audited(): one row whatever the end -----------------------------


@pytest.fixture
def api_key(tenant):
    return tenant.call("POST", "/org/api_keys", json={"name": "ci-pipeline", "days_to_expire": 90}).json()


@pytest.fixture
def destination(tenant):
    body = {"name": "honeycomb", "endpoint": "https://api.honeycomb.io", "headers": {"x-team": "ingest-key"}}
    return tenant.call("POST", "/telemetry/destinations", json=body).json()


async def test_it_records_a_refused_api_key_delete_with_the_services_code(admin_client, tenant, api_key):
    tenant.fault(method="DELETE", path="^/org/api_keys/", status=409, code="key_in_use", message="in use")
    response = await admin_client.post(f"/o/acme/api_keys/{api_key['id']}/delete/")
    assert "in use" in response.content.decode()
    row = await only_row("api_key.delete")
    assert (row.outcome, row.target_id) == ("error", api_key["id"])
    assert "HTTP 409 key_in_use: in use" in row.detail and row.request_id.startswith("req_")
    assert api_key["key"] not in row.detail


async def test_it_records_an_api_key_delete_without_an_answer_as_unknown(admin_client, tenant, api_key):
    tenant.fault(method="DELETE", path="^/org/api_keys/", drop_response=True)
    response = await admin_client.post(f"/o/acme/api_keys/{api_key['id']}/delete/")
    assert "Result unknown" in response.content.decode()
    row = await only_row("api_key.delete")
    assert (row.outcome, row.target_id) == ("unknown", api_key["id"])


async def test_it_records_a_refused_destination_delete_with_the_services_code(
    admin_client, tenant, destination
):
    tenant.fault(
        method="DELETE", path="^/telemetry/destinations/", status=409, code="in_use", message="exporting"
    )
    response = await admin_client.post(f"/o/acme/telemetry_destinations/{destination['id']}/delete/")
    assert "exporting" in response.content.decode()
    row = await only_row("telemetry_destination.delete")
    assert (row.outcome, row.target_id) == ("error", destination["id"])
    assert "HTTP 409 in_use: exporting" in row.detail and row.request_id.startswith("req_")


async def test_it_records_a_destination_delete_without_an_answer_as_unknown(
    admin_client, tenant, destination
):
    tenant.fault(method="DELETE", path="^/telemetry/destinations/", drop_response=True)
    response = await admin_client.post(f"/o/acme/telemetry_destinations/{destination['id']}/delete/")
    assert "Result unknown" in response.content.decode()
    row = await only_row("telemetry_destination.delete")
    assert (row.outcome, row.target_id) == ("unknown", destination["id"])
    assert tenant.call("GET", f"/telemetry/destinations/{destination['id']}").status_code == 404


async def test_it_blanks_a_secret_the_service_quotes_back_out_of_the_row_and_the_page(admin_client, tenant):
    token = "ops_quoted-back-by-the-service"
    tenant.fault(
        method="POST", path="^/org/credential_providers$", status=400, message=f"token {token} is revoked"
    )
    form = {"name": "vault", "provider_type": "onepassword", "token": token, "cache_ttl_seconds": "300"}
    response = await admin_client.post("/o/acme/credential_providers/new/", form)
    html = response.content.decode()
    assert "token ••• is revoked" in html and token not in html
    row = await only_row("credential_provider.create")
    assert row.outcome == "error" and "token ••• is revoked" in row.detail and token not in row.detail


async def test_it_blanks_header_values_the_service_quotes_back(admin_client, tenant, destination):
    tenant.fault(
        method="PATCH", path="^/telemetry/destinations/", status=400, message="bad header sk-live-123"
    )
    form = {"name": "honeycomb", "endpoint": "https://api.honeycomb.io", "headers": "x-team: sk-live-123"}
    response = await admin_client.post(f"/o/acme/telemetry_destinations/{destination['id']}/", form)
    assert "sk-live-123" not in response.content.decode()
    row = await only_row("telemetry_destination.update")
    assert row.outcome == "error" and "bad header •••" in row.detail and "sk-live-123" not in row.detail
