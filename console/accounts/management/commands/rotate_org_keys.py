from django.core.management.base import BaseCommand
from django.db import transaction

from console.accounts import crypto
from console.accounts.models import Organization


class Command(BaseCommand):
    help = "Re-encrypt every organization's service API key with the first KEY_ENCRYPTION_KEYS key."

    def handle(self, *args, **options):
        crypto.reset()
        count = 0
        with transaction.atomic():
            for org in Organization.objects.select_for_update().exclude(api_key_encrypted=""):
                org.api_key_encrypted = crypto.rotate(org.api_key_encrypted)
                org.save(update_fields=["api_key_encrypted"])
                count += 1
        self.stdout.write(f"Re-encrypted {count} organization key(s).")
