from django.db.models.signals import post_save
from django.dispatch import receiver

from console.accounts.models import Organization
from console.accounts.signals import demo_ready
from console.alerts import builtins, demo


@receiver(post_save, sender=Organization, dispatch_uid="alerts-builtins")
def give_builtins(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        builtins.ensure(instance, new=True)


@receiver(demo_ready, dispatch_uid="alerts-demo")
def give_demo_rules(sender, org, **kwargs):
    """A few rules on the in-console channel for the Demo organization (``manage.py demo``)."""
    demo.rules(org)
