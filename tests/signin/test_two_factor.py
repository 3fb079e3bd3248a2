"""Two-factor authentication with an authenticator app (TOTP, codes computed by pyotp as the app would):
enrolment asks for the password again, the next sign-in asks for a code, recovery codes work once, and
wrong codes count towards the login lockout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from urllib.parse import quote

import pyotp
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from console.accounts.models import AuditLog
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(client: Client, username: str, password: str = PASSWORD):
    return client.post("/login/", {"username": username, "password": password})


def enrol_totp(client: Client) -> str:
    """Through the pages: re-enter the password, read the secret shown, confirm with a code. The secret."""
    response = client.get("/account/two-factor/totp/activate/")
    assert response.status_code == 302 and response["Location"].startswith("/account/reauthenticate/")
    response = client.post(response["Location"], {"password": PASSWORD})
    assert response.status_code == 302
    page = client.get("/account/two-factor/totp/activate/")
    assert page.status_code == 200
    secret = re.search(rb'id="authenticator_secret"[^>]*value="([A-Z2-7]+)"', page.content).group(1).decode()
    response = client.post("/account/two-factor/totp/activate/", {"code": pyotp.TOTP(secret).now()})
    assert response.status_code == 302, response.content[:500]
    return secret


def test_it_asks_for_a_code_after_the_password_once_an_app_is_enrolled(admin):
    client = Client()
    assert sign_in(client, "alice").status_code == 302
    secret = enrol_totp(client)
    assert AuditLog.objects.filter(action="signin.mfa.add", detail="totp", actor=admin).exists()

    later = Client()
    response = sign_in(later, "alice")
    assert response["Location"] == "/account/two-factor/authenticate/"
    assert "_auth_user_id" not in later.session  # the password alone signs nobody in
    wrong = later.post("/account/two-factor/authenticate/", {"code": "000000"})
    assert wrong.status_code == 200 and "_auth_user_id" not in later.session
    right = later.post("/account/two-factor/authenticate/", {"code": pyotp.TOTP(secret).now()})
    assert right.status_code == 302
    assert later.session["_auth_user_id"] == str(admin.pk)
    assert later.get("/o/acme/members/").status_code == 200
    assert AuditLog.objects.filter(action="signin", detail="password and totp", actor=admin).exists()
    assert AuditLog.objects.filter(action="signin.mfa.failed", actor=admin).exists()


def test_it_locks_the_second_factor_out_after_repeated_wrong_codes(admin):
    client = Client()
    sign_in(client, "alice")
    secret = enrol_totp(client)

    attacker = Client()
    sign_in(attacker, "alice")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        attacker.post("/account/two-factor/authenticate/", {"code": "123456"})
    # Locked: even the right code is refused, and the password form says so too.
    response = attacker.post("/account/two-factor/authenticate/", {"code": pyotp.TOTP(secret).now()})
    assert "_auth_user_id" not in attacker.session
    assert response.status_code in (200, 429)
    assert b"Too many failed attempts" in response.content
    assert sign_in(Client(), "alice").status_code == 429


def test_it_signs_in_once_with_each_recovery_code(admin):
    client = Client()
    sign_in(client, "alice")
    enrol_totp(client)
    page = client.get("/account/two-factor/recovery-codes/")
    if page.status_code == 302:  # asks for the password again past the re-authentication window
        client.post(page["Location"], {"password": PASSWORD})
        page = client.get("/account/two-factor/recovery-codes/")
    codes = re.findall(rb"\b[a-z0-9]{8}\b", page.content)
    code = next(c.decode() for c in codes if not c.isalpha())

    first = Client()
    sign_in(first, "alice")
    first.post("/account/two-factor/authenticate/", {"code": code})
    assert first.session["_auth_user_id"] == str(admin.pk)
    again = Client()
    sign_in(again, "alice")
    again.post("/account/two-factor/authenticate/", {"code": code})
    assert "_auth_user_id" not in again.session


def test_it_asks_a_member_of_an_org_requiring_two_factor_to_enrol_at_sign_in(admin, org):
    from console.signin.models import OrgSignIn

    OrgSignIn.objects.create(org=org, mfa_required=True)
    client = Client()
    response = sign_in(client, "alice")
    assert response["Location"] == "/account/two-factor/"
    page = client.get("/account/two-factor/")
    assert b"Acme requires two-factor authentication" in page.content
    assert client.get("/o/acme/").status_code == 302
    enrol_totp(client)
    assert client.get("/o/acme/members/").status_code == 200


def _database_url() -> str:
    """This test's database as DATABASE_URL, for another console process."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    # The host may be a socket directory (tests/database.py): given as libpq's own host and port options.
    user, password = quote(db["USER"] or "", safe=""), quote(db["PASSWORD"] or "", safe="")
    host, port = quote(db["HOST"] or "localhost", safe=""), db["PORT"] or 5432
    return f"postgres://{user}:{password}@/{db['NAME']}?host={host}&port={port}"


# Another console process judges a code: "in time" when the code is right for the clock (used or not), then
# "accepted" or "refused" as a sign-in would (allauth's check, which also marks and remembers used codes).
ANOTHER_PROCESS = """
import sys
import django
django.setup()
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP, validate_totp_code
from allauth.mfa.utils import decrypt
totp = TOTP(Authenticator.objects.get(user__username=sys.argv[1], type=Authenticator.Type.TOTP))
in_time = validate_totp_code(decrypt(totp.instance.data["secret"]), sys.argv[2])
print("in time" if in_time else "too late", "accepted" if totp.validate_code(sys.argv[2]) else "refused")
"""


def _judged_elsewhere(username: str, code: str) -> str:
    env = {**os.environ, "DATABASE_URL": _database_url(), "DJANGO_SETTINGS_MODULE": "console.settings"}
    answer = subprocess.run(
        [sys.executable, "-c", ANOTHER_PROCESS, username, code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=settings.BASE_DIR,
    )
    assert answer.returncode == 0, answer.stderr[-2000:]
    return answer.stdout.strip().splitlines()[-1]


def test_it_refuses_a_used_code_in_another_console_process_too(admin):
    """A code works once for the whole console, not once per replica: what allauth remembers of used codes
    is in the database's cache table, not in one process's memory."""
    client = Client()
    assert sign_in(client, "alice").status_code == 302
    secret = enrol_totp(client)
    for _attempt in range(3):  # again only if the code's window ended before the other process judged it
        later = Client()
        sign_in(later, "alice")
        code = pyotp.TOTP(secret).now()
        assert later.post("/account/two-factor/authenticate/", {"code": code}).status_code == 302
        verdict = _judged_elsewhere("alice", code)
        if verdict.startswith("in time"):
            assert verdict == "in time refused"
            return
    pytest.fail("no code could be judged by another process within its window")
