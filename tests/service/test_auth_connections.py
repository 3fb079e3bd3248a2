"""console.service.auth_connections against the sandbox (notes §9)."""

import pytest

from console.service import Conflict, Forbidden, Invalid, NotFound
from console.service import auth_connections as auth


async def settled(tenant, service, connection_id):
    """The connection once the current step's short delay has passed (the tenant clock moves 1 s)."""
    tenant.advance(1)
    return await auth.get_connection(service, connection_id)


async def test_it_creates_reads_updates_and_deletes(service):
    created = await auth.create_connection(
        service, domain="plain.example.com", profile_name="ops", health_check_interval=600, login_url=None
    )
    assert created.id.startswith("mauth_")
    assert (created.domain, created.profile_name, created.status) == (
        "plain.example.com",
        "ops",
        "NEEDS_AUTH",
    )
    assert created.health_check_interval == 600
    assert created.flow_status is None and not created.flow_running
    assert created.can_reauth_reason == "no_prior_successful_login"

    updated = await auth.update_connection(service, created.id, auto_reauth=False, login_url="")
    assert updated.auto_reauth is False
    assert updated.login_url is None
    assert updated.health_check_interval == 600

    await auth.delete_connection(service, created.id)
    with pytest.raises(NotFound):
        await auth.get_connection(service, created.id)


async def test_it_refuses_unknown_settable_fields_before_sending(service):
    with pytest.raises(TypeError):
        await auth.update_connection(service, "mauth_x", domain="other.example.com")


async def test_it_maps_the_duplicate_and_finds_what_it_conflicts_with(service):
    first = await auth.create_connection(service, domain="plain.example.com", profile_name="dup")
    with pytest.raises(Conflict) as caught:
        await auth.create_connection(service, domain="plain.example.com", profile_name="dup")
    assert caught.value.code == "auth_connection_exists"
    found = await auth.find_connection(service, domain="plain.example.com", profile_name="DUP")
    assert found is not None and found.id == first.id


async def test_it_reports_the_interval_floor_as_a_field_error(service):
    with pytest.raises(Invalid) as caught:
        await auth.create_connection(
            service, domain="plain.example.com", profile_name="x", health_check_interval=10
        )
    assert "300" in caught.value.field_errors["health_check_interval"][0]


async def test_it_maps_the_plan_cap_to_forbidden(tenant, service):
    for i in range(50):
        tenant.call("POST", "/auth/connections", json={"domain": "a.example.com", "profile_name": f"p{i}"})
    with pytest.raises(Forbidden) as caught:
        await auth.create_connection(service, domain="a.example.com", profile_name="one-more")
    assert caught.value.code == "insufficient_plan"


async def test_it_tells_whether_a_profile_exists(service):
    assert not await auth.profile_exists(service, "fresh")
    await auth.create_connection(service, domain="plain.example.com", profile_name="fresh")
    assert await auth.profile_exists(service, "fresh")


async def test_it_lists_one_page_with_filters(service):
    for i in range(3):
        await auth.create_connection(service, domain="crm.example.com", profile_name=f"s{i}")
    page = await auth.list_connections(service, limit=2)
    assert (len(page.items), page.has_more, page.next_offset) == (2, True, 2)
    filtered = await auth.list_connections(service, profile_name="s1")
    assert [c.profile_name for c in filtered] == ["s1"]


async def test_it_drives_an_mfa_login_with_canonical_inputs_and_options(tenant, service):
    created = await auth.create_connection(service, domain="mfa.example.com", profile_name="mfa")
    started = await auth.start_login(service, created.id)
    assert started.flow_type == "LOGIN"
    assert started.flow_expires_at.tzinfo is not None

    form = await settled(tenant, service, created.id)
    assert form.flow_step == "AWAITING_INPUT" and form.canonical
    assert [(i.key, i.type, i.rejected) for i in form.inputs] == [
        ("email", "identifier", False),
        ("password", "password", False),
    ]
    assert await auth.submit_fields(
        service,
        created.id,
        interaction_id=form.interaction_id,
        values={"email": "a@b.example", "password": "pw"},
    )
    pick = await settled(tenant, service, created.id)
    sms = next(o for o in pick.options if o.mfa_type == "sms")
    assert (sms.action, sms.destination) == ("selected_choice_id", "+1 ••• ••• ••21")
    await auth.submit_choice(service, created.id, interaction_id=pick.interaction_id, choice_id=sms.value)
    code = await settled(tenant, service, created.id)
    await auth.submit_fields(
        service, created.id, interaction_id=code.interaction_id, values={"sms_code": "000000"}
    )
    rejected = await settled(tenant, service, created.id)
    assert rejected.inputs[0].rejected
    assert rejected.website_error
    assert rejected.pause_key != code.pause_key
    await auth.submit_fields(
        service, created.id, interaction_id=rejected.interaction_id, values={"sms_code": "123456"}
    )
    done = await settled(tenant, service, created.id)
    assert done.flow_ended and done.authenticated
    assert done.post_login_url == "https://mfa.example.com/home"

    timeline = await auth.list_timeline(service, created.id, type="login")
    assert [(e.type, e.status) for e in timeline] == [("login", "SUCCESS")]


async def test_it_reads_legacy_lists_as_inputs_and_options_with_their_actions(tenant, service):
    created = await auth.create_connection(service, domain="legacy.example.com", profile_name="old")
    await auth.start_login(service, created.id)
    form = await settled(tenant, service, created.id)
    assert not form.canonical
    assert [i.type for i in form.inputs] == ["identifier", "password"]
    await auth.submit_legacy(service, created.id, "fields", {"email": "a@b.example", "password": "pw"})
    pick = await settled(tenant, service, created.id)
    assert [(o.action, o.value) for o in pick.options] == [
        ("mfa_option_id", "sms"),
        ("mfa_option_id", "email"),
    ]
    await auth.submit_legacy(service, created.id, "mfa_option_id", "email")
    assert (await settled(tenant, service, created.id)).inputs[0].mfa_type == "email"


async def test_it_maps_a_stale_interaction_to_conflict(tenant, service):
    created = await auth.create_connection(service, domain="plain.example.com", profile_name="stale")
    await auth.start_login(service, created.id)
    await settled(tenant, service, created.id)
    with pytest.raises(Conflict) as caught:
        await auth.submit_fields(
            service, created.id, interaction_id="int_old", values={"email": "a", "password": "b"}
        )
    assert caught.value.code == "interaction_id_mismatch"


async def test_it_follows_the_events_stream_to_the_end_of_the_flow(tenant, service):
    created = await auth.create_connection(service, domain="bot.example.com", profile_name="bot")
    await auth.start_login(service, created.id)
    states = [auth.state_of(e) async for e in auth.events(service, created.id)]
    states = [s for s in states if s is not None]
    assert states[0].flow_step == "DISCOVERING"
    assert (states[-1].flow_status, states[-1].error_code) == ("FAILED", "bot_detected")
