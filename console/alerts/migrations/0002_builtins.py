"""Every organization that existed before alerts gets its console channel and built-in rule."""

from django.db import migrations

CONSOLE_CHANNEL_NAME = "Console"
SERVICE_RULE_NAME = "Service unreachable or refusing the key"


def add_builtins(apps, schema_editor):
    Organization = apps.get_model("accounts", "Organization")
    Channel = apps.get_model("alerts", "Channel")
    Rule = apps.get_model("alerts", "Rule")
    for org in Organization.objects.all():
        channel = Channel.objects.filter(org=org, kind="console").first()
        if channel is None:
            channel = Channel.objects.create(org=org, kind="console", name=CONSOLE_CHANNEL_NAME)
        if not Rule.objects.filter(org=org, builtin=True).exists():
            rule = Rule.objects.create(
                org=org,
                kind="service",
                name=SERVICE_RULE_NAME,
                severity="critical",
                for_seconds=60,
                repeat_minutes=60,
                builtin=True,
            )
            rule.channels.add(channel)


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial")]

    operations = [migrations.RunPython(add_builtins, migrations.RunPython.noop)]
