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


# Every family, each call validated by the SDK's models (tests/sdk/conftest.py counts them) ----------------


def app_zip() -> bytes:
    source = (
        "from kernel import App\n\napp = App('hello-app')\n\n@app.action('greet')\n"
        "async def greet(ctx, payload):\n    return {'hello': (payload or {}).get('name', 'world')}\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("main.py", source)
    return buffer.getvalue()


def settle(condition, what="the state"):
    from tests.sandbox_fixtures import wait_until

    return wait_until(condition, what=what)


def test_the_demo_tenant_lists_its_proxies_through_the_sdk(demo_tenant):
    with Kernel(
        api_key=demo_tenant.api_key, base_url=demo_tenant.url, _strict_response_validation=True, max_retries=0
    ) as sdk:
        proxies = list(sdk.proxies.list())
    assert proxies and "datacenter" not in {p.type for p in proxies}


def test_vault_item_operations_and_provider_configs_validate(client):
    client.vaults.upsert(name="ops")
    spec = {
        "provider": "kernel",
        "description": "Shop",
        "fields": [
            {
                "name": "email",
                "type": "email",
                "label": "E-mail",
                "required": True,
                "sensitive": False,
                "value": "a@b.c",
            },
            {"name": "password", "type": "password", "required": True, "sensitive": True, "value": "pw-1"},
        ],
    }
    client.vaults.items.upsert("shop", id_or_name="ops", type="credential", spec=spec)
    assert client.vaults.items.retrieve("shop", id_or_name="ops").key == "shop"
    session = client.browsers.create(headless=True)
    filled = client.vaults.items.perform_operation(
        "shop",
        id_or_name="ops",
        type="fill",
        browser_id=session.session_id,
        fields=[{"field": "email", "selector": "#email"}],
    )
    assert filled.type == "fill" and filled.status == "completed"
    assert "pw-1" not in filled.model_dump_json()
    link = client.vault_provider_configs.create(
        name="link", provider="link", credentials={"client_id": "cid", "client_secret": "secret-1"}
    )
    card = client.vault_provider_configs.create(
        name="agentcard", provider="agentcard", credentials={"client_id": "c2", "client_secret": "sk_test_1"}
    )
    assert card.test_mode is True and "secret" not in json.dumps(link.model_dump(mode="json"))
    assert [c.id for c in client.vault_provider_configs.list()] == [link.id, card.id]
    assert client.vault_provider_configs.retrieve("link").id == link.id
    renamed = client.vault_provider_configs.update(
        link.id, name="link-2", credentials={"publishable_key": "pk_1"}
    )
    assert (renamed.name, renamed.publishable_key) == ("link-2", "pk_1")
    with pytest.raises(kernel.ConflictError):
        client.vault_provider_configs.create(
            name="LINK-2", provider="link", credentials={"client_id": "x", "client_secret": "y"}
        )
    client.vault_provider_configs.delete("link-2")


def test_audit_log_export_destinations_validate(client):
    made = client.audit_logs.export_destinations.create(
        type="s3",
        format="jsonl.gz",
        bucket="acme-audit",
        prefix="kernel",
        region="us-east-1",
        role_arn="arn:aws:iam::123456789012:role/kernel-export",
    )
    assert made.status == "paused" and made.external_id
    assert client.audit_logs.export_destinations.test(made.id).stage == "complete"
    assert client.audit_logs.export_destinations.update(made.id, status="active").status == "active"
    assert [d.id for d in client.audit_logs.export_destinations.list()] == [made.id]
    denied = client.audit_logs.export_destinations.update(made.id, bucket="denied-bucket")
    result = client.audit_logs.export_destinations.test(denied.id)
    assert (result.success, result.stage, result.error.code) == (False, "put_object", "put_object_failed")
    assert client.audit_logs.export_destinations.retrieve(made.id).consecutive_failures == 1
    client.audit_logs.export_destinations.delete(made.id)


def test_the_config_registry_and_search_answer_from_local_data(client, tenant):
    known = client.config_registry.lookup(url="https://shop.example.com/checkout")
    assert known.recommendation.type == "recommendation"
    resolved = client.config_registry.resolve(url="https://unknown.example.org", intent="read the page")
    assert resolved.analysis.status == "running"
    other = client.config_registry.resolve(url="https://other.example.org")
    assert client.config_registry.analyses.cancel(other.analysis.id).analysis.status == "canceled"
    tenant.advance(10)
    done = client.config_registry.analyses.wait_for_result(resolved.analysis.id, max_wait_seconds=30)
    assert done.analysis.status == "completed"
    assert (
        client.config_registry.analyses.retrieve(resolved.analysis.id).recommendation.type == "recommendation"
    )
    assert {s.target for s in client.config_registry.list()} == {"unknown.example.org", "other.example.org"}
    assert len(list(client.config_registry.analyses.list())) == 2
    found = client.search.create(query="sony headphones", max_results=3, country="US")
    assert (
        found.results[0].url.startswith("https://shop.example.com/") and found.warnings[0].param == "country"
    )
    assert client.search.retrieve(found.id).query == "sony headphones"
    contents = client.search.contents.fetch(
        found.id, result_ids=[found.results[0].id], content={"format": "text"}
    )
    assert "WH-1000XM5" in contents.contents[0].text
    assert [p.slug for p in client.search.providers.list()] == ["sandbox"]


def test_projects_profiles_extensions_and_credentials_validate(client):
    project = client.projects.create(name="side")
    assert client.projects.retrieve(project.id).name == "side"
    assert client.projects.update(project.id, name="side-2").name == "side-2"
    assert project.id in [p.id for p in client.projects.list()]
    client.projects.delete(project.id)
    profile = client.profiles.create(name="team")
    assert client.profiles.retrieve("team").id == profile.id
    assert client.profiles.update(profile.id, name="team-2").name == "team-2"
    assert [p.id for p in client.profiles.list()] == [profile.id]
    assert client.profiles.download(profile.id).read()
    client.profiles.delete(profile.id)
    extension = client.extensions.upload(file=("x.zip", extension_zip()), name="ext")
    assert client.extensions.get("ext").id == extension.id
    assert client.extensions.download(extension.id).read()[:2] == b"PK"
    client.extensions.delete(extension.id)
    credential = client.credentials.create(
        name="login",
        domain="totp.example.com",
        values={"username": "u", "password": "p"},
        totp_secret="JBSWY3DPEHPK3PXP",
    )
    assert client.credentials.retrieve("login").id == credential.id
    assert client.credentials.update(credential.id, values={"password": "q"}).id == credential.id
    assert [c.id for c in client.credentials.list()] == [credential.id]
    assert len(client.credentials.totp_code(credential.id).code) == 6
    client.credentials.delete(credential.id)


def test_pools_validate(client, tenant):
    pool = client.browser_pools.create(size=1, name="warm")
    tenant.advance(600)  # the pool fills on the tenant clock
    acquired = client.browser_pools.acquire("warm", acquire_timeout_seconds=30)
    client.browser_pools.release("warm", session_id=acquired.session_id, reuse=False)
    assert client.browser_pools.update("warm", size=2).id == pool.id
    client.browser_pools.flush("warm")
    client.browser_pools.delete(pool.id, force=True)


def test_a_session_and_its_tools_validate(client, tenant):
    session = client.browsers.create(
        headless=True, name="tools", telemetry={"enabled": True, "browser": {"console": {"enabled": True}}}
    )
    sid = session.session_id
    assert client.browsers.update(sid, tags={"team": "qa"}).tags == {"team": "qa"}
    computer = client.browsers.computer
    computer.click_mouse(sid, x=10, y=10)
    computer.move_mouse(sid, x=20, y=20)
    assert computer.get_mouse_position(sid).x == 20
    computer.drag_mouse(sid, path=[[1, 1], [30, 30]])
    computer.scroll(sid, x=10, y=10, delta_y=100)
    computer.type_text(sid, text="hi")
    computer.press_key(sid, keys=["Tab"])
    computer.write_clipboard(sid, text="copied")
    assert computer.read_clipboard(sid).text == "copied"
    computer.set_cursor_visibility(sid, hidden=True)
    assert computer.capture_screenshot(sid).read()[:4] == b"\x89PNG"
    computer.batch(sid, actions=[{"type": "type_text", "type_text": {"text": "x"}}])
    fs = client.browsers.fs
    fs.create_directory(sid, path="/tmp/d")
    fs.write_file(sid, contents=b"abc", path="/tmp/d/a.txt")
    assert fs.read_file(sid, path="/tmp/d/a.txt").read() == b"abc"
    assert [f.name for f in fs.list_files(sid, path="/tmp/d")] == ["a.txt"]
    fs.move(sid, src_path="/tmp/d/a.txt", dest_path="/tmp/d/b.txt")
    fs.set_file_permissions(sid, path="/tmp/d/b.txt", mode="600")
    assert fs.download_dir_zip(sid, path="/tmp/d").read()[:2] == b"PK"
    fs.upload_zip(sid, dest_path="/tmp/z", zip_file=("e.zip", extension_zip()))
    watch = fs.watch.start(sid, path="/tmp/d")
    fs.delete_file(sid, path="/tmp/d/b.txt")
    events = fs.watch.events(watch.watch_id, id_or_name=sid)
    next(iter(events))
    events.close()
    fs.watch.stop(watch.watch_id, id_or_name=sid)
    fs.delete_directory(sid, path="/tmp/z")
    ran = client.browsers.process.exec(sid, command="echo", args=["hello"])
    assert ran.exit_code == 0
    spawned = client.browsers.process.spawn(sid, command="cat", allocate_tty=True)
    client.browsers.process.resize(spawned.process_id, id_or_name=sid, cols=100, rows=30)
    client.browsers.process.stdin(spawned.process_id, id_or_name=sid, data_b64="aGkK")
    assert client.browsers.process.status(spawned.process_id, id_or_name=sid).state == "running"
    client.browsers.process.kill(spawned.process_id, id_or_name=sid, signal="KILL")
    stream = client.browsers.process.stdout_stream(spawned.process_id, id_or_name=sid)
    assert any(event.event == "exit" for event in stream)
    answer = client.browsers.request(sid, method="GET", url="https://example.com/status/200")
    assert answer.status_code == 200
    with client.browsers.stream(sid, method="GET", url="https://example.com/") as streamed:
        assert streamed.read()
    tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": [{"type": "console_log"}]})
    telemetry = client.browsers.telemetry.stream(sid, replay="all")
    assert next(iter(telemetry)).event
    telemetry.close()


def test_apps_deployments_invocations_and_auth_connections_validate(client, tenant):
    deployment = client.deployments.create(
        file=("app.zip", app_zip()), entrypoint_rel_path="main.py", version="1.0.0"
    )
    settle(lambda: client.deployments.retrieve(deployment.id).status == "running", "the deployment")
    assert [d.id for d in client.deployments.list()] == [deployment.id]
    follow = client.deployments.follow(deployment.id)
    assert next(iter(follow)).event
    follow.close()
    assert [a.app_name for a in client.apps.list()] == ["hello-app"]
    invocation = client.invocations.create(
        app_name="hello-app", action_name="greet", version="1.0.0", payload='{"name": "sdk"}', async_=True
    )
    settle(lambda: client.invocations.retrieve(invocation.id).status != "queued", "the invocation")
    assert invocation.id in [i.id for i in client.invocations.list()]
    for event in client.invocations.follow(invocation.id):
        if event.event == "invocation_state" and event.invocation.status in ("succeeded", "failed"):
            break
    client.invocations.list_browsers(invocation.id)
    client.invocations.delete_browsers(invocation.id)
    other = client.invocations.create(app_name="hello-app", action_name="greet", version="1.0.0", async_=True)
    client.invocations.update(other.id, status="failed", output='{"why": "test"}')
    client.deployments.delete(deployment.id)
    connection = client.auth.connections.create(domain="plain.example.com", profile_name="team")
    assert client.auth.connections.retrieve(connection.id).domain == "plain.example.com"
    assert [c.id for c in client.auth.connections.list()] == [connection.id]
    client.auth.connections.update(connection.id, allowed_domains=["sso.example.com"])
    client.auth.connections.login(connection.id)
    tenant.advance(120)
    waiting = settle(
        lambda: (c := client.auth.connections.retrieve(connection.id)).flow_step == "AWAITING_INPUT" and c,
        "the login to wait for input",
    )
    client.auth.connections.submit(
        connection.id,
        interaction_id=waiting.interaction_id,
        field_values={"email": "ops@acme.example", "password": "hunter2-ok"},
    )
    tenant.advance(120)
    follow = client.auth.connections.follow(connection.id)
    assert next(iter(follow)).event
    follow.close()
    client.auth.connections.timeline(connection.id)
    client.auth.connections.delete(connection.id)


def test_the_audit_log_downloads_through_the_sdk(client, tenant, tmp_path):
    client.proxies.list()
    now = tenant.control("GET", "clock").json()["now"]
    end = datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(minutes=1)
    with open(tmp_path / "audit.jsonl", "wb") as file:
        client.audit_logs.download(to=file, start=end - timedelta(days=1), end=end)
    assert b"/proxies" in (tmp_path / "audit.jsonl").read_bytes()


@pytest.mark.chromium
@pytest.mark.timeout(300)
def test_playwright_the_repl_webmcp_and_replays_validate_against_a_real_browser(chromium_sandbox):
    from tests.sandbox_fixtures import new_tenant

    url, _ = chromium_sandbox
    tenant = new_tenant(url)
    with Kernel(api_key=tenant.api_key, base_url=url, _strict_response_validation=True, max_retries=0) as sdk:
        session = sdk.browsers.create(
            headless=True, timeout_seconds=3600, viewport={"width": 640, "height": 480}
        )
        sid = session.session_id
        try:
            ran = sdk.browsers.playwright.execute(
                sid, code="await page.goto('https://shop.example.com/'); return await page.title();"
            )
            assert (ran.success, ran.result) == (True, "Shop") and ran.tab.target_id
            named = sdk.browsers.playwright.execute(sid, code="return 1 + 1", executor="side")
            assert named.result == 2 and named.tab.created
            assert [e.name for e in sdk.browsers.playwright.executors.list(sid).executors] == [
                "default",
                "side",
            ]
            sdk.browsers.playwright.executors.delete("side", id_or_name=sid)
            repl = sdk.browsers.repl(sid, code="let n = 40; repl.write('n is', n)")
            again = sdk.browsers.repl(sid, code="n += 2; console.log(n)")
            assert again.repl_id == repl.repl_id and again.content[0].text.strip() == "42"
            source = (
                "[{match: {url_patterns: ['https://shop.example.com/*']}, "
                "tool: {name: 'title', description: 'the page title', inputSchema: {type: 'object'}}, "
                "execute: () => document.title}]"
            )
            added = sdk.browsers.webmcp.custom_tools.add(sid, namespace="shop", source=source)
            assert [t.tool.name for t in sdk.browsers.webmcp.custom_tools.list(sid).tools] == ["title"]
            tools = sdk.browsers.webmcp.list_tools(sid).tools
            assert [t.tool.name for t in tools] == ["title"]
            result = sdk.browsers.webmcp.invoke_tool(sid, tool_ref=tools[0].tool_ref, input={})
            assert (result.status, result.output) == ("completed", "Shop")
            sdk.browsers.webmcp.custom_tools.remove(added.tools[0].id, id_or_name=sid)
            replay = sdk.browsers.replays.start(sid)
            tenant.advance(2)
            sdk.browsers.replays.stop(replay.replay_id, id_or_name=sid)
            assert [r.replay_id for r in sdk.browsers.replays.list(sid)] == [replay.replay_id]
            assert sdk.browsers.replays.download(replay.replay_id, id_or_name=sid).read()
        finally:
            sdk.browsers.delete_by_id(sid)
