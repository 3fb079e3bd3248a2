"""The alerts pages: the list with its filters and history, an alert (acknowledge, silence), the bell, and
the rules and channels admins manage (with "Send test" and each channel's delivery log).

Everything here is the console's own database: no service call, so no ``audited``: every change writes its
row with ``audit.record``. Roles: viewers see, operators acknowledge and silence, admins manage rules and
channels (docs/architecture.md, "Roles").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from django.shortcuts import aget_object_or_404, get_object_or_404
from django.utils import timezone
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console.accounts.audit import record
from console.alerts import builtins, delivery, kinds, state, webhooks
from console.alerts.forms import AckForm, ChannelForm, FilterForm, RuleForm, SilenceForm
from console.alerts.models import (
    Alert,
    Channel,
    Delivery,
    DeliveryAttempt,
    EvaluationRound,
    Notification,
    Rule,
    Silence,
)
from console.service import errors as service_errors
from console.service import targets
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.pages import org_reverse, posted
from console.web.paging import pager, paging
from console.web.render import done, render

CHANGED = "alerts-changed"
HISTORY_ROWS = 50
LOG_ROWS = 50


@dataclass
class Rows:
    """A page of the console's own rows, shaped like the service's pages for ``pager``."""

    items: list
    has_more: bool
    next_offset: int | None


def _page(queryset, page_params) -> Rows:
    rows = list(queryset[page_params.offset : page_params.offset + page_params.limit + 1])
    more = len(rows) > page_params.limit
    return Rows(rows[: page_params.limit], more, page_params.offset + page_params.limit if more else None)


def _silenced(alerts: list[Alert], silences: list[Silence], now) -> dict[int, Silence]:
    return {a.pk: s for a in alerts if (s := state.silence_for(a, silences, now)) is not None}


def _decorate(org, alerts: list[Alert], silences: list[Silence], now) -> list[dict]:
    quiet = _silenced(alerts, silences, now)
    return [
        {
            "alert": a,
            "subject_url": state.subject_path(org.slug, a.subject_kind, a.subject_id),
            "silence": quiet.get(a.pk),
        }
        for a in alerts
    ]


def _list_rows(org, filters: dict, page_params) -> dict:
    alerts = Alert.objects.filter(org=org).select_related("rule", "acknowledged_by")
    chosen = filters["state"]
    if chosen == "active":
        alerts = alerts.filter(state__in=Alert.ACTIVE)
    elif chosen != "all":
        alerts = alerts.filter(state=chosen)
    if filters["severity"]:
        alerts = alerts.filter(rule__severity=filters["severity"])
    if filters["rule"]:
        alerts = alerts.filter(rule_id=filters["rule"])
    if filters["q"]:
        q = filters["q"]
        alerts = alerts.filter(Q(subject_label__icontains=q) | Q(summary__icontains=q) | Q(subject_id=q))
    page = _page(alerts.order_by("-started_at", "-id"), page_params)
    now = timezone.now()
    rows = _decorate(org, page.items, list(state.active_silences(org.pk, now)), now)
    return {"rows": rows, "page": page}


def _frame(org) -> dict:
    now = timezone.now()
    last = EvaluationRound.objects.filter(org=org).exclude(state=EvaluationRound.State.RUNNING).first()
    silences = list(Silence.objects.filter(org=org, ends_at__gt=now).select_related("rule", "created_by"))
    rules = list(Rule.objects.filter(org=org))
    return {
        "last_round": last,
        "round_late": last is None
        or (now - (last.finished_at or last.started_at)).total_seconds()
        > 3 * settings.ALERTS_EVALUATION_SECONDS,
        "silences": silences,
        "rules": rules,
        "counts": {
            "firing": Alert.objects.filter(org=org, state=Alert.State.FIRING).count(),
            "pending": Alert.objects.filter(org=org, state=Alert.State.PENDING).count(),
        },
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def alert_list(request):
    page_params = paging(request)
    frame = await sync_to_async(_frame)(request.org)
    form = FilterForm(request.GET or None, rules=frame["rules"])
    filters = form.values() if request.GET else {"state": "active", "severity": "", "rule": None, "q": ""}

    async def load() -> dict:
        found = await sync_to_async(_list_rows)(request.org, filters, page_params)
        return {**found, "pager": pager(request, page_params, found["page"])}

    context = {
        **frame,
        "filter_form": form,
        "filters": filters,
        "evaluation_seconds": int(settings.ALERTS_EVALUATION_SECONDS),
        "silence_form": SilenceForm(rules=frame["rules"]),
    }
    return await deferred.list_page(request, "alerts/list.html", "alerts-table", context, load)


def _bell(org) -> dict:
    now = timezone.now()
    firing = list(
        Alert.objects.filter(org=org, state=Alert.State.FIRING, acknowledged_at__isnull=True)
        .filter(rule__channels__kind=Channel.Kind.CONSOLE)
        .distinct()
        .only("pk", "rule_id", "subject_key")
    )
    quiet = _silenced(firing, state.active_silences(org.pk, now), now)
    loud = len(firing) - len(quiet)
    worst = (
        Alert.objects.filter(
            pk__in=[a.pk for a in firing if a.pk not in quiet], rule__severity="critical"
        ).exists()
        if loud
        else False
    )
    return {"bell_count": loud, "bell_quiet": len(quiet), "bell_critical": worst}


@require_http_methods(["GET"])
@org_view("viewer")
async def bell(request):
    context = await sync_to_async(_bell)(request.org)
    return render(request, "alerts/bell.html", context)


def _detail(org, alert_id: int) -> dict:
    alert = get_object_or_404(Alert.objects.select_related("rule", "acknowledged_by"), org=org, pk=alert_id)
    now = timezone.now()
    notes = list(
        Notification.objects.filter(alert=alert)
        .select_related("silenced_by")
        .prefetch_related("deliveries__channel")
        .order_by("-seq")[:HISTORY_ROWS]
    )
    rules = list(Rule.objects.filter(org=org))
    silence = state.silence_for(alert, state.active_silences(org.pk, now), now)
    return {
        "alert": alert,
        "subject_url": state.subject_path(org.slug, alert.subject_kind, alert.subject_id),
        "notifications": notes,
        "silence": silence,
        "ack_form": AckForm(),
        "silence_form": SilenceForm(
            rules=rules, initial={"scope": "subject", "rule": alert.rule_id, "subject_key": alert.subject_key}
        ),
        "kind": kinds.KINDS[alert.rule.kind],
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def alert_detail(request, alert_id: int):
    context = await sync_to_async(_detail)(request.org, alert_id)
    return render(request, "alerts/detail.html", context)


def _acknowledge(org, alert_id: int, user, note: str) -> Alert | None:
    with transaction.atomic():
        alert = Alert.objects.select_for_update().select_related("rule").filter(org=org, pk=alert_id).first()
        if alert is None:
            raise Http404("No such alert")
        if not alert.active:
            return None
        alert.acknowledged_at, alert.acknowledged_by, alert.ack_note = timezone.now(), user, note
        alert.save(update_fields=["acknowledged_at", "acknowledged_by", "ack_note", "updated_at"])
        return alert


@require_http_methods(["POST"])
@org_view("operator")
async def acknowledge(request, alert_id: int):
    form = AckForm(request.POST)
    if not form.is_valid():
        context = await sync_to_async(_detail)(request.org, alert_id)
        context["ack_form"] = form
        return render(request, "alerts/detail.html", context, partial="alert-ack")
    alert = await sync_to_async(_acknowledge)(request.org, alert_id, request.user, form.cleaned_data["note"])
    if alert is None:
        messages.info(request, "This alert has resolved: there is nothing to acknowledge.")
    else:
        await record(
            request,
            "alert.acknowledge",
            target_id=str(alert_id),
            detail=f"{alert.rule.name}: {alert.subject_label}",
        )
        messages.success(
            request, "Acknowledged: no more reminders while it fires; the resolve is still sent."
        )
    response = done(request, org_reverse(request, "alerts:detail", alert_id=alert_id))
    return trigger_client_event(response, CHANGED)


def _make_silence(org, user, form: SilenceForm) -> Silence:
    data, now = form.cleaned_data, timezone.now()
    scope = data["scope"]
    rule = form.rules.get(data["rule"]) if scope in ("rule", "subject") else None
    label = ""
    if scope == "subject":
        alert = Alert.objects.filter(org=org, rule=rule, subject_key=data["subject_key"]).first()
        if alert is None:
            raise Http404("No such subject")
        label = alert.subject_label
    return Silence.objects.create(
        org=org,
        rule=rule,
        subject_key=data["subject_key"] if scope == "subject" else "",
        subject_label=label,
        starts_at=now,
        ends_at=now + form.window(),
        note=data["note"],
        created_by=user,
    )


@require_http_methods(["POST"])
@org_view("operator")
async def silence_create(request):
    rules = await sync_to_async(list)(Rule.objects.filter(org=request.org))
    form = SilenceForm(request.POST, rules=rules)
    back = request.POST.get("alert")
    back_url = (
        org_reverse(request, "alerts:detail", alert_id=int(back))
        if back and back.isdigit()
        else org_reverse(request, "alerts:list")
    )
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(
                    request,
                    f"Not silenced: {error}" if field == "__all__" else f"Not silenced ({field}): {error}",
                )
        return done(request, back_url)
    silence = await sync_to_async(_make_silence)(request.org, request.user, form)
    await record(
        request,
        "alert.silence",
        target_id=str(silence.pk),
        detail=f"{silence.scope} for {form.cleaned_data['minutes']} min: {silence.note}",
    )
    messages.success(
        request, f"Silenced {silence.scope} until {timezone.localtime(silence.ends_at):%H:%M} UTC."
    )
    return trigger_client_event(done(request, back_url), CHANGED)


@require_http_methods(["POST"])
@org_view("operator")
async def silence_end(request, silence_id: int):
    now = timezone.now()
    silence = await aget_object_or_404(Silence.objects.select_related("rule"), org=request.org, pk=silence_id)
    if silence.ends_at > now:
        silence.ends_at = now
        await silence.asave(update_fields=["ends_at"])
        await record(request, "alert.silence.end", target_id=str(silence_id), detail=silence.scope)
        messages.success(request, f"The silence of {silence.scope} has ended.")
    return trigger_client_event(done(request, org_reverse(request, "alerts:list")), CHANGED)


# --- rules (admins) ----------------------------------------------------------------------------------


def _rules(org) -> list[Rule]:
    builtins.ensure(org)
    return list(Rule.objects.filter(org=org).prefetch_related("channels"))


@require_http_methods(["GET"])
@org_view("viewer")
async def rule_list(request):
    rules = await sync_to_async(_rules)(request.org)
    return render(request, "alerts/rules.html", {"rules": rules, "kinds": kinds.KINDS})


def _rule_form_context(form, rule=None) -> dict:
    return {"form": form, "rule": rule, "kinds": list(kinds.KINDS.values())}


def _save_rule(form: RuleForm, org) -> tuple[Rule, bool]:
    with transaction.atomic():
        rule = form.save(commit=False)
        rule.org = org
        turned_off = bool(rule.pk) and not rule.enabled
        rule.save()
        form.save_m2m()
        if turned_off:
            state.retire(rule, timezone.now())
    return rule, turned_off


def _rule_form(org, rule: Rule | None, data) -> tuple[RuleForm, Rule | None, str]:
    """The rule form, validated and saved when ``data`` came; (form, saved rule or None, what changed).

    On the database's thread: the form's channel choices and a rule's current channels are queries (and the
    page is rendered there too, for the same reason)."""
    if data is None:
        initial = (
            {} if rule else {"channels": list(Channel.objects.filter(org=org, kind=Channel.Kind.CONSOLE))}
        )
        return RuleForm(instance=rule, org=org, initial=initial), None, ""
    form = RuleForm(data, instance=rule, org=org)
    if not form.is_valid():
        return form, None, ""
    changed = ", ".join(form.changed_data) or "nothing"
    saved, turned_off = _save_rule(form, org)
    return form, saved, changed + (" (turned off: its alerts ended)" if turned_off else "")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def rule_create(request):
    form, rule, _ = await sync_to_async(_rule_form)(request.org, None, posted(request))
    if rule is not None:
        await record(request, "alert.rule.create", target_id=str(rule.pk), detail=f"{rule.kind}: {rule.name}")
        messages.success(request, f"Rule “{rule.name}” created; the next evaluation uses it.")
        return done(request, org_reverse(request, "alerts:rules"))
    return await sync_to_async(render)(request, "alerts/rule_form.html", _rule_form_context(form))


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def rule_edit(request, rule_id: int):
    rule = await aget_object_or_404(Rule, org=request.org, pk=rule_id)
    form, saved, changed = await sync_to_async(_rule_form)(request.org, rule, posted(request))
    if saved is not None:
        await record(request, "alert.rule.update", target_id=str(saved.pk), detail=f"{saved.name}: {changed}")
        messages.success(request, f"Rule “{saved.name}” saved.")
        return done(request, org_reverse(request, "alerts:rules"))
    return await sync_to_async(render)(request, "alerts/rule_form.html", _rule_form_context(form, rule))


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def rule_delete(request, rule_id: int):
    rule = await aget_object_or_404(Rule, org=request.org, pk=rule_id)
    if rule.builtin:
        messages.error(request, "The service rule belongs to every organization: it cannot be deleted.")
        return done(request, org_reverse(request, "alerts:rules"))
    if request.method == "POST":
        name = rule.name
        await rule.adelete()
        await record(request, "alert.rule.delete", target_id=str(rule_id), detail=name)
        messages.success(request, f"Rule “{name}” and its alerts deleted.")
        return done(request, org_reverse(request, "alerts:rules"))
    count = await Alert.objects.filter(rule=rule).acount()
    return render(request, "alerts/rule_delete.html", {"rule": rule, "alert_count": count})


# --- channels (admins) -------------------------------------------------------------------------------


def _channels(org) -> list[Channel]:
    builtins.ensure(org)
    return list(Channel.objects.filter(org=org).prefetch_related("rules"))


@require_http_methods(["GET"])
@org_view("viewer")
async def channel_list(request):
    channels = await sync_to_async(_channels)(request.org)
    return render(request, "alerts/channels.html", {"channels": channels})


def _save_channel(form: ChannelForm, org) -> Channel:
    channel = form.save(commit=False)
    channel.org = org
    if form.cleaned_data.get("secret"):
        channel.set_secret(form.cleaned_data["secret"])
    channel.save()
    return channel


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("secret")
@org_view("admin")
async def channel_create(request):
    wanted = request.POST.get("kind") or request.GET.get("kind")
    kind = Channel.Kind.EMAIL if wanted == Channel.Kind.EMAIL else Channel.Kind.WEBHOOK
    form = ChannelForm(kind=kind)
    if request.method == "POST":
        form = ChannelForm(request.POST, kind=kind)
        if await sync_to_async(form.is_valid)():
            channel = await sync_to_async(_save_channel)(form, request.org)
            await record(
                request,
                "alert.channel.create",
                target_id=str(channel.pk),
                detail=f"{channel.kind}: {channel.name}",
            )
            messages.success(request, f"Channel “{channel.name}” created. Send a test to check it.")
            return done(request, org_reverse(request, "alerts:channel", channel_id=channel.pk))
    return render(request, "alerts/channel_form.html", {"form": form, "channel": None, "kind": kind})


def _channel_context(org, channel_id: int) -> dict:
    channel = get_object_or_404(Channel, org=org, pk=channel_id)
    attempts = list(
        DeliveryAttempt.objects.filter(delivery__channel=channel)
        .select_related("delivery__notification")
        .order_by("-started_at", "-number")[:LOG_ROWS]
    )
    return {"channel": channel, "attempts": attempts, "rules": list(channel.rules.all())}


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("secret")
@org_view("viewer")
async def channel_detail(request, channel_id: int):
    context = await sync_to_async(_channel_context)(request.org, channel_id)
    channel = context["channel"]
    form = ChannelForm(instance=channel) if channel.kind != Channel.Kind.CONSOLE else None
    if request.method == "POST":
        require_role(request, "admin")
        if form is None:
            raise Http404("The console channel has nothing to edit")
        form = ChannelForm(request.POST, instance=channel)
        if await sync_to_async(form.is_valid)():
            changed = ", ".join(f for f in form.changed_data if f != "secret")
            if form.cleaned_data.get("secret"):
                changed = ", ".join(p for p in (changed, "secret") if p)
            channel = await sync_to_async(_save_channel)(form, request.org)
            await record(
                request,
                "alert.channel.update",
                target_id=str(channel.pk),
                detail=f"{channel.name}: {changed or 'nothing'}",
            )
            messages.success(request, f"Channel “{channel.name}” saved.")
            return done(request, org_reverse(request, "alerts:channel", channel_id=channel.pk))
    context["form"] = form
    return render(request, "alerts/channel.html", context, partial="channel-log")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def channel_delete(request, channel_id: int):
    channel = await aget_object_or_404(Channel, org=request.org, pk=channel_id)
    if channel.kind == Channel.Kind.CONSOLE:
        messages.error(request, "The console channel cannot be deleted: turn it off in a rule instead.")
        return done(request, org_reverse(request, "alerts:channels"))
    if request.method == "POST":
        name = channel.name
        await channel.adelete()
        await record(request, "alert.channel.delete", target_id=str(channel_id), detail=name)
        messages.success(request, f"Channel “{name}” deleted.")
        return done(request, org_reverse(request, "alerts:channels"))
    rules = await sync_to_async(list)(channel.rules.all())
    return render(request, "alerts/channel_delete.html", {"channel": channel, "rules": rules})


def _test_delivery(org, channel_id: int) -> tuple[Delivery, DeliveryAttempt]:
    channel = get_object_or_404(Channel, org=org, pk=channel_id)
    now = timezone.now()
    with transaction.atomic():
        note = Notification.objects.create(
            org=org,
            event=Notification.Event.TEST,
            payload=webhooks.test_payload(org, channel),
            created_at=now,
        )
        row = Delivery.objects.create(
            notification=note,
            channel=channel,
            state=Delivery.State.SENDING,
            attempts=1,
            worker=delivery.worker_id(),
            # Held by this request while it sends: no worker's sweep takes it.
            lease_until=now
            + timedelta(seconds=settings.ALERTS_SEND_TIMEOUT + settings.ALERTS_DELIVERY_LEASE_SECONDS),
        )
        attempt = DeliveryAttempt.objects.create(delivery=row, number=1, worker=row.worker, started_at=now)
    return row, attempt


def _record_test(row: Delivery, attempt: DeliveryAttempt, *, outcome: str, status, error: str, latency: int):
    now, ok = timezone.now(), outcome == DeliveryAttempt.Outcome.OK
    with transaction.atomic():
        DeliveryAttempt.objects.filter(pk=attempt.pk).update(
            outcome=outcome, status_code=status, latency_ms=latency, error=error[:500], finished_at=now
        )
        # A test is never retried: sent, or given up.
        Delivery.objects.filter(pk=row.pk).update(
            state=Delivery.State.SENT if ok else Delivery.State.FAILED,
            sent_at=now if ok else None,
            lease_until=None,
            last_error=error[:500],
        )


@require_http_methods(["POST"])
@org_view("admin")
async def channel_test(request, channel_id: int):
    """Send a test now, from this request (not the worker: the admin waits for the answer); one attempt,
    logged like any delivery, never retried."""
    row, attempt = await sync_to_async(_test_delivery)(request.org, channel_id)
    if row.channel.kind == Channel.Kind.CONSOLE:
        raise Http404("The console channel sends nothing")
    started = time.monotonic()
    status, error, outcome = None, "", DeliveryAttempt.Outcome.OK
    try:
        status = await sync_to_async(delivery.send, thread_sensitive=False)(row)
    except delivery.Refused as exc:
        status, error, outcome = exc.status, str(exc), DeliveryAttempt.Outcome.REFUSED
    except (targets.ForbiddenTarget, service_errors.ServiceError) as exc:
        error, outcome = exc.message, DeliveryAttempt.Outcome.ERROR
    except Exception as exc:  # SMTP and socket errors: said to the admin, logged on the attempt
        error, outcome = f"{type(exc).__name__}: {exc}", DeliveryAttempt.Outcome.ERROR
    latency = int((time.monotonic() - started) * 1000)
    await sync_to_async(_record_test)(
        row, attempt, outcome=outcome, status=status, error=error, latency=latency
    )
    if outcome == DeliveryAttempt.Outcome.OK:
        messages.success(request, f"Test sent in {latency} ms" + (f" (HTTP {status})." if status else "."))
    else:
        messages.error(request, f"The test was not delivered: {error[:300]}")
    await record(
        request,
        "alert.channel.test",
        target_id=str(channel_id),
        outcome="ok" if outcome == DeliveryAttempt.Outcome.OK else "error",
        detail=(f"HTTP {status} " if status else "") + (error[:200] or f"{latency} ms"),
    )
    return done(request, org_reverse(request, "alerts:channel", channel_id=channel_id))
