"""The table of Django's database cache (settings.CACHES): what allauth must remember across replicas."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    # Does nothing when CACHE_URL names another kind of cache; idempotent when the table is there.
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("signin", "0001_initial")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop, elidable=False)]
