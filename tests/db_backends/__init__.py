"""Django's database backends for the tests, with a cheaper flush between transactional tests.

Every test that uses the database runs on the transactional database (async views query from another
thread, which must see committed rows), so after each one pytest-django empties every table and Django
then sends ``post_migrate``, whose receivers (contenttypes and auth) make the content types and permissions
again, table by table: about 30 ms a test on SQLite and 90 ms on PostgreSQL, whose ``TRUNCATE`` of every
table gives each a new file on disk whatever it holds (docs/benchmarks.md, "test suite").

Here the flush keeps the two tables those receivers fill (``KEPT``: what migrate made, the same for every
test; no test writes them) and empties the others with a ``DELETE`` each, in the one transaction Django runs
the flush in (the foreign keys Django makes on PostgreSQL are ``DEFERRABLE INITIALLY DEFERRED``: checked at
the commit, when the tables are empty). tests/database.py stops those two receivers once the test database
is made. A flush that resets sequences or cascades is Django's own. Only the tests use these backends; the
console runs Django's.
"""

from __future__ import annotations

KEPT = frozenset({"django_content_type", "auth_permission"})


class KeepingFlush:
    """A mixin for a backend's DatabaseOperations: the flush described above."""

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        emptied = [table for table in tables if table not in KEPT]
        if not emptied:
            return []
        deletes = [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(t))};" for t in emptied
        ]
        return [*self.before_deletes(), *deletes]

    def before_deletes(self) -> list[str]:
        return []
