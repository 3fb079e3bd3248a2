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
