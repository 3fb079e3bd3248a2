from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console.accounts.models import Membership, Organization, Role
from console.accounts.signals import demo_ready

DEMO_USERS = [("demo", Role.ADMIN), ("operator", Role.OPERATOR), ("viewer", Role.VIEWER)]


class Command(BaseCommand):
    help = "Create (or refresh) the demo organization against the sandbox and its demo users. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--url", default=None, help="Console URL to print (default: 127.0.0.1 at PORT)")

    @transaction.atomic
    def handle(self, *args, url, **options):
        url = url or f"http://127.0.0.1:{settings.CONSOLE_PORT}/"
        if not settings.SANDBOX_DEMO_KEY:
            raise CommandError(
                "SANDBOX_DEMO_KEY is not set (in development `make run` generates it into .env)"
            )
        org, _ = Organization.objects.get_or_create(
            slug="demo", defaults={"name": "Demo", "service_base_url": settings.SANDBOX_URL}
        )
        org.service_base_url = settings.SANDBOX_URL
        org.set_api_key(settings.SANDBOX_DEMO_KEY)
        org.save()
        User = get_user_model()
        for username, role in DEMO_USERS:
            user, _ = User.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.com"}
            )
            user.set_password(settings.DEMO_PASSWORD)
            user.save()
            Membership.objects.update_or_create(user=user, org=org, defaults={"role": role})
        # The apps above add theirs (the alerts: a few rules, so the bell shows logins that need a human).
        demo_ready.send(sender=self.__class__, org=org)
        self.stdout.write(f"Demo ready at {url}")
        # A demo password is meant to be shared; printing it is the point.
        self.stdout.write(f"Log in as demo (admin), operator or viewer; password: {settings.DEMO_PASSWORD}")
