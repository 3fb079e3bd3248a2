"""Django's SQLite backend with the tests' flush (tests/db_backends/__init__.py)."""

from django.db.backends.sqlite3 import base, operations

from tests.db_backends import KeepingFlush


class DatabaseOperations(KeepingFlush, operations.DatabaseOperations):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
