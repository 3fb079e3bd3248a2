"""The demo users and the console's client registration, made at every start (idempotent)."""

import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from oauth2_provider.models import get_application_model

CLIENT_ID = "operator-console"
# username, e-mail, groups: the demo organization maps console-admins to admin, console-operators to
# operator; anyone else of the domain joins as viewer.
DEMO_USERS = [
    ("ada", "ada@sso.demo.test", ["console-admins"]),
    ("otto", "otto@sso.demo.test", ["console-operators"]),
    ("vera", "vera@sso.demo.test", []),
]


def seed(password: str, client_secret: str, redirect_uris: list[str]) -> None:
    User = get_user_model()
    for username, email, groups in DEMO_USERS:
        user, created = User.objects.get_or_create(username=username, defaults={"email": email})
        if created:
            user.set_password(password)
            user.save()
            user.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
    Application = get_application_model()
    app = Application.objects.filter(client_id=CLIENT_ID).first() or Application(client_id=CLIENT_ID)
    app.name = "Operator Console"
    app.client_type = Application.CLIENT_CONFIDENTIAL
    app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    app.redirect_uris = " ".join(redirect_uris)
    app.skip_authorization = True
    app.algorithm = Application.RS256_ALGORITHM
    app.client_secret = client_secret  # hashed on save
    app.save()


def from_environment() -> None:
    seed(
        password=os.environ.get("DEMO_PASSWORD", "demo"),
        client_secret=os.environ["DEMO_IDP_CLIENT_SECRET"],
        redirect_uris=os.environ.get("DEMO_IDP_REDIRECT_URIS", "http://127.0.0.1:8000/sso/callback/").split(),
    )
