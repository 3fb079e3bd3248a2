"""Pytest plugin: the test database. SQLite by default; `TEST_DB=postgres` runs the suite on PostgreSQL.

PostgreSQL is what several replicas share in production, so `make test` runs the suite on both. The cluster
is a throwaway one (Debian's `postgresql` binaries): initdb'd in a temporary directory, reachable only
through a unix socket in that directory, and removed at the end. initdb refuses to run as root, so as root
the server runs as the `postgres` account the Debian package creates.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from asgiref.sync import SyncToAsync

from tests.sandbox_fixtures import free_port

SUPERUSER = "postgres"


def using_postgres() -> bool:
    return os.environ.get("TEST_DB", "sqlite") == "postgres"


def postgres_bin() -> Path:
    """Debian's newest PostgreSQL (PG_BIN overrides): `apt-get install postgresql`, as `make test` does."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
    )
    if not versions:
        raise RuntimeError("TEST_DB=postgres needs PostgreSQL: apt-get install postgresql (make test does)")
    return versions[-1].parent


class Cluster:
    def __init__(self):
        self.bin = postgres_bin()
        self.base = Path(tempfile.mkdtemp(prefix="console-test-pg-"))
        self.data = self.base / "data"
        self.sockets = self.base / "sockets"
        self.sockets.mkdir()
        self.port = free_port()  # names the socket file; nothing listens on TCP
        self.account = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        if self.account:
            for path in (self.base, self.sockets):
                os.chown(path, self.account.pw_uid, self.account.pw_gid)

    def run(self, program: str, *args: str) -> None:
        as_user = {}
        if self.account:
            as_user = {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}
        result = subprocess.run(
            [str(self.bin / program), *args], cwd=self.base, capture_output=True, text=True, **as_user
        )
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stdout}{result.stderr}")

    def start(self) -> None:
        self.run("initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
        # Durability is worth nothing in a throwaway cluster; speed is.
        options = f"-k {self.sockets} -p {self.port} -c listen_addresses='' -c fsync=off"
        options += " -c synchronous_commit=off -c full_page_writes=off"
        self.run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.base / "server.log"), "-o", options, "-w", "start"
        )

    def stop(self) -> None:
        try:
            self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def settings(self) -> dict:
        return {
            "ENGINE": "tests.db_backends.postgresql",  # Django's, with a cheaper flush between tests
            "NAME": "console",
            "USER": SUPERUSER,
            "PASSWORD": "",
            "HOST": str(self.sockets),
            "PORT": str(self.port),
            # Not SQLite's transaction_mode and timeout: PostgreSQL refuses unknown options.
            "OPTIONS": {},
        }


def pytest_report_header(config):
    return f"database: {'PostgreSQL (throwaway cluster)' if using_postgres() else 'SQLite'} (TEST_DB)"


@pytest.fixture(scope="session")
def postgres_cluster():
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings, request):
    """Points the default database at the throwaway cluster (PostgreSQL) before pytest-django creates the test
    database, and at the tests' backend of its kind (tests/db_backends: a cheaper flush between tests)."""
    from django.db import connections

    connections["default"].close()
    # One dict: settings.DATABASES["default"] is the one the connection handler reads.
    if using_postgres():
        cluster = request.getfixturevalue("postgres_cluster")
        connections.settings["default"].update(cluster.settings())
        connections.settings["default"]["TEST"]["NAME"] = None  # not SQLite's test file: Django's test_<name>
    else:
        connections.settings["default"]["ENGINE"] = "tests.db_backends.sqlite3"
    del connections["default"]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Once the test database is made (migrated, its content types and permissions made by ``post_migrate``),
    the flush between tests keeps those (tests/db_backends), so their receivers stop for the rest of the run.

    At the end it closes the ORM thread's connection before pytest-django drops the test database: async
    views run their queries on asgiref's one process-wide thread (console/asgi.py), which keeps its
    persistent connection (CONN_MAX_AGE); PostgreSQL refuses to drop a database another session is using.
    On PostgreSQL it then ends any other session on the test database (the cluster is the tests' own).
    """
    from django.contrib.auth.management import create_permissions
    from django.contrib.contenttypes.management import create_contenttypes
    from django.db.models.signals import post_migrate

    post_migrate.disconnect(
        create_permissions, dispatch_uid="django.contrib.auth.management.create_permissions"
    )
    post_migrate.disconnect(create_contenttypes)
    yield
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)
    if using_postgres():
        # Any other thread's connection too (a test's own thread, asyncio.to_thread): each kept one open and
        # the drop failed with a warning ("being accessed by other users"), leaving the database behind.
        with django_db_blocker.unblock(), connections["default"].cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        connections.close_all()


# What asks pytest-django for the database: a test that uses none of these never touches Django's database
# (pytest-django refuses such access), so running it again on PostgreSQL would check nothing new.
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


def uses_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config, items):
    """On PostgreSQL, only the tests that use the database run: the others (the sandbox's, the service
    client's) already ran on SQLite, and the database is all that differs."""
    if not using_postgres():
        return
    skipped = [item for item in items if not uses_database(item)]
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = [item for item in items if uses_database(item)]
