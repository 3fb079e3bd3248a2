"""Sandbox conformance: auth connections and the login state machine (notes §9, limits from §1).

Step transitions take a moment (DISCOVERING 0.6 s, SUBMITTING 0.3 s on the tenant clock); tests move
the tenant clock by a second instead of sleeping, so every transition here is deterministic.
"""

import json

import httpx
import pytest

SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def error_shape(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


def detail_codes(response):
    return {d["code"] for d in error_shape(response)["details"]}


def create(tenant, status=201, **body):
    body = {"domain": "plain.example.com", "profile_name": "team", **body}
    response = tenant.call("POST", "/auth/connections", json=body)
    assert response.status_code == status, response.text
    return response.json()


def get(tenant, cid):
    response = tenant.call("GET", f"/auth/connections/{cid}")
    assert response.status_code == 200, response.text
    return response.json()


def settled(tenant, cid):
    """The connection once the current step's short delay has passed (the clock moves 1 s)."""
    tenant.advance(1)
    return get(tenant, cid)


# A step that lasts a moment of real time (DISCOVERING, SUBMITTING) is read with the tenant's clock held back
# a minute before the action: on a loaded machine the moment could pass before the read. Given back after.
HOLD_SECONDS = 60


def login(tenant, cid, **body):
    response = tenant.call("POST", f"/auth/connections/{cid}/login", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def submit(tenant, cid, status=200, **body):
    response = tenant.call("POST", f"/auth/connections/{cid}/submit", json=body)
    assert response.status_code == status, response.text
    return response


def answer(tenant, record, status=200, **values):
    return submit(tenant, record["id"], status, interaction_id=record["interaction_id"], field_values=values)


def choose(tenant, record, choice_id):
    return submit(tenant, record["id"], interaction_id=record["interaction_id"], selected_choice_id=choice_id)


def started(tenant, **body):
    """A connection whose login flow waits on its first page."""
    record = create(tenant, **body)
    login(tenant, record["id"])
    return settled(tenant, record["id"])


def timeline(tenant, cid, **params):
    response = tenant.call("GET", f"/auth/connections/{cid}/timeline", params=params)
    assert response.status_code == 200, response.text
    return response


def add_credential(tenant, name="vault-login", domain="totp.example.com", totp_secret=SECRET, **values):
    body = {
        "name": name,
        "domain": domain,
        "values": values or {"username": "ops@acme.example", "password": "s3cret-Vault!"},
    }
    if totp_secret:
        body["totp_secret"] = totp_secret
    response = tenant.call("POST", "/credentials", json=body)
    assert response.status_code == 201, response.text


# The record --------------------------------------------------------------------------------------


def test_it_creates_a_connection_with_the_full_record_and_defaults(tenant):
    record = create(tenant, login_url="https://plain.example.com/login", allowed_domains=["sso.example.com"])
    assert record["id"].startswith("mauth_")
    assert record["status"] == "NEEDS_AUTH"
    assert record["save_credentials"] is True
    assert record["health_checks"] is True
    assert record["health_check_interval"] == 3600
    assert record["auto_reauth"] is True
    assert record["record_session"] is False
    assert record["allowed_domains"] == ["sso.example.com"]
    assert record["can_reauth"] is False
    assert record["can_reauth_reason"] == "no_prior_successful_login"
    for flow_field in ("flow_status", "flow_step", "flow_type", "interaction_id", "fields", "choices"):
        assert record[flow_field] is None
    assert not [k for k in record if k.startswith("_")]


def test_it_creates_a_missing_profile_and_reuses_an_existing_one(tenant):
    assert tenant.call("GET", "/profiles", params={"name": "newbie"}).json() == []
    create(tenant, profile_name="newbie")
    profiles = tenant.call("GET", "/profiles", params={"name": "newbie"}).json()
    assert [p["name"] for p in profiles] == ["newbie"]
    create(tenant, profile_name="newbie", domain="mfa.example.com")
    assert len(tenant.call("GET", "/profiles", params={"name": "newbie"}).json()) == 1


def test_it_refuses_a_second_connection_for_the_same_profile_and_domain(tenant):
    first = create(tenant, profile_name="dup")
    response = tenant.call(
        "POST", "/auth/connections", json={"domain": "PLAIN.example.com", "profile_name": "DUP"}
    )
    assert response.status_code == 409
    body = error_shape(response)
    assert body["code"] == "auth_connection_exists"
    assert first["id"] in body["message"]
    create(tenant, profile_name="dup", domain="mfa.example.com")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"domain": ""}, "domain"),
        ({"domain": "https://app.example.com/login"}, "domain"),
        ({"profile_name": ""}, "profile_name"),
        ({"profile_name": "has space"}, "profile_name"),
        ({"health_check_interval": 299}, "health_check_interval"),
        ({"health_check_interval": 86401}, "health_check_interval"),
        ({"health_check_interval": "3600"}, "health_check_interval"),
        ({"login_url": "ftp://x"}, "login_url"),
        ({"allowed_domains": "a.example.com"}, "allowed_domains"),
        ({"credential": {"name": "nope"}}, "credential.name"),
        ({"credential": {"provider": "1password"}}, "credential.path"),
        ({"auto_reauth": "yes"}, "auto_reauth"),
    ],
)
def test_it_refuses_bad_fields_with_a_detail_naming_the_field(tenant, body, field):
    response = tenant.call(
        "POST", "/auth/connections", json={"domain": "plain.example.com", "profile_name": "p", **body}
    )
    assert response.status_code == 400
    assert field in detail_codes(response)


def test_it_names_the_plan_floor_when_the_interval_is_too_short(tenant):
    response = tenant.call(
        "POST",
        "/auth/connections",
        json={"domain": "plain.example.com", "profile_name": "p", "health_check_interval": 60},
    )
    floor = tenant.call("GET", "/org/limits").json()["min_health_check_interval_seconds"]
    assert floor == 300
    assert "300" in error_shape(response)["details"][0]["message"]


def test_it_refuses_a_connection_over_the_plan_cap_with_insufficient_plan(tenant):
    limit = tenant.call("GET", "/org/limits").json()["max_auth_connections"]
    for i in range(limit):
        create(tenant, profile_name=f"p{i}", health_checks=False)
    assert tenant.call("GET", "/org/limits").json()["auth_connections_used"] == limit
    response = tenant.call(
        "POST", "/auth/connections", json={"domain": "x.example.com", "profile_name": "one"}
    )
    assert response.status_code == 403
    assert error_shape(response)["code"] == "insufficient_plan"


def test_it_patches_only_the_fields_sent(tenant):
    record = create(tenant, login_url="https://plain.example.com/login", allowed_domains=["a.example.com"])
    path = f"/auth/connections/{record['id']}"
    patched = tenant.call("PATCH", path, json={"health_check_interval": 600}).json()
    assert patched["health_check_interval"] == 600
    assert patched["login_url"] == "https://plain.example.com/login"
    assert patched["allowed_domains"] == ["a.example.com"]
    patched = tenant.call("PATCH", path, json={"login_url": "", "allowed_domains": ["b.example.com"]}).json()
    assert patched["login_url"] is None
    assert patched["allowed_domains"] == ["b.example.com"]
    assert patched["health_check_interval"] == 600


@pytest.mark.parametrize(
    ("body", "field"),
    [({"domain": "other.example.com"}, "domain"), ({"health_check_interval": 10}, "health_check_interval")],
)
def test_it_refuses_a_patch_of_a_fixed_or_invalid_field(tenant, body, field):
    record = create(tenant)
    response = tenant.call("PATCH", f"/auth/connections/{record['id']}", json=body)
    assert response.status_code == 400
    assert field in detail_codes(response)


def test_it_lists_with_filters_and_paging(tenant):
    for i in range(3):
        create(tenant, profile_name=f"sales-{i}", domain="crm.example.com")
    create(tenant, profile_name="sales-0", domain="mail.example.com")
    listed = tenant.call("GET", "/auth/connections", params={"limit": 2})
    assert listed.headers["X-Has-More"] == "true"
    assert listed.headers["X-Next-Offset"] == "2"
    by_domain = tenant.call("GET", "/auth/connections", params={"domain": "crm.example.com"}).json()
    assert len(by_domain) == 3
    by_profile = tenant.call("GET", "/auth/connections", params={"profile_name": "sales-0"}).json()
    assert {r["domain"] for r in by_profile} == {"crm.example.com", "mail.example.com"}
    assert len(tenant.call("GET", "/auth/connections", params={"query": "MAIL"}).json()) == 1


def test_it_deletes_a_connection(tenant):
    record = create(tenant)
    assert tenant.call("DELETE", f"/auth/connections/{record['id']}").status_code == 204
    assert tenant.call("GET", f"/auth/connections/{record['id']}").status_code == 404
    assert tenant.call("GET", "/org/limits").json()["auth_connections_used"] == 0


def test_it_keeps_connections_inside_their_project(tenant):
    tenant.call("POST", "/org/projects", json={"name": "other"})
    record = create(tenant)
    assert (
        tenant.call(
            "GET", f"/auth/connections/{record['id']}", headers={"X-Kernel-Project": "other"}
        ).status_code
        == 404
    )
    assert tenant.call("GET", "/auth/connections", headers={"X-Kernel-Project": "other"}).json() == []


# The login state machine -------------------------------------------------------------------------


def test_it_runs_a_plain_login_through_every_step(tenant):
    record = create(tenant, domain="plain.example.com")
    tenant.advance(-HOLD_SECONDS)
    started_flow = login(tenant, record["id"])
    assert started_flow["flow_type"] == "LOGIN"
    assert started_flow["hosted_url"].startswith("http")
    assert started_flow["flow_expires_at"].endswith("Z")
    assert get(tenant, record["id"])["flow_step"] == "DISCOVERING"
    tenant.advance(HOLD_SECONDS)
    waiting = settled(tenant, record["id"])
    assert (waiting["flow_status"], waiting["flow_step"]) == ("IN_PROGRESS", "AWAITING_INPUT")
    assert [(f["id"], f["type"], f["reason"]) for f in waiting["fields"]] == [
        ("email", "identifier", "missing"),
        ("password", "password", "missing"),
    ]
    assert waiting["interaction_id"]
    tenant.advance(-HOLD_SECONDS)
    assert answer(tenant, waiting, email="ops@acme.example", password="hunter2-ok").json() == {
        "accepted": True
    }
    assert get(tenant, record["id"])["flow_step"] == "SUBMITTING"
    tenant.advance(HOLD_SECONDS)
    done = settled(tenant, record["id"])
    assert (done["flow_status"], done["flow_step"], done["status"]) == (
        "SUCCESS",
        "COMPLETED",
        "AUTHENTICATED",
    )
    assert done["post_login_url"] == "https://plain.example.com/home"
    assert done["hosted_url"] is None and done["interaction_id"] is None
    entry = timeline(tenant, record["id"]).json()[0]
    assert (entry["type"], entry["status"], entry["step"]) == ("login", "SUCCESS", "COMPLETED")


def test_it_asks_for_the_identifier_then_the_password_with_a_new_interaction_id(tenant):
    first = started(tenant, domain="identifier-first.example.com")
    assert [f["id"] for f in first["fields"]] == ["email"]
    answer(tenant, first, email="ops@acme.example")
    second = settled(tenant, first["id"])
    assert [f["type"] for f in second["fields"]] == ["password"]
    assert second["interaction_id"] != first["interaction_id"]
    answer(tenant, second, password="fine-password")
    assert settled(tenant, first["id"])["flow_status"] == "SUCCESS"


def test_it_marks_a_wrong_password_rejected_with_the_site_error(tenant):
    record = started(tenant)
    answer(tenant, record, email="ops@acme.example", password="wrong-one")
    again = settled(tenant, record["id"])
    assert again["flow_step"] == "AWAITING_INPUT"
    assert again["website_error"] == "Incorrect password. Try again."
    reasons = {f["id"]: f["reason"] for f in again["fields"]}
    assert reasons == {"email": "missing", "password": "rejected"}
    timeline_entry = timeline(tenant, record["id"]).json()[0]
    assert timeline_entry["website_error"] == "Incorrect password. Try again."
    answer(tenant, again, email="ops@acme.example", password="right-one")
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_offers_mfa_methods_then_takes_an_sms_code(tenant):
    record = started(tenant, domain="mfa.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    pick = settled(tenant, record["id"])
    assert pick["fields"] == []
    methods = {c["mfa_type"]: c for c in pick["choices"]}
    assert set(methods) == {"sms", "email", "totp"}
    assert methods["sms"]["masked_destination"] == "+1 ••• ••• ••21"
    assert {o["type"] for o in pick["mfa_options"]} == {"sms", "email", "totp"}
    choose(tenant, pick, methods["sms"]["id"])
    code = settled(tenant, record["id"])
    assert [(f["type"], f["hint"]) for f in code["fields"]] == [
        ("code", "We sent a 6-digit code by SMS to the number ending in 21")
    ]
    answer(tenant, code, sms_code="000000")
    retry = settled(tenant, record["id"])
    assert retry["fields"][0]["reason"] == "rejected"
    assert "code" in retry["website_error"]
    answer(tenant, retry, sms_code="123456")
    assert settled(tenant, record["id"])["status"] == "AUTHENTICATED"


def test_it_takes_a_totp_code_after_choosing_the_authenticator(tenant):
    record = started(tenant, domain="mfa.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    pick = settled(tenant, record["id"])
    choose(tenant, pick, "mfa_totp")
    code = settled(tenant, record["id"])
    assert code["fields"][0]["type"] == "totp_code"
    answer(tenant, code, totp="654321")
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_offers_an_account_picker(tenant):
    record = started(tenant, domain="accounts.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    pick = settled(tenant, record["id"])
    assert [c["type"] for c in pick["choices"]] == ["account"] * 3
    assert [o["label"] for o in pick["sign_in_options"]] == ["Acme Corp", "Globex", "Personal"]
    choose(tenant, pick, "acct_globex")
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_offers_sso_buttons_and_records_the_provider(tenant):
    record = started(tenant, domain="sso.example.com")
    assert {b["provider"] for b in record["pending_sso_buttons"]} == {"google", "okta"}
    assert [c["type"] for c in record["choices"]] == ["sso_provider", "sso_provider"]
    choose(tenant, record, "sso_google")
    google = settled(tenant, record["id"])
    assert [f["label"] for f in google["fields"]] == ["Google account email", "Google password"]
    answer(tenant, google, google_email="ops@acme.example", google_password="pw-ok")
    done = settled(tenant, record["id"])
    assert (done["flow_status"], done["sso_provider"]) == ("SUCCESS", "google")


def test_it_waits_for_a_push_approval_on_the_tenant_clock(tenant):
    record = started(tenant, domain="push.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    waiting = settled(tenant, record["id"])
    assert waiting["flow_step"] == "AWAITING_EXTERNAL_ACTION"
    assert "approve" in waiting["external_action_message"]
    assert [c["id"] for c in waiting["choices"]] == ["fallback_sms"]
    tenant.advance(10)
    assert get(tenant, record["id"])["flow_step"] == "AWAITING_EXTERNAL_ACTION"
    tenant.advance(11)
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_lets_a_push_page_fall_back_to_an_sms_code(tenant):
    record = started(tenant, domain="push.example.com")
    answer(tenant, record, email="ops@acme.example", password="pw-ok")
    waiting = settled(tenant, record["id"])
    choose(tenant, waiting, "fallback_sms")
    code = settled(tenant, record["id"])
    assert code["flow_step"] == "AWAITING_INPUT"
    answer(tenant, code, sms_code="246810")
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_fails_a_bot_blocking_site_with_bot_detected(tenant):
    record = started(tenant, domain="bot.example.com")
    assert record["flow_status"] == "FAILED"
    assert record["error_code"] == "bot_detected"
    assert "CAPTCHA" in record["error_message"]
    assert record["status"] == "NEEDS_AUTH"
    entry = timeline(tenant, record["id"]).json()[0]
    assert (entry["status"], entry["error_code"]) == ("FAILED", "bot_detected")


def test_it_describes_a_legacy_site_with_the_legacy_lists_and_takes_legacy_submits(tenant):
    record = started(tenant, domain="legacy.example.com")
    assert record["fields"] is None and record["choices"] is None
    assert [f["name"] for f in record["discovered_fields"]] == ["email", "password"]
    submit(tenant, record["id"], fields={"email": "ops@acme.example", "password": "pw-ok"})
    pick = settled(tenant, record["id"])
    assert [o["type"] for o in pick["mfa_options"]] == ["sms", "email"]
    submit(tenant, record["id"], mfa_option_id="email")
    code = settled(tenant, record["id"])
    assert code["discovered_fields"][0]["linked_mfa_type"] == "email"
    submit(tenant, record["id"], fields={"email_code": "135790"})
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_logs_in_without_a_human_when_the_credential_has_a_totp_secret(tenant):
    add_credential(tenant)
    record = create(tenant, domain="totp.example.com", credential={"name": "vault-login"})
    login(tenant, record["id"])
    for _ in range(10):  # discovering, the password page and the TOTP page, each auto-filled
        current = settled(tenant, record["id"])
        if current["flow_status"] != "IN_PROGRESS":
            break
        assert current["flow_step"] in ("DISCOVERING", "SUBMITTING")
    assert (current["flow_status"], current["status"]) == ("SUCCESS", "AUTHENTICATED")
    assert current["can_reauth"] is True
    assert current["can_reauth_reason"] == "has_credential"


def test_it_stops_for_a_human_when_the_credential_lacks_the_totp_secret(tenant):
    add_credential(tenant, totp_secret=None)
    record = create(tenant, domain="totp.example.com", credential={"name": "vault-login"})
    login(tenant, record["id"])
    for _ in range(5):
        current = settled(tenant, record["id"])
        if current["flow_step"] == "AWAITING_INPUT":
            break
    assert [f["type"] for f in current["fields"]] == ["totp_code"]
    answer(tenant, current, totp="112233")
    done = settled(tenant, record["id"])
    assert done["status"] == "AUTHENTICATED"
    assert (done["can_reauth"], done["can_reauth_reason"]) == (False, "requires_totp_without_secret")


def test_it_expires_a_flow_at_flow_expires_at(tenant):
    record = started(tenant)
    tenant.advance(15 * 60)
    expired = get(tenant, record["id"])
    assert expired["flow_status"] == "EXPIRED"
    assert expired["interaction_id"] is None
    response = answer(tenant, record, 409, email="a@b.example", password="pw")
    assert error_shape(response)["code"] == "flow_not_awaiting_input"
    assert timeline(tenant, record["id"]).json()[0]["status"] == "EXPIRED"


def test_it_refuses_a_stale_interaction_id(tenant):
    record = started(tenant, domain="identifier-first.example.com")
    answer(tenant, record, email="ops@acme.example")
    fresh = settled(tenant, record["id"])
    response = submit(
        tenant, record["id"], 409, interaction_id=record["interaction_id"], field_values={"password": "x"}
    )
    assert error_shape(response)["code"] == "interaction_id_mismatch"
    assert get(tenant, record["id"])["interaction_id"] == fresh["interaction_id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"field_values": {"email": "a@b.example", "password": "pw"}}, "interaction_id"),
        ({"fields": {"email": "a"}, "mfa_option_id": "sms"}, "mfa_option_id"),
        ({}, "field_values"),
    ],
)
def test_it_takes_exactly_one_action_with_its_interaction_id(tenant, body, field):
    record = started(tenant)
    response = submit(tenant, record["id"], 400, **body)
    assert field in detail_codes(response)


def test_it_refuses_unknown_fields_and_missing_required_values(tenant):
    record = started(tenant)
    response = answer(tenant, record, 400, email="a@b.example", pin="1")
    assert detail_codes(response) == {"field_values.pin", "field_values.password"}


def test_it_refuses_a_submit_while_submitting(tenant):
    record = started(tenant)
    answer(tenant, record, email="a@b.example", password="pw-ok")
    response = answer(tenant, record, 409, email="a@b.example", password="pw-ok")
    assert error_shape(response)["code"] == "flow_not_awaiting_input"


def test_it_cancels_a_flow_superseded_by_a_new_login(tenant):
    record = started(tenant)
    login(tenant, record["id"])
    entries = timeline(tenant, record["id"], type="login").json()
    assert [e["status"] for e in entries] == ["IN_PROGRESS", "CANCELED"]


def test_it_never_returns_submitted_values(tenant):
    record = started(tenant)
    answer(tenant, record, email="ops@acme.example", password="Very-Secret-Pw-991")
    settled(tenant, record["id"])
    for path in (
        f"/auth/connections/{record['id']}",
        "/auth/connections",
        f"/auth/connections/{record['id']}/timeline",
    ):
        assert "Very-Secret-Pw-991" not in tenant.call("GET", path).text


# Health checks, re-auth and the timeline ---------------------------------------------------------


def logged_in(tenant, **body):
    """A connection after a successful login (typed by a human unless a credential fills the form)."""
    record = started(tenant, **body)
    if record["flow_step"] == "AWAITING_INPUT":
        answer(tenant, record, email="ops@acme.example", password="pw-ok")
    for _ in range(5):
        current = settled(tenant, record["id"])
        if current["flow_status"] != "IN_PROGRESS":
            break
    assert current["status"] == "AUTHENTICATED"
    return record


def test_it_runs_health_checks_every_interval_on_the_tenant_clock(tenant):
    record = logged_in(tenant, health_check_interval=300)
    tenant.advance(300)
    checked = get(tenant, record["id"])
    assert checked["last_auth_check_at"] is not None
    assert checked["last_auth_at"] == checked["last_auth_check_at"]
    tenant.advance(600)
    checks = timeline(tenant, record["id"], type="health_check").json()
    assert [c["status"] for c in checks] == ["AUTHENTICATED"] * 3
    assert checks[0]["timestamp"] > checks[1]["timestamp"]


def test_it_needs_a_human_when_the_session_expires_without_a_usable_credential(tenant):
    record = logged_in(tenant, health_check_interval=300, save_credentials=False)
    assert get(tenant, record["id"])["can_reauth_reason"] == "no_credential"
    tenant.control("POST", f"auth/connections/{record['id']}/expire_session")
    tenant.advance(300)
    current = get(tenant, record["id"])
    assert current["status"] == "NEEDS_AUTH"
    check = timeline(tenant, record["id"], type="health_check").json()[0]
    assert (check["status"], check["previous_status"]) == ("NEEDS_AUTH", "AUTHENTICATED")
    assert timeline(tenant, record["id"], type="reauth").json() == []


def test_it_reauthenticates_automatically_with_a_linked_credential(tenant):
    add_credential(tenant, domain="plain.example.com", totp_secret=None)
    record = logged_in(tenant, health_check_interval=300, credential={"name": "vault-login"})
    assert get(tenant, record["id"])["can_reauth"] is True
    tenant.control("POST", f"auth/connections/{record['id']}/expire_session")
    tenant.advance(305)
    current = get(tenant, record["id"])
    assert (current["status"], current["flow_type"], current["flow_status"]) == (
        "AUTHENTICATED",
        "REAUTH",
        "SUCCESS",
    )
    assert timeline(tenant, record["id"], type="reauth").json()[0]["status"] == "SUCCESS"


def test_it_does_not_reauth_when_auto_reauth_is_off(tenant):
    add_credential(tenant, domain="plain.example.com", totp_secret=None)
    record = logged_in(
        tenant, health_check_interval=300, credential={"name": "vault-login"}, auto_reauth=False
    )
    tenant.control("POST", f"auth/connections/{record['id']}/expire_session")
    tenant.advance(305)
    assert get(tenant, record["id"])["status"] == "NEEDS_AUTH"


def test_it_reuses_saved_values_for_a_later_login(tenant):
    record = logged_in(tenant)
    current = get(tenant, record["id"])
    assert (current["can_reauth"], current["can_reauth_reason"]) == (True, "cua_has_credential")
    assert login(tenant, record["id"])["flow_type"] == "REAUTH"
    settled(tenant, record["id"])
    assert settled(tenant, record["id"])["flow_status"] == "SUCCESS"


def test_it_reports_an_external_credential_as_reauth_capable(tenant):
    record = create(tenant, credential={"provider": "1password", "path": "Ops/Example"})
    assert (record["can_reauth"], record["can_reauth_reason"]) == (True, "external_credential")


def test_it_filters_and_pages_the_timeline_newest_first(tenant):
    record = logged_in(tenant, health_check_interval=300)
    tenant.advance(300 * 5)
    page = timeline(tenant, record["id"], limit=2)
    assert page.headers["X-Has-More"] == "true"
    stamps = [e["timestamp"] for e in timeline(tenant, record["id"]).json()]
    assert stamps == sorted(stamps, reverse=True)
    assert {e["type"] for e in timeline(tenant, record["id"], type="login").json()} == {"login"}
    bad = tenant.call("GET", f"/auth/connections/{record['id']}/timeline", params={"type": "nope"})
    assert bad.status_code == 400
    assert detail_codes(bad) == {"type"}


# The events stream -------------------------------------------------------------------------------


def frames(response):
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def stream(tenant, cid):
    return httpx.stream(
        "GET",
        f"{tenant.url}/auth/connections/{cid}/events",
        headers={"Authorization": f"Bearer {tenant.api_key}", "Accept": "text/event-stream"},
        timeout=10,
    )


def test_it_streams_state_frames_until_the_flow_succeeds(tenant):
    record = create(tenant)
    login(tenant, record["id"])
    seen = []
    with stream(tenant, record["id"]) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for frame in frames(response):
            if frame["event"] != "managed_auth_state":
                continue
            seen.append(frame["flow_step"])
            assert {"flow_status", "flow_step", "timestamp"} <= set(frame)
            if frame["flow_step"] == "AWAITING_INPUT":
                assert frame["fields"] and frame["interaction_id"]
                answer(tenant, frame | {"id": record["id"]}, email="ops@acme.example", password="pw-ok")
    assert seen[-1] == "COMPLETED"
    assert seen[:1] == ["DISCOVERING"]
    assert "SUBMITTING" in seen


def test_it_sends_heartbeats_every_keepalive_period(tenant):
    tenant.control("POST", "settings", {"keepalive_seconds": 0.2})
    record = create(tenant)
    with stream(tenant, record["id"]) as response:
        events = []
        for frame in frames(response):
            events.append(frame["event"])
            if events.count("sse_heartbeat") == 2:
                break
    assert events[0] == "managed_auth_state"


def test_it_ends_the_stream_with_canceled_when_the_connection_is_deleted(tenant):
    record = started(tenant)
    with stream(tenant, record["id"]) as response:
        statuses = []
        for frame in frames(response):
            statuses.append(frame.get("flow_status"))
            if len(statuses) == 1:
                assert tenant.call("DELETE", f"/auth/connections/{record['id']}").status_code == 204
    assert statuses[-1] == "CANCELED"


def test_it_answers_404_for_the_stream_of_an_unknown_connection(tenant):
    assert tenant.call("GET", "/auth/connections/mauth_nope/events").status_code == 404


def test_it_says_the_simulated_browser_has_no_live_view(tenant):
    record = create(tenant)
    flow = login(tenant, record["id"])
    hosted = httpx.get(flow["hosted_url"])
    assert hosted.status_code == 200
    assert "plain.example.com" in hosted.text and "Simulated browser: no live view" in hosted.text
    assert "<iframe" not in hosted.text
    live = httpx.get(flow["live_view_url"])
    assert live.status_code == 200 and "Simulated browser: no live view" in live.text
    assert tenant.call("GET", f"/browsers/{flow['live_view_url'].rsplit('/', 1)[1]}").status_code == 404


def test_it_seeds_connections_in_every_state(demo_tenant):
    records = demo_tenant.call("GET", "/auth/connections").json()
    states = {(r["status"], r["flow_status"], r["flow_step"]) for r in records}
    assert ("AUTHENTICATED", "SUCCESS", "COMPLETED") in states
    assert ("NEEDS_AUTH", "IN_PROGRESS", "AWAITING_INPUT") in states
    assert any(r["flow_status"] == "FAILED" for r in records)
    assert any(r["status"] == "NEEDS_AUTH" and r["flow_status"] != "IN_PROGRESS" for r in records)
    healthy = next(r for r in records if r["profile_name"] == "ci-bot")
    assert (
        len(
            demo_tenant.call(
                "GET", f"/auth/connections/{healthy['id']}/timeline", params={"type": "health_check"}
            ).json()
        )
        > 10
    )


def test_it_seeds_connections_that_hold_still_for_ten_minutes(demo_tenant):
    """A demo tenant's connections change nothing an operator sees in their first ten minutes: a page a
    test (or an operator) opens on it shows the same at every poll. The seed once left a health check that
    found a login expired (and the reauth it started) a few seconds after seeding, and two more a minute
    after: each a second of NEEDS_AUTH, enough for an overview card polled then to change."""

    def changes():
        seen = {}
        for record in demo_tenant.call("GET", "/auth/connections").json():
            timeline = demo_tenant.call("GET", f"/auth/connections/{record['id']}/timeline").json()
            seen[record["profile_name"]] = [
                (entry["type"], entry["status"], entry["timestamp"])
                for entry in timeline
                if entry["type"] != "health_check" or entry["status"] != entry.get("previous_status")
            ]
        return seen

    seeded = changes()
    demo_tenant.advance(600)
    assert changes() == seeded


def test_it_records_nothing_of_a_login_without_a_real_browser(tenant):
    """The simulated engine runs no browser for a login: no session, no replay, nothing drawn instead."""
    record = logged_in(tenant, record_session=True)
    entry = timeline(tenant, record["id"]).json()[0]
    assert entry["status"] == "SUCCESS" and entry["browser_session_id"]
    assert "replay_id" not in entry
    assert tenant.call("GET", "/browsers", params={"status": "all"}).json() == []
    sid = entry["browser_session_id"]
    assert tenant.call("GET", f"/browsers/{sid}/replays").status_code == 404


def test_it_records_no_session_of_a_login_without_record_session(tenant):
    record = logged_in(tenant)
    entry = timeline(tenant, record["id"]).json()[0]
    assert "replay_id" not in entry
    assert tenant.call("GET", "/browsers", params={"status": "all"}).json() == []
