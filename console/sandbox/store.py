"""The sandbox's state on disk: one SQLite file (``SANDBOX_STATE``), so a restart loses nothing.

Without ``SANDBOX_STATE`` (the tests) the sandbox keeps everything in memory, as before. With it:

- At start-up every tenant, its records (projects, sessions, pools and leases, profiles, proxies,
  extensions and their zips, credentials, auth connections and their history, apps, deployments,
  invocations, API keys, vaults, telemetry destinations, credential providers), its audit log, its
  telemetry archives and its clock offset are loaded with the same ids; the demo tenant, already there, is
  not seeded again.
- Writes: after every mutating request (before its answer leaves, so an answered change is on disk), every
  ``SAVE_INTERVAL`` seconds for the tenants that had requests (reads change state too: telemetry, audit
  entries, timeouts), every ``FULL_SAVE_EVERY`` intervals for all (a real browser's telemetry) and at
  shutdown. Each save is one SQLite transaction (WAL), writing only the rows whose encoding changed; a
  crash mid-write leaves the previous save. Telemetry events and audit entries are rows of their own,
  appended and trimmed to their bound, so a stream's ``seq`` continues after a restart.
- Files live beside the database, in ``<state>.files/``: sessions' filesystems (``fs/``), replays and
  browser scratch directories (``browsers/``). The database and the directory are the owner's only (0600,
  0700; ``fs`` is 0711 when commands run as another user, as its temporary counterpart was).
- Real Chromium sessions come back in standby: the URL and storage state (cookies, local storage) kept at
  the last save (at shutdown every running browser is put in standby first) are where the next wake
  starts. Simulated sessions keep their screen, clipboard and telemetry generator.
- What does not survive: running processes (they come back exited, code -1, with a line on their output
  saying the sandbox restarted), recordings in progress (finished at the restart, without a video),
  filesystem watches, open streams, injected faults and the recent-requests list of the control interface.
  The tenant clock's offset is kept.
- Secrets: the sandbox keeps credential values, proxy passwords, TOTP secrets and API keys as the service
  would hold them, in clear in memory; the file holds them as well, which is why it is 0600. Nothing here
  logs a value.

Values are JSON with a small set of tagged types (datetime, bytes, set, tuple, deque, Path, the sandbox's
own dataclasses by an allowlist); a runtime handle (a task, a subprocess, a browser) is never written.
Nothing in the file is executed when it is read (no pickle): a foreign or damaged file is a clear
``StateError`` at start-up.
"""

from __future__ import annotations

import array
import base64
import dataclasses
import fcntl
import json
import logging
import os
import random
import shutil
import sqlite3
import stat
from collections import deque
from datetime import datetime, timedelta
from pathlib import Path

log = logging.getLogger("console.sandbox.store")

FORMAT = "browser-automation-sandbox-state"
VERSION = 1
AUDIT = "_audit_log"  # the tenant setting holding its audit log (rows of their own, appended)
SAVE_INTERVAL = 2.0  # the tenants that had requests since the last save (reads change state too)
FULL_SAVE_EVERY = 15  # intervals: every tenant, for what moves without requests (browsers' telemetry)
RESTART_NOTE = "the sandbox restarted while this process ran; it was not resumed"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tenants (api_key TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    api_key TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (api_key, tbl, id)
);
CREATE TABLE IF NOT EXISTS audit (
    api_key TEXT NOT NULL, n INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (api_key, n)
);
CREATE TABLE IF NOT EXISTS telemetry (
    api_key TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (api_key, tbl, id, seq)
);
"""


class StateError(Exception):
    """The state file cannot be used (foreign, damaged, newer format, unreadable): said plainly."""


# Encoding -----------------------------------------------------------------------------------------

_SKIP = object()
_PLAIN = frozenset({str, int, bool, type(None)})


def _dataclasses() -> dict[str, type]:
    """The sandbox's own classes that records hold, by a stable name (nothing else is ever built)."""
    from console.sandbox.resources import browser_computer, browser_processes, telemetry

    return {
        "Screen": browser_computer.Screen,
        "Proc": browser_processes.Proc,
        "Log": telemetry.Log,
    }


class Codec:
    def __init__(self) -> None:
        self.classes = _dataclasses()
        self.names = {cls: name for name, cls in self.classes.items()}
        self._warned: set[type] = set()
        # Telemetry archives met while encoding, saved as rows of their own: (tbl, id) -> Log
        self.logs: dict[tuple[str, str], object] = {}
        self._where: tuple[str, str] | None = None

    def encode(self, value):
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is list and all(type(item) in _PLAIN for item in value):
            return value
        if isinstance(value, float):
            return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
        if isinstance(value, dict):
            if all(isinstance(k, str) and k != "$" for k in value):
                out = {}
                for key, item in value.items():
                    encoded = self.encode(item)
                    if encoded is not _SKIP:
                        out[key] = encoded
                return out
            pairs = []
            for key, item in value.items():
                k, v = self.encode(key), self.encode(item)
                if k is not _SKIP and v is not _SKIP:
                    pairs.append([k, v])
            return {"$": "map", "v": pairs}
        if isinstance(value, list):
            return [e for e in (self.encode(item) for item in value) if e is not _SKIP]
        if isinstance(value, tuple):
            return {"$": "tuple", "v": [self.encode(item) for item in value]}
        if isinstance(value, set | frozenset):
            return {"$": "set", "v": [e for e in (self.encode(item) for item in value) if e is not _SKIP]}
        if isinstance(value, deque):
            items = [e for e in (self.encode(item) for item in value) if e is not _SKIP]
            return {"$": "deque", "v": items, "max": value.maxlen}
        if isinstance(value, bytes | bytearray):
            return {"$": "bytes", "v": base64.b64encode(bytes(value)).decode()}
        if isinstance(value, datetime):
            return {"$": "dt", "v": value.isoformat()}
        if isinstance(value, timedelta):
            return {"$": "td", "v": value.total_seconds()}
        if isinstance(value, Path):
            return {"$": "path", "v": str(value)}
        if type(value) is random.Random:
            version, internal, gauss = value.getstate()
            packed = base64.b64encode(array.array("Q", internal).tobytes()).decode()
            return {"$": "rng", "v": [version, packed, gauss]}
        name = self.names.get(type(value))
        if name == "Log":
            if self._where is not None:
                self.logs[self._where] = value
            fields = {f: getattr(value, f) for f in ("cursor_base", "rng", "next_seq", "generated_until")}
            fields["ended"] = value.ended
            return {"$": "Log", "v": self.encode(fields)}
        if name is not None:
            fields = {}
            for spec in dataclasses.fields(value):
                encoded = self.encode(getattr(value, spec.name))
                if encoded is not _SKIP and spec.init:
                    fields[spec.name] = encoded
            return {"$": name, "v": fields}
        if type(value) not in self._warned:
            self._warned.add(type(value))
            log.debug("not persisted (a runtime object): %s", type(value).__name__)
        return _SKIP

    def record(self, tbl: str, record_id: str, record: dict) -> str:
        self._where = (tbl, record_id)
        try:
            return json.dumps(self.encode(record), separators=(",", ":"), sort_keys=False)
        finally:
            self._where = None

    def decode(self, value):
        if isinstance(value, list):
            return [self.decode(item) for item in value]
        if not isinstance(value, dict):
            return value
        tag = value.get("$")
        if tag is None:
            return {key: self.decode(item) for key, item in value.items()}
        inner = value.get("v")
        if tag == "map":
            return {_hashable(self.decode(k)): self.decode(v) for k, v in inner}
        if tag == "tuple":
            return tuple(self.decode(item) for item in inner)
        if tag == "set":
            return {_hashable(self.decode(item)) for item in inner}
        if tag == "deque":
            return deque((self.decode(item) for item in inner), maxlen=value.get("max"))
        if tag == "bytes":
            return base64.b64decode(inner)
        if tag == "dt":
            return datetime.fromisoformat(inner)
        if tag == "td":
            return timedelta(seconds=inner)
        if tag == "path":
            return Path(inner)
        if tag == "rng":
            version, packed, gauss = inner
            rng = random.Random()
            rng.setstate((version, tuple(array.array("Q", base64.b64decode(packed))), gauss))
            return rng
        cls = self.classes.get(tag)
        if cls is None:
            raise StateError(f"unknown value type {tag!r} in the state file")
        return cls(**{key: self.decode(item) for key, item in inner.items()})


def _hashable(value):
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


# The store ----------------------------------------------------------------------------------------


class Store:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = state_path(path)
        self.files = self.path.with_name(self.path.name + ".files")
        _check_own_paths(self.path)
        self.codec = Codec()
        self._rows: dict[tuple, str] = {}  # what the file holds, as last written: key -> encoded row
        self._seqs: dict[tuple, tuple[int, int]] = {}  # telemetry (api_key, tbl, id) -> (first, last) seq
        self.saves = 0
        self.touched: set[str] = set()  # API keys of requests since the last periodic save
        self._audit: dict[str, tuple[dict, int]] = {}  # api_key -> (newest entry saved, its row number)
        self._lock = _take_lock(self.path)
        try:
            self.db = self._open()
        except BaseException:
            os.close(self._lock)
            raise

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not os.path.lexists(self.path)
            if fresh:
                # O_EXCL: never through a symlink planted meanwhile (not even a dangling one).
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            else:
                _owner_only(self.path)
        except OSError as exc:
            raise StateError(f"cannot create the sandbox state file {self.path}: {exc.strerror}") from None
        db = None
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            # Nothing is written before the file is known to be the sandbox's own (or empty).
            if tables:
                if "meta" not in tables:
                    raise self._foreign()
                try:
                    meta = dict(db.execute("SELECT key, value FROM meta"))
                except sqlite3.DatabaseError:
                    raise self._foreign() from None
                if meta.get("format") != FORMAT:
                    raise self._foreign()
                if meta.get("version") != str(VERSION):
                    raise StateError(
                        f"{self.path} holds sandbox state of format version {meta.get('version')}, this "
                        f"sandbox reads version {VERSION}; start fresh with `manage.py sandbox --reset`"
                    )
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(SCHEMA)
            if not tables:
                db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", FORMAT), ("version", str(VERSION))],
                )
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            raise StateError(
                f"{self.path} is not a readable sandbox state file ({exc}); move it away or start fresh "
                "with `python manage.py sandbox --reset`"
            ) from None
        except StateError:
            db.close()
            raise
        for suffix in ("-wal", "-shm"):
            with _quiet_oserror():
                _owner_only(Path(f"{self.path}{suffix}"))
        self.files.mkdir(mode=0o700, exist_ok=True)
        return db

    def _foreign(self) -> StateError:
        return StateError(
            f"{self.path} is an SQLite database, but not the sandbox's state (left untouched); "
            "point SANDBOX_STATE at another file"
        )

    # Loading ------------------------------------------------------------------------------------------

    def load(self, registry) -> int:
        """Every saved tenant into ``registry`` (same keys, ids and records); how many were loaded."""
        from console.sandbox.state import Tenant

        codec = self.codec
        where = "the tenants"
        try:
            tenants = {}
            for api_key, data in self.db.execute("SELECT api_key, data FROM tenants"):
                fields = codec.decode(json.loads(data))
                tenant = Tenant(api_key=api_key, id=fields["id"])
                tenant.clock_offset = fields.get("clock_offset") or timedelta(0)
                tenant.keepalive_seconds = float(fields.get("keepalive_seconds", 15.0))
                tenant.settings = fields.get("settings") or {}
                tenant.default_project_id = fields.get("default_project_id", "")
                tenants[api_key] = tenant
                self._rows[("tenant", api_key)] = data
            for api_key, tbl, record_id, data in self.db.execute(
                "SELECT api_key, tbl, id, data FROM records"
            ):
                tenant = tenants.get(api_key)
                if tenant is None:
                    continue
                where = f"record {tbl}/{record_id}"
                tenant.table(tbl)[record_id] = codec.decode(json.loads(data))
                self._rows[("record", api_key, tbl, record_id)] = data
            where = "the telemetry archives"
            self._load_telemetry(tenants)
            where = "the audit logs"
            self._load_audit(tenants)
            where = "the processes and recordings"
            for tenant in tenants.values():
                _after_restart(tenant)
        except StateError:
            raise
        except (
            sqlite3.DatabaseError,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            OverflowError,  # a duration or date out of range
            RecursionError,  # nesting deeper than a record has
        ) as exc:
            # The exception's type only: its text could quote a stored value.
            detail = str(exc) if isinstance(exc, sqlite3.DatabaseError) else type(exc).__name__
            raise StateError(
                f"{self.path} could not be read as sandbox state ({where}: {detail}); move it away or "
                "start fresh with `python manage.py sandbox --reset`"
            ) from None
        for tenant in tenants.values():
            registry.tenants[tenant.api_key] = tenant
            for key in tenant.table("api_keys").values():
                if key.get("_secret"):  # keys it created work again (deleted or expired ones stay refused)
                    registry.tenants[key["_secret"]] = tenant
        return len(tenants)

    def _load_audit(self, tenants: dict) -> None:
        from console.sandbox.resources import audit_logs

        rows = self.db.execute("SELECT api_key, n, data FROM audit ORDER BY api_key, n")
        for api_key, n, data in rows:
            tenant = tenants.get(api_key)
            if tenant is None:
                continue
            entries = tenant.settings.setdefault(AUDIT, deque(maxlen=audit_logs.MAX_ENTRIES))
            entries.append(json.loads(data))
            self._audit[api_key] = (entries[-1], n)

    def _load_telemetry(self, tenants: dict) -> None:
        from console.sandbox.resources import telemetry

        rows = self.db.execute(
            "SELECT api_key, tbl, id, seq, data FROM telemetry ORDER BY api_key, tbl, id, seq"
        )
        for api_key, tbl, record_id, seq, data in rows:
            record = tenants.get(api_key) and tenants[api_key].table(tbl).get(record_id)
            archive = (record or {}).get("_telemetry")
            if archive is None:
                continue
            body = json.loads(data)
            frame = f"id: {seq}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
            event = body["event"]
            archive.events.append(
                telemetry.Event(
                    seq=seq,
                    ts=event["ts"],
                    category=event["category"],
                    type=event["type"],
                    frame=frame,
                    body=body,
                )
            )
            first, _ = self._seqs.get((api_key, tbl, record_id), (seq, seq))
            self._seqs[(api_key, tbl, record_id)] = (first, seq)

    # Saving -------------------------------------------------------------------------------------------

    def save(self, registry, only=None) -> int:
        """Write what changed since the last save, in one transaction; the number of rows written.

        ``only``: the API keys of the tenants to save (a request changes its own tenant only); None saves
        every tenant."""
        from console.sandbox import engine

        _remember_browsers(engine.get())
        codec = self.codec
        rows: dict[tuple, str] = {}
        telemetry: dict[tuple, object] = {}
        # A tenant is listed under its own key and under every API key it created: saved once, by its own.
        if only is None:
            scope = None
            tenants = [t for key, t in list(registry.tenants.items()) if key == t.api_key]
        else:
            chosen = {registry.tenants[k].api_key: registry.tenants[k] for k in only if k in registry.tenants}
            scope, tenants = set(chosen), list(chosen.values())
        for tenant in tenants:
            rows[("tenant", tenant.api_key)] = json.dumps(
                codec.encode(
                    {
                        "id": tenant.id,
                        "clock_offset": tenant.clock_offset,
                        "keepalive_seconds": tenant.keepalive_seconds,
                        "settings": {k: v for k, v in tenant.settings.items() if k != AUDIT},
                        "default_project_id": tenant.default_project_id,
                    }
                ),
                separators=(",", ":"),
            )
            for tbl, table in list(tenant.tables.items()):
                for record_id, record in list(table.items()):
                    codec.logs.clear()
                    rows[("record", tenant.api_key, tbl, record_id)] = codec.record(tbl, record_id, record)
                    for (t, i), archive in codec.logs.items():
                        telemetry[(tenant.api_key, t, i)] = archive
        changed = [(key, data) for key, data in rows.items() if self._rows.get(key) != data]
        gone = [key for key in self._rows if key not in rows and (scope is None or key[1] in scope)]
        appended, trimmed, seqs = self._telemetry_changes(telemetry)
        logged, forgotten, marks = self._audit_changes(tenants)
        if not changed and not gone and not appended and not trimmed and not logged and not forgotten:
            return 0
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for key, data in changed:
                if key[0] == "tenant":
                    db.execute("INSERT OR REPLACE INTO tenants (api_key, data) VALUES (?, ?)", (key[1], data))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO records (api_key, tbl, id, data) VALUES (?, ?, ?, ?)",
                        (*key[1:], data),
                    )
            for key in gone:
                if key[0] == "tenant":
                    db.execute("DELETE FROM tenants WHERE api_key = ?", (key[1],))
                    db.execute("DELETE FROM telemetry WHERE api_key = ?", (key[1],))
                    db.execute("DELETE FROM audit WHERE api_key = ?", (key[1],))
                else:
                    db.execute("DELETE FROM records WHERE api_key = ? AND tbl = ? AND id = ?", key[1:])
                    db.execute("DELETE FROM telemetry WHERE api_key = ? AND tbl = ? AND id = ?", key[1:])
            db.executemany(
                "INSERT OR REPLACE INTO telemetry (api_key, tbl, id, seq, data) VALUES (?, ?, ?, ?, ?)",
                appended,
            )
            db.executemany(
                "DELETE FROM telemetry WHERE api_key = ? AND tbl = ? AND id = ? AND seq < ?", trimmed
            )
            db.executemany("INSERT OR REPLACE INTO audit (api_key, n, data) VALUES (?, ?, ?)", logged)
            db.executemany("DELETE FROM audit WHERE api_key = ? AND n < ?", forgotten)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        for key, data in changed:
            self._rows[key] = data
        for key in gone:
            del self._rows[key]
            if key[0] == "record":
                self._seqs.pop(key[1:], None)
        self._seqs.update(seqs)
        self._audit.update(marks)
        self.saves += 1
        return len(changed) + len(gone) + len(appended) + len(trimmed)

    def unsaved(self, registry) -> list[str]:
        """Tenants created since the last save (a tenant's creation carries no key of its own)."""
        return [
            key
            for key, t in list(registry.tenants.items())
            if key == t.api_key and ("tenant", key) not in self._rows
        ]

    def _audit_changes(self, tenants: list) -> tuple[list, list, dict]:
        """The audit entries appended since the last save (the log only grows at its end, and drops its
        oldest past its bound): rows to insert, rows to forget, and the new marks."""
        logged, forgotten, marks = [], [], {}
        for tenant in tenants:
            entries = tenant.settings.get(AUDIT)
            if not entries:
                continue
            last, n = self._audit.get(tenant.api_key, (None, 0))
            if entries[-1] is last:
                continue
            new = []
            for entry in reversed(entries):
                if entry is last:
                    break
                new.append(entry)
            new.reverse()
            for entry in new:
                n += 1
                logged.append(
                    (tenant.api_key, n, json.dumps(self.codec.encode(entry), separators=(",", ":")))
                )
            forgotten.append((tenant.api_key, n - len(entries) + 1))
            marks[tenant.api_key] = (entries[-1], n)
        return logged, forgotten, marks

    def _telemetry_changes(self, archives: dict) -> tuple[list, list, dict]:
        appended, trimmed, seqs = [], [], {}
        for key, archive in archives.items():
            events = archive.events
            if not events:
                continue
            first, last = events[0].seq, events[-1].seq
            saved_first, saved_last = self._seqs.get(key, (None, 0))
            if (saved_first, saved_last) == (first, last):
                continue
            for event in archive.after(saved_last):
                appended.append((*key, event.seq, json.dumps(event.body, separators=(",", ":"))))
            if saved_first is not None and first > saved_first:
                trimmed.append((*key, first))
            seqs[key] = (first, last)
        return appended, trimmed, seqs

    def close(self) -> None:
        with _quiet_oserror():
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.close()
        os.close(self._lock)


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def state_path(path: str | os.PathLike) -> Path:
    """``SANDBOX_STATE`` made absolute: its directory resolved (a symlinked directory is the owner's
    choice), its file name kept as it is, so a symlink planted at the file is refused, never followed."""
    given = Path(path).expanduser().absolute()
    return given.parent.resolve() / given.name


# Every path the store opens, creates, changes the mode of or removes, beside the state file itself.
COMPANIONS = ("", "-wal", "-shm", "-journal", ".lock", ".files")


def _check_own_paths(path: Path) -> None:
    """Refuse (``StateError``) a state file or companion that is a symlink, not a plain file (a directory
    for ``.files``), or another user's: the sandbox (root, often) would otherwise change the mode of, write
    or read what another local user pointed it at, or load state someone else wrote (its paths say where
    sessions' files live)."""
    for suffix in COMPANIONS:
        candidate = Path(f"{path}{suffix}")
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StateError(f"cannot read {candidate}: {exc.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise StateError(
                f"{candidate} is a symbolic link; the sandbox never follows one to its state (point "
                "SANDBOX_STATE at the real file, in a directory only its user can write)"
            )
        directory = suffix == ".files"
        if not (stat.S_ISDIR(info.st_mode) if directory else stat.S_ISREG(info.st_mode)):
            kind = "a directory" if directory else "a regular file"
            raise StateError(f"{candidate} is not {kind}; move it away or point SANDBOX_STATE elsewhere")
        if info.st_uid != os.geteuid():
            raise StateError(
                f"{candidate} belongs to another user (uid {info.st_uid}); the sandbox uses state of its "
                "own user only: move it away or point SANDBOX_STATE elsewhere"
            )


def _owner_only(path: Path) -> None:
    """chmod 0600, on the file itself (a symlink swapped in after the check raises ELOOP, not followed)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _take_lock(path: Path) -> int:
    """One sandbox process per state file: a second one (or a reset) is refused while it runs."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StateError(f"cannot create the sandbox state file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StateError(
            f"{path} is in use by another sandbox process; stop it first (or give this one another "
            "SANDBOX_STATE)"
        ) from None
    return fd


def _remember_browsers(engine) -> None:
    """Each real session's URL and storage, as its browser knows them now, kept in its record."""
    for live in list(engine.lives.values()):
        url = live.url
        if live.state == "running" and live.page is not None:
            with _quiet_oserror():
                current = live.page.url
                if current.startswith(("http://", "https://")):
                    url = current
        if url:
            live.record["_kept_url"] = url
        if live.storage is not None:
            live.record["_kept_storage"] = live.storage


def _after_restart(tenant) -> None:
    """What cannot continue across a restart, closed honestly: processes, recordings, watches."""
    now = tenant.now()
    note = base64.b64encode(f"\n[sandbox] {RESTART_NOTE}\n".encode()).decode()
    for record in tenant.table("browsers").values():
        for proc in (record.get("_processes") or {}).values():
            if proc.exit_code is None:
                proc.exit_code = -1
                proc.publish({"stream": "stderr", "data_b64": note})
            proc.group, proc.tty = None, None  # host pid and descriptor of the previous process
        for replay in (record.get("_replays") or {}).values():
            if replay.get("finished_at") is None:
                replay["finished_at"] = now
        record.pop("_watches", None)


class _quiet_oserror:
    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        return kind is not None and issubclass(kind, OSError | sqlite3.Error | AttributeError)


# The process's store ------------------------------------------------------------------------------

current: Store | None = None


def configured_path() -> str | None:
    """``SANDBOX_STATE`` from the environment (empty or unset: state in memory only)."""
    return (os.environ.get("SANDBOX_STATE") or "").strip() or None


def open_configured(registry) -> Store | None:
    """Open ``SANDBOX_STATE`` and load it into ``registry`` (once per process)."""
    global current
    path = configured_path()
    if path is None or current is not None:
        return current
    store = Store(path)
    loaded = store.load(registry)
    log.info("sandbox state: %s (%d tenants loaded)", store.path, loaded)
    current = store
    return store


def files_root() -> Path | None:
    """The directory for files that must outlive the process (session filesystems, replays), if any."""
    return current.files if current is not None else None


def warn_if_unreachable(directory: Path) -> None:
    """Commands run as another user must pass through every parent of the session directories."""
    closed = [p for p in directory.parents if p.exists() and not p.stat().st_mode & stat.S_IXOTH]
    if closed:
        log.warning(
            "commands in browser sessions run as another user and cannot reach %s: %s is not traversable "
            "(chmod o+x it, or put SANDBOX_STATE elsewhere)",
            directory,
            closed[0],
        )


def reset(path: str | os.PathLike) -> list[Path]:
    """Remove the state file, its WAL companions and its files directory; what was removed.

    Refused (``StateError``) while a sandbox process uses the file."""
    target = state_path(path)
    if not target.parent.is_dir():
        return []
    # A symlink among them is removed itself (unlink never follows one), never what it points at.
    os.close(_take_lock(target))
    removed = []
    for candidate in (
        target,
        Path(f"{target}-wal"),
        Path(f"{target}-shm"),
        Path(f"{target}-journal"),
        _lock_path(target),
    ):
        if os.path.lexists(candidate):
            candidate.unlink()
            if candidate != _lock_path(target):
                removed.append(candidate)
    files = target.with_name(target.name + ".files")
    if files.is_symlink():
        files.unlink()
        removed.append(files)
    elif files.is_dir():
        shutil.rmtree(files, onerror=_writable_then_retry)
        removed.append(files)
    return removed


def _writable_then_retry(function, path, _exc_info):
    """Session files a confined command left read-only are still removed."""
    with _quiet_oserror():
        if not os.path.islink(path):  # a session's symlink: never the mode of what it points at
            os.chmod(path, stat.S_IRWXU)
        function(path)
