"""Alerts against sandbox tenants: a login left at its MFA step, a real webhook receiver and SMTP server on
loopback (started by the test), and rounds run as the worker runs them (``rounds.run``)."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from console.alerts import delivery, rounds
from console.alerts.models import Channel, Delivery, Rule
from tests.sandbox_fixtures import free_port

_slots = itertools.count(1)


def answer(tenant, record, **values):
    response = tenant.call(
        "POST",
        f"/auth/connections/{record['id']}/submit",
        json={"interaction_id": record["interaction_id"], "field_values": values},
    )
    assert response.status_code == 200, response.text


def choose(tenant, record, choice_id):
    response = tenant.call(
        "POST",
        f"/auth/connections/{record['id']}/submit",
        json={"interaction_id": record["interaction_id"], "selected_choice_id": choice_id},
    )
    assert response.status_code == 200, response.text


def settled(tenant, cid):
    """The connection once its step's short delay has passed (the tenant clock moves 1 s, no sleep)."""
    tenant.advance(1)
    response = tenant.call("GET", f"/auth/connections/{cid}")
    assert response.status_code == 200, response.text
    return response.json()


def at_mfa_code(tenant, profile_name="support") -> dict:
    """A connection on mfa.example.com whose login waits for the SMS code (the human's part)."""
    response = tenant.call(
        "POST", "/auth/connections", json={"domain": "mfa.example.com", "profile_name": profile_name}
    )
    assert response.status_code == 201, response.text
    cid = response.json()["id"]
    assert tenant.call("POST", f"/auth/connections/{cid}/login", json={}).status_code == 200
    first = settled(tenant, cid)
    answer(tenant, first, email="ops@acme.example", password="pw-ok")
    pick = settled(tenant, cid)
    choose(tenant, pick, next(c["id"] for c in pick["choices"] if c["mfa_type"] == "sms"))
    code = settled(tenant, cid)
    assert code["flow_step"] == "AWAITING_INPUT" and code["fields"][0]["type"] == "code"
    return code


def finish_login(tenant, code: dict) -> None:
    answer(tenant, code, sms_code="123456")
    assert settled(tenant, code["id"])["status"] == "AUTHENTICATED"


@dataclass
class Queue:
    """What a round enqueued for the worker (the deliveries to send)."""

    deliveries: list = field(default_factory=list)

    def __call__(self, row: Delivery) -> None:
        self.deliveries.append(row.pk)


def run_round(org, queue: Queue | None = None):
    return rounds.run(org.pk, next(_slots), queue if queue is not None else Queue())


def send_all() -> int:
    return delivery.deliver_due()


def make_rule(org, kind, *, channels=(), **fields) -> Rule:
    rule = Rule.objects.create(org=org, kind=kind, name=fields.pop("name", kind), **fields)
    rule.channels.set(channels or [Channel.objects.get(org=org, kind=Channel.Kind.CONSOLE)])
    return rule


class Receiver:
    """A webhook receiver on loopback: records every POST (headers, body); answers ``status``; with
    ``hold`` set, keeps each request waiting until the event is set (a slow receiver)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.status = 200
        self.hold: threading.Event | None = None
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.arrived:
                    receiver.requests.append({"headers": dict(self.headers), "body": body, "path": self.path})
                    receiver.arrived.notify_all()
                if receiver.hold is not None:
                    receiver.hold.wait(30)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 30) -> list[dict]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.requests) >= count, timeout), self.requests
            return list(self.requests)

    def close(self):
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


class Mailbox:
    def __init__(self):
        self.messages: list = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        with self.arrived:
            self.messages.append(envelope)
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 30) -> list:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server (aiosmtpd) on loopback; the console's e-mail settings point at it."""
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    try:
        yield mailbox
    finally:
        controller.stop()
