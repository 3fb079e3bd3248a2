"""The vendor's SDK (``kernel`` 0.131.0, a test dependency only) drives the sandbox: each call's response must
validate against the SDK's own models (``_strict_response_validation``), and the direct-to-VM routes, the
indexed multipart uploads and the caps behave as the SDK expects (docs/service-changes.md)."""

import io
import json
import zipfile
from datetime import datetime, timedelta

import kernel
import pytest
from kernel import Kernel


@pytest.fixture
def client(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    with Kernel(
        api_key=tenant.api_key, base_url=tenant.url, _strict_response_validation=True, max_retries=0
    ) as sdk:
        yield sdk


def extension_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"manifest_version": 3, "name": "x", "version": "1"}))
    return buffer.getvalue()


def test_the_sdk_is_the_version_the_notes_were_compared_with():
    assert kernel.__version__ == "0.131.0"


def test_proxies_validate_and_are_read_by_name(client):
    made = client.proxies.create(type="isp", name="east", config={"country": "GB"})
    assert made.type == "isp"
    assert client.proxies.retrieve("east").id == made.id
    checked = client.proxies.check("east")
    assert checked.status == "available"
    assert [p.id for p in client.proxies.list()] == [made.id]
    assert client.proxies.update(made.id, name="east-2").name == "east-2"
    client.proxies.delete(made.id)
    with pytest.raises(kernel.BadRequestError):
        client.proxies.create(type="datacenter")  # type: ignore[arg-type]


def test_a_session_and_its_vm_routed_subresources_validate(client, tenant):
    session = client.browsers.create(headless=True, timeout_seconds=3600)
    assert session.base_url == f"{tenant.url}/_vm/{session.session_id}"
    assert client.browsers.retrieve(session.session_id).session_id == session.session_id
    before = len(tenant.requests())
    # curl and fs go straight to the VM with ?jwt= (the SDK's default routing): the sandbox serves them.
    answer = client.browsers.curl(session.session_id, url="https://example.com/status/203")
    assert answer.status == 203
    client.browsers.fs.upload(
        session.session_id,
        files=[
            {"dest_path": "/tmp/one.txt", "file": ("one.txt", b"1")},
            {"dest_path": "/tmp/two.txt", "file": ("two.txt", b"22")},
        ],
    )
    assert client.browsers.fs.file_info(session.session_id, path="/tmp/two.txt").size_bytes == 2
    routed = [r for r in list(tenant.requests())[before:] if r["path"].endswith(("/curl", "/fs/upload"))]
    assert routed and all("jwt=" not in r["query"] for r in routed)  # served by the ordinary routes
    client.browsers.load_extensions(
        session.session_id, extensions=[{"name": "one", "zip_file": ("one.zip", extension_zip())}]
    )
    lines = [
        e.message
        for e in client.browsers.logs.stream(
            session.session_id, source="supervisor", supervisor_process="chromium"
        )
    ]
    assert any("one" in line for line in lines)
    client.browsers.delete_by_id(session.session_id)


def test_the_telemetry_type_filter_validates(client, tenant):
    session = client.browsers.create(
        headless=True, telemetry={"enabled": True, "browser": {"console": {"enabled": True}}}
    )
    events = [{"type": "console_log"}, {"type": "console_error"}, {"type": "page_load"}]
    tenant.control("POST", "telemetry/emit", {"session_id": session.session_id, "events": events})
    page = client.browsers.telemetry.events(session.session_id, type=["console_error"], limit=100)
    assert [e.event.type for e in page.items] == ["console_error"]


def test_org_limits_and_entitlements_validate(client):
    limits = client.organization.limits.retrieve()
    assert limits.vaults_used == 0 and limits.concurrent_sessions_available is not None
    entitlements = client.organization.entitlements.retrieve()
    assert entitlements.features.vaults.enabled and entitlements.features.search.enabled


def test_a_project_cap_refuses_with_the_sdks_rate_limit_error(client):
    client.projects.limits.update("default", max_concurrent_sessions=1)
    client.browsers.create(headless=True)
    with pytest.raises(kernel.RateLimitError) as caught:
        client.browsers.create(headless=True)
    assert caught.value.body["code"] == "concurrent_sessions_limit_exceeded"


def test_api_keys_validate(client):
    made = client.api_keys.create(name="ci", days_to_expire=30)
    assert made.key.startswith("sk_")
    assert [k.id for k in client.api_keys.list()] == [made.id]
    rotated = client.api_keys.rotate(made.id, expire_in_days=0)
    assert client.api_keys.update(rotated.id, name="ci-2").name == "ci-2"
    client.api_keys.delete(rotated.id)
    assert client.api_keys.retrieve(rotated.id, include_deleted=True).deleted_at is not None


def test_telemetry_destinations_validate(client):
    made = client.telemetry.destinations.create(
        name="hc", endpoint="https://api.honeycomb.io", headers={"x-team": "s"}
    )
    assert made.headers == {"x-team": ""}
    updated = client.telemetry.destinations.update("hc", headers={"x-team": None, "x-other": "t"})
    assert updated.headers == {"x-other": ""}
    assert [d.id for d in client.telemetry.destinations.list()] == [made.id]
    client.telemetry.destinations.delete(made.id)


def test_credential_providers_validate(client):
    made = client.credential_providers.create(
        name="1p", provider_type="onepassword", token="ops_" + "x1y2z3" * 5
    )
    assert client.credential_providers.test(made.id).success
    assert client.credential_providers.list_items(made.id).items
    assert [p.id for p in client.credential_providers.list()] == [made.id]
    client.credential_providers.delete(made.id)


def test_the_audit_log_validates_and_exports(client, tenant):
    client.proxies.list()
    now = tenant.control("GET", "clock").json()["now"]
    end = datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(minutes=1)
    start = end - timedelta(days=1)
    entries = list(client.audit_logs.list(start=start, end=end))
    assert any(e.path == "/proxies" for e in entries)
    chunk = client.audit_logs.export_chunk(start=start, end=end)
    assert b"/proxies" in chunk.read()


def test_the_chrome_store_route_answers_its_own_error(client):
    with pytest.raises(kernel.InternalServerError) as caught:
        client.extensions.download_from_chrome_store(url="https://chromewebstore.google.com/detail/x/abcdef")
    assert caught.value.body["code"] == "chrome_store_unreachable"


def test_the_validation_is_strict(client, tenant):
    """A record the SDK's models reject raises, so the checks above are real."""
    tenant.fault(
        method="GET", path="^/proxies/p1$", status=200, body=json.dumps({"type": "datacenter", "id": "p1"})
    )
    with pytest.raises(kernel.APIResponseValidationError):
        client.proxies.retrieve("p1")


def test_vaults_items_and_events_validate(client):
    made = client.vaults.upsert(name="checkout")
    assert client.vaults.retrieve("checkout").id == made.id
    assert client.vaults.retrieve_encryption_key("checkout").jwk.crv == "P-256"
    spec = {
        "provider": "kernel",
        "fields": [
            {"name": "username", "type": "email", "value": "a@example.com"},
            {"name": "password", "type": "password", "value": "secret-1"},
        ],
    }
    item = client.vaults.items.upsert("login", id_or_name="checkout", type="credential", spec=spec)
    assert item.type == "credential" and item.state.fields["password"].has_value
    updated = client.vaults.items.update(
        "login",
        id_or_name="checkout",
        type="credential",
        version=item.version,
        spec={"fields": {"password": {"value": None}}},
    )
    assert updated.version == item.version + 1
    assert [i.key for i in client.vaults.items.list("checkout")] == ["login"]
    events = client.vaults.items.events("login", id_or_name="checkout")
    assert [e.name for e in events] == ["item.created", "item.fields_cleared"]
    assert [v.id for v in client.vaults.list()] == [made.id]
    client.vaults.items.delete("login", id_or_name="checkout")
    client.vaults.delete("checkout")


def test_more_reads_of_the_named_resources_validate(client):
    session = client.browsers.create(headless=True)
    assert session.session_id in [s.session_id for s in client.browsers.list()]
    pool = client.browser_pools.create(size=1, name="warm")
    assert client.browser_pools.retrieve("warm").id == pool.id
    assert [p.id for p in client.browser_pools.list()] == [pool.id]
    assert client.projects.limits.retrieve("default").max_pooled_sessions is None
    assert (
        client.organization.limits.update(
            default_project_max_concurrent_sessions=50
        ).default_project_max_concurrent_sessions
        == 50
    )
    destination = client.telemetry.destinations.create(name="c", endpoint="https://otel.example.com")
    assert client.telemetry.destinations.retrieve("c").id == destination.id
    provider = client.credential_providers.create(
        name="p", provider_type="onepassword", token="ops_" + "q" * 24
    )
    assert client.credential_providers.retrieve(provider.id).name == "p"
    assert client.credential_providers.update(provider.id, priority=2).priority == 2
    assert client.extensions.list() is not None
    assert client.auth.context.retrieve().organization.id
