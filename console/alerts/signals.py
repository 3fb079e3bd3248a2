from django.db.models.signals import post_save
from django.dispatch import receiver

from console.accounts.models import Organization
from console.alerts import builtins


@receiver(post_save, sender=Organization, dispatch_uid="alerts-builtins")
def give_builtins(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        builtins.ensure(instance)
