from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console.accounts.models import Organization, Role
from console.signin.models import OrgSignIn, SsoDomain

DOMAIN = "sso.demo.test"


class Command(BaseCommand):
    help = (
        "Point the demo organization's single sign-on at the local demo identity provider (development only)."
    )

    @transaction.atomic
    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("the demo identity provider is for development only (DEBUG=false)")
        if not settings.DEMO_IDP_CLIENT_SECRET:
            raise CommandError(
                "DEMO_IDP_CLIENT_SECRET is not set (in development `make run` generates it into .env)"
            )
        org = Organization.objects.filter(slug="demo").first()
        if org is None:
            raise CommandError("run `manage.py demo` first")
        signin = OrgSignIn.objects.filter(org=org).first() or OrgSignIn(org=org)
        signin.sso_enabled = True
        signin.issuer_url = f"http://127.0.0.1:{settings.DEMO_IDP_PORT}/o"
        signin.client_id = "operator-console"
        signin.set_client_secret(settings.DEMO_IDP_CLIENT_SECRET)
        signin.default_role = Role.VIEWER
        signin.role_claim = "groups"
        signin.role_mapping = [["console-admins", Role.ADMIN], ["console-operators", Role.OPERATOR]]
        signin.save()
        SsoDomain.objects.get_or_create(domain=DOMAIN, defaults={"org": org})
        self.stdout.write(
            f"Single sign-on: the demo identity provider at http://127.0.0.1:{settings.DEMO_IDP_PORT}/ "
            f"(ada, otto, vera @{DOMAIN}; password: {settings.DEMO_PASSWORD})"
        )
