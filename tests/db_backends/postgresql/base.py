"""Django's PostgreSQL backend with the tests' flush (tests/db_backends/__init__.py)."""

from django.db.backends.postgresql import base, operations

from tests.db_backends import KeepingFlush


class DatabaseOperations(KeepingFlush, operations.DatabaseOperations):
    def before_deletes(self) -> list[str]:
        return ["SET CONSTRAINTS ALL DEFERRED;"]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
