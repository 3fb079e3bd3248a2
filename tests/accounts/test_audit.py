import ast
import re
from pathlib import Path

import pytest

from console.accounts.models import AuditLog

pytestmark = pytest.mark.django_db(transaction=True)


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
MUTATING = re.compile(r'"(POST|PATCH|PUT|DELETE)"')
# POSTs that only read (the service's interface uses POST for them), and the sandbox's own client.
READS = {("computer", "screenshot"), ("computer", "mouse_position"), ("computer", "read_clipboard")}


def mutating_functions() -> set[tuple[str, str]]:
    """(module, function) of every service-client function that sends a mutating request, directly or
    through a helper of the same module."""
    found = set()
    for path in (CONSOLE / "service").glob("*.py"):
        if path.name == "http.py":
            continue
        source = path.read_text()
        functions = {
            node.name: ast.get_source_segment(source, node)
            for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        names = {name for name, text in functions.items() if MUTATING.search(text)}
        while True:
            more = {n for n, t in functions.items() if any(re.search(rf"\b{m}\(", t) for m in names)}
            if more <= names:
                break
            names |= more
        found |= {(path.stem, name) for name in names} - READS
    return found


def call_sites():
    """Every call of a mutating service function in a view module, with the module's parent map.

    A form's ``call`` method or a view module's undecorated helper that makes such a call is itself a
    mutation: its own call sites are the ones checked.
    """
    mutating = mutating_functions()
    modules = [*CONSOLE.glob("*/views.py"), *CONSOLE.glob("browsers/panes/*.py")]
    for path in modules:
        if path.name == "forms.py":
            continue  # its ``call`` methods are checked where views call ``form.call``
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        helpers = {
            node.name
            for node in tree.body
            if isinstance(node, ast.AsyncFunctionDef)
            and not node.decorator_list
            and any(_calls(call, mutating) for call in ast.walk(node))
        }
        for node in ast.walk(tree):
            direct = _calls(node, mutating) and _enclosing(node, parents) not in helpers
            if direct or (isinstance(node, ast.Call) and getattr(node.func, "id", "") in helpers):
                yield path.relative_to(CONSOLE.parent), node, parents


def _calls(node, mutating) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
    owner = {"auth": "auth_connections"}.get(owner, owner)
    return (owner, node.func.attr) in mutating or (owner == "form" and node.func.attr == "call")


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


def test_it_finds_the_mutations_it_checks():
    sites = list(call_sites())
    assert len(sites) >= 40
    assert ("proxies", "delete_proxy") in mutating_functions()
    assert ("computer", "move_mouse") in mutating_functions()


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
