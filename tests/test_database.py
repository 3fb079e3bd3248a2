"""The test database plugin (tests/database.py): the suite on a throwaway PostgreSQL cluster."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from console.accounts.models import Membership, Organization, Role

ROOT = Path(__file__).resolve().parent.parent
# An async view whose queries run on the ORM thread, which keeps its connection (CONN_MAX_AGE).
ASYNC_DB_TEST = "tests/accounts/test_members.py::test_it_gives_404_for_a_member_of_another_org"


def test_it_runs_on_postgres_and_drops_the_test_database_after():
    env = {**os.environ, "TEST_DB": "postgres"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", ASYNC_DB_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "database: PostgreSQL" in output
    assert "1 passed" in output
    assert "teardown test databases" not in output
    assert "is being accessed by other users" not in output


@pytest.mark.django_db(transaction=True)
def test_the_flush_between_tests_empties_every_table_but_the_content_types_and_permissions():
    """tests/db_backends: the flush pytest-django runs after each transactional test (on SQLite and on
    PostgreSQL) deletes every row a test made and keeps what migrate made once, with no post_migrate."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.core.management import call_command
    from django.db import connection

    assert type(connection.ops).__module__.startswith("tests.db_backends.")
    kinds, permissions = ContentType.objects.count(), Permission.objects.count()
    assert kinds > 20 and permissions > 80
    user = get_user_model().objects.create_user("flushed", password="x" * 20)
    org = Organization.objects.create(name="Flushed", slug="flushed", service_base_url="http://127.0.0.1:9")
    Membership.objects.create(user=user, org=org, role=Role.ADMIN)
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)  # as pytest-django does
    assert not Organization.objects.exists() and not Membership.objects.exists()
    assert not get_user_model().objects.exists()
    assert (ContentType.objects.count(), Permission.objects.count()) == (kinds, permissions)
