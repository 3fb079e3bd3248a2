"""The worker as deployed: real ``manage.py worker`` processes on the test database, delivering to a real
receiver. Several never evaluate or send the same thing twice; one killed mid-send is replaced and the
notification is sent again, once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from console.alerts import kinds, webhooks
from console.alerts.models import Channel, Delivery, DeliveryAttempt, EvaluationRound
from tests.alerts.conftest import Queue, at_mfa_code, finish_login, make_rule, run_round

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a-webhook-secret-of-some-length"


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@:{db['PORT']}/{db['NAME']}?host={db['HOST']}"


@contextmanager
def worker(name: str, **settings: str):
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "WORKER_POLL_SECONDS": "0.1",
        "ALERTS_EVALUATION_SECONDS": "3600",
        **settings,
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--worker-id", name],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def until(condition, timeout: float = 60, what: str = "the condition"):
    """Waits for a state of the database (polled; the workers are other processes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def hook(org, url) -> Channel:
    channel = Channel(org=org, kind=Channel.Kind.WEBHOOK, name="hook", url=url)
    channel.set_secret(SECRET)
    channel.save()
    return channel


def test_two_workers_evaluate_each_round_once_and_deliver_once(org, tenant, receiver):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[hook(org, receiver.url)])
    code = at_mfa_code(tenant)
    fast = {"ALERTS_EVALUATION_SECONDS": "1"}
    with worker("w1", **fast), worker("w2", **fast):
        receiver.wait_for(1)
        # Several rounds later (the barrier: rounds the two workers finished), still one POST.
        seen = EvaluationRound.objects.filter(org=org).count()
        until(
            lambda: EvaluationRound.objects.filter(org=org, finished_at__isnull=False).count() >= seen + 4,
            what="4 more rounds",
        )
        assert len(receiver.requests) == 1
        finish_login(tenant, code)
        receiver.wait_for(2)
        done = EvaluationRound.objects.filter(org=org).count()
        until(
            lambda: EvaluationRound.objects.filter(org=org, finished_at__isnull=False).count() >= done + 4,
            what="4 more rounds",
        )
    events = [json.loads(r["body"])["event"] for r in receiver.requests]
    assert events == ["firing", "resolved"]
    slots = list(EvaluationRound.objects.filter(org=org).values_list("slot", flat=True))
    assert len(slots) == len(set(slots))
    assert set(EvaluationRound.objects.filter(org=org).values_list("worker", flat=True)) <= {"w1", "w2"}


def test_a_worker_killed_mid_delivery_is_replaced_and_the_alert_is_sent_once_more(org, tenant, receiver):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[hook(org, receiver.url)])
    at_mfa_code(tenant)
    receiver.hold = threading.Event()  # the first POST gets no answer while the worker is alive
    lease = {"ALERTS_DELIVERY_LEASE_SECONDS": "2", "ALERTS_SEND_TIMEOUT": "30"}
    run_round(org, Queue())  # the transition, its delivery and the worker's task, committed together
    with worker("doomed", **lease) as doomed:
        receiver.wait_for(1)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
    held, receiver.hold = receiver.hold, None
    held.set()
    row = Delivery.objects.get(channel__kind="webhook")
    assert row.state == Delivery.State.SENDING and row.worker == "doomed"
    with worker("replacement", **lease):
        receiver.wait_for(2)
        until(lambda: Delivery.objects.get(pk=row.pk).state == Delivery.State.SENT, what="the delivery sent")
    first, second = receiver.requests[0], receiver.requests[1]
    assert (
        first["body"] != b""
        and first["headers"][webhooks.DELIVERY_HEADER] == second["headers"][webhooks.DELIVERY_HEADER]
    )
    assert webhooks.verify(second["body"], SECRET, second["headers"][webhooks.SIGNATURE_HEADER])
    assert len(receiver.requests) == 2
    attempts = list(
        DeliveryAttempt.objects.filter(delivery=row).order_by("number").values_list("outcome", "worker")
    )
    assert attempts == [("interrupted", "doomed"), ("ok", "replacement")]
