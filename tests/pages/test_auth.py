"""Auth connection pages: list, create, overview with inline health settings, history, delete, and the
login flow at every step; typed values never come back in any page or partial, nor in the audit log."""

import re

import pytest
from django.template.loader import render_to_string

from console.accounts.models import AuditLog
from console.auth.forms import HealthForm
from console.auth.views import step_context
from console.service.auth_connections import AuthConnection, FlowState

# Distinctive, so a leak anywhere would be found by a plain substring search.
PASSWORD = "flow-leak-probe-PW-8Jq3!"
WRONG_PASSWORD = "wrong-leak-probe-PW-2Lz"
CODE = "731942"
SECRETS = (PASSWORD, WRONG_PASSWORD, CODE)


def url(path=""):
    return f"/o/acme/auth/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def body_of(response) -> str:
    text = response.content.decode()
    for secret in SECRETS:
        assert secret not in text
    return text


def create(tenant, **body):
    body = {"domain": "plain.example.com", "profile_name": "team", **body}
    response = tenant.call("POST", "/auth/connections", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def get(tenant, cid):
    return tenant.call("GET", f"/auth/connections/{cid}").json()


def settled(tenant, cid):
    tenant.advance(1)
    return get(tenant, cid)


def started(tenant, **body):
    record = create(tenant, **body)
    assert tenant.call("POST", f"/auth/connections/{record['id']}/login", json={}).status_code == 200
    return settled(tenant, record["id"])


def answer(tenant, record, **values):
    body = {"interaction_id": record["interaction_id"], "field_values": values}
    assert tenant.call("POST", f"/auth/connections/{record['id']}/submit", json=body).status_code == 200


def writes(tenant, path_end=""):
    return [
        r
        for r in tenant.requests()
        if r["method"] in ("POST", "PATCH", "DELETE") and r["path"].endswith(path_end)
    ]


def form(**fields):
    data = {
        "domain": "crm.example.com",
        "profile_name": "sales-bot",
        "login_url": "",
        "allowed_domains": "",
        "credential_name": "",
        "save_credentials": "on",
        "health_checks": "on",
        "health_check_interval": "1",
        "interval_unit": "hours",
        "auto_reauth": "on",
        "proxy": "",
    }
    data.update(fields)
    return {k: v for k, v in data.items() if v is not None}


# List --------------------------------------------------------------------------------------------


async def test_it_lists_connections_with_status_last_check_and_capability(viewer_client, tenant):
    create(tenant, profile_name="sales", domain="crm.example.com")
    external = create(tenant, profile_name="ops", credential={"provider": "1password", "path": "Ops/CRM"})
    response = await viewer_client.get(url())
    body = body_of(response)
    assert response.status_code == 200
    assert "crm.example.com" in body and "sales" in body and "Needs auth" in body
    assert ">NEEDS_AUTH<" not in body  # the service's word stays in the filter's values, not on screen
    assert "needs a human" in body and "re-auths automatically" in body
    # The tooltip says why, in plain words.
    assert "never logged in successfully" in body
    assert "external password manager" in body
    assert external["id"] in body
    assert "New auth connection" not in body


async def test_it_filters_by_domain_profile_and_search_as_a_partial(viewer_client, tenant):
    create(tenant, profile_name="sales", domain="crm.example.com")
    create(tenant, profile_name="billing", domain="erp.example.com")
    by_domain = body_of(
        await viewer_client.get(url(), {"domain": "erp.example.com"}, headers=hx("auth-table"))
    )
    assert by_domain.lstrip().startswith('<section id="auth-table">')
    assert "billing" in by_domain and "sales" not in by_domain
    by_profile = body_of(await viewer_client.get(url(), {"profile": "sales"}))
    assert "crm.example.com" in by_profile and "erp.example.com" not in by_profile
    searched = body_of(await viewer_client.get(url(), {"q": "erp"}))
    assert "billing" in searched and "crm.example.com" not in searched
    empty = body_of(await viewer_client.get(url(), {"q": "nothing-like-this"}))
    assert "No auth connection matches" in empty


async def test_it_filters_by_status_for_the_overviews_link(viewer_client, tenant):
    create(tenant, profile_name="waiting", domain="crm.example.com")
    done = started(tenant, profile_name="fine", domain="erp.example.com")
    answer(tenant, done, email="ops@acme.example", password="pw-ok")
    assert settled(tenant, done["id"])["status"] == "AUTHENTICATED"
    body = body_of(await viewer_client.get(url(), {"status": "NEEDS_AUTH"}))
    assert "waiting" in body and "erp.example.com" not in body
    assert '<option value="NEEDS_AUTH" selected>' in body


async def test_it_pages_the_list(viewer_client, tenant):
    for i in range(23):
        create(tenant, profile_name=f"p{i:02d}", health_checks=False)
    body = body_of(await viewer_client.get(url()))
    assert "1\u201320" in body and 'rel="next"' in body
    last = body_of(await viewer_client.get(url(), {"offset": 20}))
    assert "21\u201323" in last and 'rel="next"' not in last


async def test_it_hides_every_page_from_outsiders(outsider_client, tenant):
    record = create(tenant)
    for path in ("", "new/", f"{record['id']}/", f"{record['id']}/history/", f"{record['id']}/flow/"):
        assert (await outsider_client.get(url(path))).status_code == 404
    assert (
        await outsider_client.get(url(f"{record['id']}/flow/"), headers=hx("auth-flow-step"))
    ).status_code == 404


# Create ------------------------------------------------------------------------------------------


async def test_it_shows_the_create_form_with_the_plan_minimum(operator_client):
    body = body_of(await operator_client.get(url("new/")))
    assert "Your plan's minimum: every 5 minutes" in body
    assert "A profile that does not exist is created" in body
    assert "0 of 50 auth connections" in body


async def test_it_refuses_the_create_form_to_viewers(viewer_client):
    assert (await viewer_client.get(url("new/"))).status_code == 403
    assert (await viewer_client.post(url("new/"), form())).status_code == 403


async def test_it_creates_a_connection_and_says_the_profile_was_created(operator_client, tenant):
    response = await operator_client.post(
        url("new/"),
        form(
            allowed_domains="sso.example.com\nidp.example.com",
            login_url="https://crm.example.com/login",
            health_check_interval="30",
            interval_unit="minutes",
            record_session="on",
            proxy="direct",
        ),
        follow=True,
    )
    body = body_of(response)
    record = tenant.call("GET", "/auth/connections").json()[0]
    assert response.redirect_chain[-1][0] == url(f"{record['id']}/")
    assert "sales-bot on crm.example.com created" in body
    assert "did not exist, so it was created" in body
    assert record["health_check_interval"] == 1800
    assert record["allowed_domains"] == ["sso.example.com", "idp.example.com"]
    assert record["record_session"] is True
    assert record["browser"] == {"proxy": {"mode": "direct"}}
    entry = await AuditLog.objects.aget(action="auth.create")
    assert entry.target_id == record["id"] and entry.outcome == "ok"


async def test_it_does_not_say_the_profile_was_created_when_it_existed(operator_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "sales-bot"})
    body = body_of(await operator_client.post(url("new/"), form(), follow=True))
    assert "created." in body and "did not exist" not in body


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"domain": "https://crm.example.com/login"}, "bare host name"),
        ({"profile_name": "has space"}, "letters, digits, dots"),
        ({"health_check_interval": "2", "interval_unit": "minutes"}, "at most every 5 minutes"),
        ({"health_check_interval": "25", "interval_unit": "hours"}, "At most 24 hours"),
        ({"allowed_domains": "not a domain!"}, "Not a host name"),
    ],
)
async def test_it_checks_the_form_before_sending_anything(operator_client, tenant, fields, message):
    response = await operator_client.post(url("new/"), form(**fields), headers=hx("auth-form"))
    assert response.status_code == 200
    assert message in body_of(response)
    assert writes(tenant, "/auth/connections") == []


async def test_it_explains_a_duplicate_with_a_link_to_the_existing_connection(operator_client, tenant):
    existing = create(tenant, domain="crm.example.com", profile_name="sales-bot")
    response = await operator_client.post(url("new/"), form(), headers=hx("auth-form"))
    body = body_of(response)
    assert "already has an auth connection for crm.example.com" in body
    assert f'href="/o/acme/auth/{existing["id"]}/"' in body
    assert (await AuditLog.objects.aget(action="auth.create")).outcome == "error"


async def test_it_explains_the_plan_cap(operator_client, tenant):
    tenant.fault(
        method="POST",
        path="^/auth/connections$",
        status=403,
        code="insufficient_plan",
        message="your plan allows 50 auth connections",
    )
    body = body_of(await operator_client.post(url("new/"), form(), headers=hx("auth-form")))
    assert "Your plan does not allow another auth connection" in body


async def test_it_shows_the_service_field_error_next_to_the_credential(operator_client, tenant):
    body = body_of(
        await operator_client.post(url("new/"), form(credential_name="no-such-cred"), headers=hx("auth-form"))
    )
    assert "there is no credential named" in body
    assert 'id="auth-form"' in body


# Overview, health settings, history, delete ------------------------------------------------------


async def test_it_shows_the_overview_to_viewers_read_only(viewer_client, tenant):
    record = create(tenant, login_url="https://plain.example.com/login")
    body = body_of(await viewer_client.get(url(f"{record['id']}/")))
    assert record["id"] in body and "https://plain.example.com/login" in body
    assert "every 1 hour" in body
    assert "Save health settings" not in body and "Start login" not in body and "Delete…" not in body


async def test_it_saves_only_the_changed_health_settings_inline(operator_client, tenant):
    record = create(tenant)
    data = {
        "health_checks": "on",
        "health_check_interval": "10",
        "interval_unit": "minutes",
        "auto_reauth": "on",
    }
    response = await operator_client.post(url(f"{record['id']}/settings/"), data, headers=hx("auth-health"))
    body = body_of(response)
    assert body.lstrip().startswith('<section class="card" id="auth-health">')
    assert "Now every 10 minutes" in body
    assert get(tenant, record["id"])["health_check_interval"] == 600
    assert (await AuditLog.objects.aget(action="auth.update")).detail == "changed: health_check_interval"


def test_it_sends_only_the_fields_that_changed():
    connection = AuthConnection.from_json(
        {"id": "mauth_1", "health_checks": True, "health_check_interval": 3600, "auto_reauth": True}
    )
    same = HealthForm(
        {"health_checks": "on", "health_check_interval": "1", "interval_unit": "hours", "auto_reauth": "on"},
        connection=connection,
        floor=300,
    )
    assert same.is_valid() and same.changes() == {}
    changed = HealthForm(
        {"health_check_interval": "60", "interval_unit": "minutes"}, connection=connection, floor=300
    )
    assert changed.is_valid()
    assert changed.changes() == {"health_checks": False, "auto_reauth": False}


def test_it_grandfathers_an_interval_below_the_floor_until_it_is_edited():
    connection = AuthConnection.from_json(
        {"id": "mauth_1", "health_checks": True, "health_check_interval": 120, "auto_reauth": True}
    )
    kept = HealthForm(
        {"health_checks": "on", "health_check_interval": "2", "interval_unit": "minutes"},
        connection=connection,
        floor=300,
    )
    assert kept.is_valid()
    lowered = HealthForm(
        {"health_checks": "on", "health_check_interval": "1", "interval_unit": "minutes"},
        connection=connection,
        floor=300,
    )
    assert not lowered.is_valid()


async def test_it_refuses_a_health_interval_below_the_plan_floor(operator_client, tenant):
    record = create(tenant)
    data = {"health_checks": "on", "health_check_interval": "60", "interval_unit": "seconds"}
    body = body_of(
        await operator_client.post(url(f"{record['id']}/settings/"), data, headers=hx("auth-health"))
    )
    assert "at most every 5 minutes (300 seconds)" in body
    assert writes(tenant, record["id"]) == []


async def test_it_refuses_settings_to_viewers(viewer_client, tenant):
    record = create(tenant)
    response = await viewer_client.post(url(f"{record['id']}/settings/"), {"health_check_interval": "2"})
    assert response.status_code == 403


async def test_it_shows_the_history_filtered_and_paged(viewer_client, tenant):
    record = started(tenant, health_check_interval=300)
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    settled(tenant, record["id"])
    tenant.advance(300 * 25)
    body = body_of(await viewer_client.get(url(f"{record['id']}/history/")))
    assert "Health check" in body and 'rel="next"' in body
    logins = body_of(
        await viewer_client.get(
            url(f"{record['id']}/history/"), {"type": "login"}, headers=hx("auth-history")
        )
    )
    assert logins.lstrip().startswith('<section id="auth-history">')
    assert "Login" in logins and ">Succeeded<" in logins and "Health check" not in logins


async def test_it_confirms_then_deletes_and_says_a_running_flow_is_canceled(operator_client, tenant):
    record = started(tenant)
    confirm = body_of(await operator_client.get(url(f"{record['id']}/delete/")))
    assert "deleting the connection cancels it" in confirm
    response = await operator_client.post(url(f"{record['id']}/delete/"), follow=True)
    assert response.redirect_chain[-1][0] == url()
    assert "deleted" in body_of(response)
    assert tenant.call("GET", f"/auth/connections/{record['id']}").status_code == 404
    entry = await AuditLog.objects.aget(action="auth.delete")
    assert "canceled the login flow" in entry.detail


async def test_it_refuses_delete_to_viewers(viewer_client, tenant):
    record = create(tenant)
    assert (await viewer_client.post(url(f"{record['id']}/delete/"))).status_code == 403
    assert tenant.call("GET", f"/auth/connections/{record['id']}").status_code == 200


# The login flow ----------------------------------------------------------------------------------


async def test_it_starts_a_login_and_lands_on_the_flow_page(operator_client, tenant):
    record = create(tenant)
    response = await operator_client.post(url(f"{record['id']}/login/"), follow=True)
    assert response.redirect_chain[-1][0] == url(f"{record['id']}/flow/")
    body = body_of(response)
    assert "Finding the login form" in body and "<progress" in body
    assert f'sse-connect="/o/acme/auth/{record["id"]}/events/"' in body
    assert 'target="_blank"' in body and "Hosted login page" in body and "Live view" in body
    assert "data-countdown-seconds" in body
    assert (await AuditLog.objects.aget(action="auth.login")).detail == "LOGIN flow started"


async def test_it_refuses_to_start_a_login_for_viewers(viewer_client, tenant):
    record = create(tenant)
    assert (await viewer_client.post(url(f"{record['id']}/login/"))).status_code == 403


async def test_it_shows_a_connection_without_a_flow_with_a_start_button(operator_client, tenant):
    record = create(tenant)
    body = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert "No login has been started" in body and "Start login" in body
    assert "sse-connect" not in body


async def test_it_renders_the_input_step_as_one_form(viewer_client, tenant):
    record = started(tenant, domain="workspace.example.com")
    body = body_of(await viewer_client.get(url(f"{record['id']}/flow/")))
    assert "The site asks" in body
    assert 'name="v_workspace"' in body and 'name="v_email"' in body and 'name="v_password"' in body
    assert 'type="password"' in body and 'autocomplete="current-password"' in body
    assert "The name in your workspace address" in body
    assert f'value="{record["interaction_id"]}"' in body
    assert '<fieldset class="flow" disabled>' in body  # viewers watch, operators answer
    assert 'hx-trigger="every 2s"' in body and "data-auth-poll" in body


async def test_it_submits_fields_once_audits_their_names_and_shows_submitting(operator_client, tenant):
    record = started(tenant)
    data = {
        "interaction_id": record["interaction_id"],
        "pause": pause_key(record),
        "v_email": "ops@acme.example",
        "v_password": PASSWORD,
    }
    response = await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    body = body_of(response)
    assert "Submitting" in body
    assert len(writes(tenant, "/submit")) == 1
    entry = await AuditLog.objects.aget(action="auth.flow.submit")
    assert entry.detail == "submitted fields: email, password"
    assert PASSWORD not in entry.detail
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"
    done = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert "Logged in" in done and "https://plain.example.com/home" in done


async def test_it_redirects_a_plain_form_submit_back_to_the_flow(operator_client, tenant):
    record = started(tenant)
    data = {
        "interaction_id": record["interaction_id"],
        "pause": pause_key(record),
        "v_email": "ops@acme.example",
        "v_password": PASSWORD,
    }
    response = await operator_client.post(url(f"{record['id']}/submit/"), data)
    assert response.status_code == 302 and response["Location"] == url(f"{record['id']}/flow/")


async def test_it_marks_the_field_the_site_rejected_and_keeps_the_password_empty(operator_client, tenant):
    record = started(tenant)
    answer(tenant, record, email="ops@acme.example", password=WRONG_PASSWORD)
    settled(tenant, record["id"])
    body = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert 'aria-describedby="flow-password-error"' in body
    assert "Incorrect password. Try again." in body
    password_input = re.search(r'<input id="flow-password"[^>]*>', body).group(0)
    assert 'aria-invalid="true"' in password_input and "value=" not in password_input


async def test_it_checks_required_fields_without_sending_and_never_echoes_values(operator_client, tenant):
    record = started(tenant)
    data = {
        "interaction_id": record["interaction_id"],
        "pause": pause_key(record),
        "v_email": "ops-echo-probe@acme.example",
        "v_password": "",
    }
    body = body_of(
        await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    )
    assert "Enter password." in body
    assert "ops-echo-probe" not in body
    assert writes(tenant, "/submit") == []


async def test_it_explains_a_stale_answer_and_shows_the_current_step(operator_client, tenant):
    record = started(tenant, domain="identifier-first.example.com")
    answer(tenant, record, email="ops@acme.example")
    settled(tenant, record["id"])
    sent_before = len(writes(tenant, "/submit"))
    data = {
        "interaction_id": record["interaction_id"],
        "pause": pause_key(record),
        "v_email": "x@acme.example",
    }
    body = body_of(
        await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    )
    assert "The login moved on before your answer was sent" in body
    assert 'name="v_password"' in body
    assert len(writes(tenant, "/submit")) == sent_before


async def test_it_offers_mfa_methods_with_destinations_and_sends_the_choice(operator_client, tenant):
    record = started(tenant, domain="mfa.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    pick = settled(tenant, record["id"])
    body = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert 'value="selected_choice_id:mfa_sms"' in body and "+1 ••• ••• ••21" in body
    assert "Authenticator app" in body
    data = {
        "interaction_id": pick["interaction_id"],
        "pause": pause_key(pick),
        "choice": "selected_choice_id:mfa_sms",
    }
    await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    code = settled(tenant, record["id"])
    assert code["fields"][0]["type"] == "code"
    assert (await AuditLog.objects.aget(action="auth.flow.submit")).detail == "chose: Text message (mfa_sms)"
    code_page = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert 'autocomplete="one-time-code"' in code_page and 'inputmode="numeric"' in code_page
    data = {"interaction_id": code["interaction_id"], "pause": pause_key(code), "v_sms_code": CODE}
    body_of(await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step")))
    assert settled(tenant, record["id"])["status"] == "AUTHENTICATED"


async def test_it_renders_account_pickers_and_sso_buttons(viewer_client, tenant):
    sso = started(tenant, domain="sso.example.com", profile_name="sso")
    body = body_of(await viewer_client.get(url(f"{sso['id']}/flow/")))
    assert "Continue with Google" in body and "Continue with Okta" in body and 'name="v_email"' in body
    accounts = started(tenant, domain="accounts.example.com", profile_name="acct")
    answer(tenant, accounts, email="ops@acme.example", password="pw-ok")
    settled(tenant, accounts["id"])
    body = body_of(await viewer_client.get(url(f"{accounts['id']}/flow/")))
    assert "Acme Corp" in body and "Administrator · 42 members" in body and "Personal" in body


async def test_it_answers_a_legacy_step_with_legacy_actions(operator_client, tenant):
    record = started(tenant, domain="legacy.example.com")
    data = {
        "interaction_id": "",
        "pause": pause_key(record),
        "v_email": "ops@acme.example",
        "v_password": PASSWORD,
    }
    body_of(await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step")))
    pick = settled(tenant, record["id"])
    body = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert 'value="mfa_option_id:email"' in body
    data = {"pause": pause_key(pick), "choice": "mfa_option_id:email"}
    await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    assert settled(tenant, record["id"])["discovered_fields"][0]["linked_mfa_type"] == "email"


async def test_it_shows_the_external_action_with_its_fallback(viewer_client, tenant):
    record = started(tenant, domain="push.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    settled(tenant, record["id"])
    body = body_of(await viewer_client.get(url(f"{record['id']}/flow/")))
    assert "Waiting for an action outside the browser" in body
    assert "approve the sign-in request" in body
    assert "Send a code by SMS instead" in body


async def test_it_explains_a_failed_login_in_plain_words_with_try_again(viewer_client, tenant):
    record = started(tenant, domain="bot.example.com")
    body = body_of(await viewer_client.get(url(f"{record['id']}/flow/")))
    assert "The login failed" in body and "recognised an automated browser" in body
    assert "<code>bot_detected</code>" in body and "Try again" in body
    assert "sse-connect" not in body


async def test_it_shows_an_expired_flow(viewer_client, tenant):
    record = started(tenant)
    tenant.advance(16 * 60)
    body = body_of(await viewer_client.get(url(f"{record['id']}/flow/")))
    assert "The login flow expired" in body and "Try again" in body


def test_it_renders_a_canceled_flow_from_a_stream_frame():
    state = FlowState.from_json(
        {
            "event": "managed_auth_state",
            "flow_status": "CANCELED",
            "flow_step": "AWAITING_INPUT",
            "error_code": "connection_deleted",
        }
    )
    html = render_to_string("auth/flow.html#auth-flow-step", step_context("acme", "mauth_1", state))
    assert "The login flow was canceled" in html and "The auth connection was deleted." in html
    assert "csrfmiddlewaretoken" not in html  # rendered once for every viewer: htmx sends the header


async def test_it_answers_a_poll_with_204_until_the_step_changes(viewer_client, tenant):
    record = started(tenant)
    same = await viewer_client.get(
        url(f"{record['id']}/flow/"), {"seen": pause_key(record)}, headers=hx("auth-flow-step")
    )
    assert same.status_code == 204
    changed = await viewer_client.get(
        url(f"{record['id']}/flow/"), {"seen": "older"}, headers=hx("auth-flow-step")
    )
    assert changed.status_code == 200
    assert body_of(changed).lstrip().startswith('<div id="auth-flow-step"')


def oob(body: str, dom_id: str) -> str:
    found = re.search(rf'<(\w+) id="{dom_id}"[^>]*hx-swap-oob="true"[^>]*>(.*?)</\1>', body, re.S)
    assert found, f"no out-of-band #{dom_id} in {body}"
    return found.group(2)


async def test_it_clears_the_header_once_the_login_succeeded(operator_client, tenant):
    record = started(tenant)
    page = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert "login in progress" in page and "Hosted login page" in page
    data = {
        "interaction_id": record["interaction_id"],
        "pause": pause_key(record),
        "v_email": "ops@acme.example",
        "v_password": PASSWORD,
    }
    await operator_client.post(url(f"{record['id']}/submit/"), data, headers=hx("auth-flow-step"))
    settled(tenant, record["id"])
    # The step's poll (and the live stream, below) bring the header along as out-of-band swaps.
    flow_url = url(f"{record['id']}/flow/")
    step = body_of(await operator_client.get(flow_url, {"seen": "old"}, headers=hx("auth-flow-step")))
    assert "Logged in" in step
    assert "login in progress" not in oob(step, "auth-flow-chip")
    assert "Authenticated" in oob(step, "auth-status-chip")
    assert "Hosted login page" not in oob(step, "auth-flow-links") and "Live view" not in step
    page = body_of(await operator_client.get(url(f"{record['id']}/flow/")))
    assert "login in progress" not in page and "Hosted login page" not in page
    assert "hx-swap-oob" not in page  # the full page has one header, already current


async def test_it_relays_the_header_with_the_last_state(viewer_client, tenant):
    record = create(tenant, domain="bot.example.com", profile_name="relay3")
    tenant.call("POST", f"/auth/connections/{record['id']}/login", json={})
    response = await viewer_client.get(url(f"{record['id']}/events/"))
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk.decode())
        if "event: ended" in "".join(chunks):
            break
    stream = "".join(chunks)
    assert 'id="auth-flow-links" class="actions" hx-swap-oob="true"' in stream
    assert 'id="auth-flow-chip" hx-swap-oob="true"' in stream


async def test_it_drops_a_stale_site_error_from_a_successful_login_in_the_history(viewer_client, tenant):
    record = started(tenant, domain="totp.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    code = settled(tenant, record["id"])
    answer(tenant, code, totp="000000")
    retry = settled(tenant, record["id"])
    assert retry["website_error"].startswith("That code didn't work")
    answer(tenant, retry, totp="123456")
    assert settled(tenant, record["id"])["status"] == "AUTHENTICATED"
    body = body_of(await viewer_client.get(url(f"{record['id']}/history/")))
    assert ">Succeeded<" in body
    assert "That code didn" not in body


async def test_it_relays_the_flow_states_and_ends_with_the_flow(viewer_client, tenant):
    record = started(tenant, domain="bot.example.com", profile_name="relay")
    tenant.call("DELETE", f"/auth/connections/{record['id']}")
    record = create(tenant, domain="bot.example.com", profile_name="relay2")
    tenant.call("POST", f"/auth/connections/{record['id']}/login", json={})
    response = await viewer_client.get(url(f"{record['id']}/events/"))
    assert response["Content-Type"].startswith("text/event-stream")
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk.decode())
        if "event: ended" in "".join(chunks):
            break
    stream = "".join(chunks)
    assert "event: state" in stream
    assert "Finding the login form" in stream
    assert "The login failed" in stream
    assert "csrfmiddlewaretoken" not in stream


def pause_key(record) -> str:
    return AuthConnection.from_json(record).pause_key


# Upstream URLs and roles ---------------------------------------------------------------------------


async def test_it_gives_viewers_no_hosted_or_live_view_url_of_a_login(viewer_client, operator_client, tenant):
    record = started(tenant, domain="workspace.example.com")
    cid = record["id"]
    running = get(tenant, cid)
    capabilities = [running["hosted_url"], running["live_view_url"]]
    capabilities += [u.split("://", 1)[1].split("/", 1)[1] for u in capabilities]  # the paths alone
    for response in (
        await viewer_client.get(url(f"{cid}/flow/")),
        await viewer_client.get(url(f"{cid}/flow/"), headers=hx("auth-flow-step")),
        await viewer_client.get(url(f"{cid}/")),
    ):
        body = body_of(response)
        assert not [c for c in capabilities if c in body]
        assert "Hosted login page" not in body and "Live view" not in body
    operator_body = body_of(await operator_client.get(url(f"{cid}/flow/")))
    assert not [c for c in capabilities if c in operator_body]  # operators too: through the console only
    assert f'href="/o/acme/auth/{cid}/flow/hosted/"' in operator_body
    assert f'href="/o/acme/auth/{cid}/flow/live-view/"' in operator_body


async def test_it_hands_a_login_s_pages_only_to_an_operator_at_each_use(operator, operator_client, tenant):
    """The flow page held the service's hosted-login and live-view URLs: a member removed from the org kept
    them. The console's links check the member at each use, audit it, and redirect to the running flow's."""
    from console.accounts.models import Membership, Role

    record = started(tenant, domain="workspace.example.com")
    cid = record["id"]
    running = get(tenant, cid)
    for which, field in (("hosted", "hosted_url"), ("live-view", "live_view_url")):
        response = await operator_client.get(url(f"{cid}/flow/{which}/"))
        assert response.status_code == 302 and response["Location"] == running[field]
        assert response["Referrer-Policy"] == "no-referrer"
    rows = [a.detail async for a in AuditLog.objects.filter(action="auth.flow.open").order_by("pk")]
    assert rows == ["opened the hosted login page", "opened the live view"]
    await Membership.objects.filter(user=operator).aupdate(role=Role.VIEWER)
    assert (await operator_client.get(url(f"{cid}/flow/hosted/"))).status_code == 403
    await Membership.objects.filter(user=operator).adelete()
    assert (await operator_client.get(url(f"{cid}/flow/live-view/"))).status_code == 404
    assert await AuditLog.objects.filter(action="auth.flow.open").acount() == 2


async def test_it_sends_an_operator_back_to_the_flow_once_the_login_has_no_such_page(operator_client, tenant):
    record = settled(tenant, create(tenant, domain="workspace.example.com")["id"])
    response = await operator_client.get(url(f"{record['id']}/flow/hosted/"))
    assert response.status_code == 302 and response["Location"] == url(f"{record['id']}/flow/")
    assert (await operator_client.get(url(f"{record['id']}/flow/elsewhere/"))).status_code == 404
    assert not await AuditLog.objects.filter(action="auth.flow.open").aexists()


@pytest.mark.parametrize(
    "hostile", ["javascript:alert(document.cookie)", "data:text/html;base64,PHNjcmlwdD4=", "VBScript:x"]
)
async def test_it_shows_upstream_urls_that_are_not_http_as_text(operator_client, tenant, hostile):
    record = started(tenant, domain="workspace.example.com")
    cid = record["id"]
    planted = {"hosted_url": hostile, "live_view_url": hostile, "login_url": hostile}
    tenant.fault(method="GET", path=f"^/auth/connections/{cid}$", fields=planted, count=None)
    flow = body_of(await operator_client.get(url(f"{cid}/flow/")))
    detail = body_of(await operator_client.get(url(f"{cid}/")))
    tenant.control("DELETE", "faults")
    tenant.fault(
        method="GET",
        path=f"^/auth/connections/{cid}$",
        fields={"flow_status": "SUCCESS", "flow_step": None, "post_login_url": hostile},
        count=None,
    )
    landed = body_of(await operator_client.get(url(f"{cid}/flow/")))
    assert "The profile is logged in" in landed
    for body in (flow, detail, landed):
        assert "Not an http(s) address" in body and hostile.split(":")[1][:8] in body
        assert not re.search(r'(href|src)="(?!data:,")[^"]*(script:|data:)', body, re.IGNORECASE)


async def test_it_links_a_connection_to_a_provider_item_picked_by_search(operator_client, tenant):
    token = "ops_" + "k1l2m3n4o5" * 3
    tenant.call(
        "POST",
        "/org/credential_providers",
        json={"name": "1p", "provider_type": "onepassword", "token": token},
    )
    page = (await operator_client.get(url("new/"))).content.decode()
    assert 'name="credential_item"' in page and "/credential_providers/picker/" in page
    picked = await operator_client.get(
        "/o/acme/credential_providers/picker/", {"credential_item": "stripe"}, headers=hx("provider-items")
    )
    options = picked.content.decode()
    assert options.lstrip().startswith('<datalist id="provider-items">')
    assert 'value="1p::Shop/Stripe Dashboard"' in options and "GitHub" not in options
    response = await operator_client.post(url("new/"), form(credential_item="1p::Shop/Stripe Dashboard"))
    assert response.status_code == 302
    record = tenant.call("GET", "/auth/connections").json()[0]
    assert record["credential"] == {"provider": "1p", "path": "Shop/Stripe Dashboard"}


async def test_it_refuses_a_malformed_provider_item_without_calling_the_service(operator_client, tenant):
    response = await operator_client.post(url("new/"), form(credential_item="just-a-name"))
    assert "provider::Vault/Item" in response.content.decode()
    both = await operator_client.post(url("new/"), form(credential_item="1p::A/B", credential_name="c"))
    assert "not both" in both.content.decode()
    assert tenant.call("GET", "/auth/connections").json() == []


async def test_it_renders_the_frame_at_once_and_the_connection_after(viewer_client, tenant, settings):
    record = create(tenant, profile_name="slowpoke")
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.fault(method="GET", path=f"^/auth/connections/{record['id']}$", latency_ms=2000, count=1)
    frame = await viewer_client.get(url(f"{record['id']}/"), headers={"Sec-Fetch-Mode": "navigate"})
    assert 'id="auth-detail" class="deferred deferred-loading"' in frame.content.decode()
    part = url(f"{record['id']}/?part=auth-detail")
    failed = body_of(await viewer_client.get(part, headers={"HX-Request": "true"}))
    assert "did not answer within 0.5 s" in failed and ">Retry</a>" in failed
    loaded = body_of(await viewer_client.get(part, headers={"HX-Request": "true"}))
    assert loaded.lstrip().startswith('<div id="auth-detail"') and "slowpoke" in loaded
    assert 'id="auth-health"' in loaded
