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
- Secrets: the sandbox keeps credential values, proxy passwords, TOTP secrets, auth connections' stored
  logins, provider tokens and vault contents as the service would hold them, in clear in memory (it must
  use them). In the file every row's payload (tenants, records, audit entries, telemetry events) is sealed
  with AES-256-GCM, its place in the file (tenant id, table, ids) as associated data, so a copied file
  (a backup, an attachment) yields nothing without its key; only ids, table names and row counts show.
  API keys are kept nowhere, in memory or on disk, only their SHA-256 (``state.key_digest``): a tenant's
  own key and the keys it created are recognised, never recovered. Nothing here logs a value.
- The key: ``SANDBOX_STATE_KEY`` (environment: 32 random bytes, URL-safe base64) or else
  ``<state>.key``, made on first use (0600, complete or absent: a temporary file linked into place, which
  never replaces a file nor follows a symlink; refused if it is a symlink or another user's). A state file
  whose key is missing or wrong is a ``StateError`` at start-up naming the fix (restore the key, or
  ``make sandbox-reset``, which removes file and key); it is never reseeded nor overwritten. The key check
  sealed in ``meta`` tells a wrong key before any row is read.
- Saves compare rows in clear with what was last written (``_rows``), then seal only the changed ones, so
  a random nonce never rewrites an unchanged row.
- Format 1 (before encryption: rows in clear, tenants and created keys by their key) is migrated when
  opened, in one transaction, and the file is then rebuilt (VACUUM, freed pages zeroed) and its WAL
  emptied, so no page in clear survives the upgrade.

Values are JSON with a small set of tagged types (datetime, bytes, set, tuple, deque, Path, and the
sandbox's own classes that records hold, by an allowlist: the ``Kind``s the resources hand in, each saved
by its resource's own ``dump`` and rebuilt by its ``load``); a runtime handle (a task, a subprocess, a
browser) is never written. Nothing in the file is executed when it is read (no pickle): a foreign or
damaged file is a clear ``StateError`` at start-up.

The store names no resource: what it needs from them is handed in by ``app.assemble`` (``register``ed
kinds, ``before_save`` and ``after_load`` listeners, ``new_audit_log``).
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
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from console.sandbox.core.hooks import Hook, Listeners, NotHandedIn
from console.sandbox.core.state import Tenant, key_digest

log = logging.getLogger("console.sandbox.store")

FORMAT = "browser-automation-sandbox-state"
# 1: rows in clear, tenants by their API key (migrated when opened); 2: rows sealed, API keys as digests.
VERSION = 2
KEY_ENV = "SANDBOX_STATE_KEY"  # the key from the environment instead of ``<state>.key``
KEY_CHECK = "browser-automation-sandbox-state key"  # sealed in meta: a wrong key is told before any row
RESET = "`make sandbox-reset` (or `python manage.py sandbox --reset`)"
AUDIT = "_audit_log"  # the tenant setting holding its audit log (rows of their own, appended)
SAVE_INTERVAL = 2.0  # the tenants that had requests since the last save (reads change state too)
FULL_SAVE_EVERY = 15  # intervals: every tenant, for what moves without requests (browsers' telemetry)

# ``tenant`` is the tenant's id (``org_…``); every ``data`` is sealed (``Cipher``).
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tenants (tenant TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    tenant TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (tenant, tbl, id)
);
CREATE TABLE IF NOT EXISTS audit (
    tenant TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (tenant, n)
);
CREATE TABLE IF NOT EXISTS telemetry (
    tenant TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (tenant, tbl, id, seq)
);
"""


class StateError(Exception):
    """The state file cannot be used (foreign, damaged, newer format, unreadable, key missing or wrong):
    said plainly."""


# Encryption at rest -------------------------------------------------------------------------------


class Unreadable(ValueError):
    """A sealed row that does not open with the key: damaged, or moved to another place in the file."""


class Cipher:
    """AES-256-GCM over a row's encoding, a random nonce each time; the row's place (table, tenant, ids) is
    its associated data, so a row copied elsewhere in the file (another tenant's, say) does not open."""

    NONCE = 12
    TAG = 16

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def seal(self, text: str, *place) -> bytes:
        nonce = os.urandom(self.NONCE)
        return nonce + self._aead.encrypt(nonce, text.encode(), _place(place))

    def open(self, blob, *place) -> str:
        if not isinstance(blob, bytes) or len(blob) < self.NONCE + self.TAG:
            raise Unreadable
        try:
            return self._aead.decrypt(blob[: self.NONCE], blob[self.NONCE :], _place(place)).decode()
        except InvalidTag:
            raise Unreadable from None


def _place(place: tuple) -> bytes:
    return "\x1f".join(str(part) for part in place).encode()


def key_path(path: Path) -> Path:
    """Where the sandbox keeps the key of a state file (unless ``SANDBOX_STATE_KEY`` gives it)."""
    return path.with_name(path.name + ".key")


def new_key_text() -> str:
    """A new state key as written to ``<state>.key`` or given as ``SANDBOX_STATE_KEY``."""
    return base64.urlsafe_b64encode(AESGCM.generate_key(bit_length=256)).decode()


def configured_key() -> str | None:
    """``SANDBOX_STATE_KEY`` from the environment (``manage.py sandbox`` also reads it from .env)."""
    return (os.environ.get(KEY_ENV) or "").strip() or None


def _parse_key(text: str, source: str, state: Path | None = None) -> bytes:
    try:
        key = base64.urlsafe_b64decode(text.strip().encode("ascii"))
    except ValueError:  # not ASCII, or not base64
        key = b""
    if len(key) != 32:
        fix = (
            f"; {state} cannot be read without the key it was written with: restore that key, or start "
            f"fresh with {RESET}"
            if state is not None
            else ""
        )
        raise StateError(
            f"{source} does not hold a sandbox state key (32 random bytes, URL-safe base64, as `python -c "
            f"'from console.sandbox.core.store import new_key_text; print(new_key_text())'` makes){fix}"
        )
    return key


def _read_key_file(path: Path, state: Path) -> bytes | None:
    """The key in ``path`` (None if there is none): a plain file of the sandbox's user, never a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink planted since the check
        raise StateError(f"cannot read the state key {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise StateError(
                f"{path} is not a regular file of the sandbox's user; it is not used as the state key"
            )
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        text = os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)
    return _parse_key(text, str(path), state)


def _create_key_file(path: Path) -> bytes:
    """A new key in ``path``, 0600, complete or not there at all: written to a temporary file of its own
    (O_EXCL), then linked to ``path`` (which, like O_EXCL, never replaces a file nor follows a link)."""
    text = new_key_text()
    temp = None
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # 0600, O_EXCL
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(temp, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except FileExistsError:
        raise StateError(f"{path} appeared while the sandbox made its state key; start it again") from None
    except OSError as exc:
        raise StateError(f"cannot create the state key {path}: {exc.strerror}") from None
    finally:
        if temp is not None:
            with _quiet_oserror():
                os.unlink(temp)
    return _parse_key(text, str(path))


# Encoding -----------------------------------------------------------------------------------------

_SKIP = object()
_PLAIN = frozenset({str, int, bool, type(None)})


@dataclass(frozen=True)
class Kind:
    """A class of the sandbox's own that records hold, saved under a stable ``name`` (nothing else is ever
    built from the file): ``dump(value)`` gives the fields to save (a dataclass's own by default), and
    ``load(fields)`` builds it again (``cls(**fields)`` by default).

    An archive (a session's telemetry) has ``restore``: its events are rows of their own, appended as they
    come rather than rewritten with the record. It holds ``events`` (oldest first, each with ``seq``,
    ``body``, and ``spanned`` when it is rebuilt from the record and never saved as a row) and
    ``after(seq)`` (the events past ``seq``); ``restore(archive, seq, body)`` puts a saved row back."""

    name: str
    cls: type
    dump: Callable[[object], dict] | None = None
    load: Callable[[dict], object] | None = None
    restore: Callable[[object, int, dict], None] | None = None

    def fields(self, value) -> dict:
        if self.dump is not None:
            return self.dump(value)
        return {spec.name: getattr(value, spec.name) for spec in dataclasses.fields(value) if spec.init}

    def build(self, fields: dict):
        return self.load(fields) if self.load is not None else self.cls(**fields)


KINDS: dict[str, Kind] = {}


def register(*kinds: Kind) -> None:
    """The kinds records hold, handed in by the resources that own them (``app.assemble``)."""
    for kind in kinds:
        KINDS[kind.name] = kind


# Handed in by ``app.assemble``: what the engine keeps of its browsers before a save (their URL and
# storage), what cannot continue across a restart once a tenant is loaded (processes, recordings,
# watches, telemetry spans), and a tenant's empty audit log (its bound is the audit log's).
before_save = Listeners("store.before_save()")
after_load = Listeners("store.after_load(tenant)")
new_audit_log = Hook("store.new_audit_log() -> deque")


class Codec:
    def __init__(self) -> None:
        if not KINDS:
            raise NotHandedIn("store.KINDS: not handed in (console.sandbox.app.assemble() wires the sandbox)")
        self.classes = dict(KINDS)
        self.names = {kind.cls: kind for kind in self.classes.values()}
        self._warned: set[type] = set()
        # Archives met while encoding or decoding a record, saved as rows of their own: (tbl, id) -> archive
        self.archives: dict[tuple[str, str], object] = {}
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
        kind = self.names.get(type(value))
        if kind is not None:
            if kind.restore is not None and self._where is not None:
                self.archives[self._where] = value
            return {"$": kind.name, "v": self.encode(kind.fields(value))}
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

    def load_record(self, tbl: str, record_id: str, text: str):
        """A record's encoding back, its archives noted in ``archives`` (as ``record`` notes them)."""
        self._where = (tbl, record_id)
        try:
            return self.decode(json.loads(text))
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
        kind = self.classes.get(tag)
        if kind is None:
            raise StateError(f"unknown value type {tag!r} in the state file")
        value = kind.build({key: self.decode(item) for key, item in inner.items()})
        if kind.restore is not None and self._where is not None:
            self.archives[self._where] = value
        return value


def _hashable(value):
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


# The store ----------------------------------------------------------------------------------------


class Store:
    def __init__(self, path: str | os.PathLike, *, key: str | None = None) -> None:
        """``key``: the state key (as ``SANDBOX_STATE_KEY`` has it); None: ``SANDBOX_STATE_KEY``, else
        ``<state>.key``, made on first use."""
        self.path = state_path(path)
        self.files = self.path.with_name(self.path.name + ".files")
        self.key_file = key_path(self.path)
        self._key_text = key
        _check_own_paths(self.path)
        self.codec = Codec()
        self.cipher: Cipher | None = None
        # What the file holds, as last written: key -> the row's encoding in clear (compared, so a row is
        # sealed and written only when that changed: a new nonce alone never rewrites a row).
        self._rows: dict[tuple, str] = {}
        self._seqs: dict[tuple, tuple[int, int]] = {}  # telemetry (tenant, tbl, id) -> (first, last) seq
        self.saves = 0
        self.touched: set[str] = set()  # key digests of requests since the last periodic save
        self._audit: dict[str, tuple[dict, int]] = {}  # tenant id -> (newest entry saved, its row number)
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
            # Nothing is written (not even a key) before the file is known to be the sandbox's own (or
            # empty).
            meta: dict[str, str] = {}
            if tables:
                if "meta" not in tables:
                    raise self._foreign()
                try:
                    meta = dict(db.execute("SELECT key, value FROM meta"))
                except sqlite3.DatabaseError:
                    raise self._foreign() from None
                if meta.get("format") != FORMAT:
                    raise self._foreign()
                if meta.get("version") not in (str(VERSION), "1"):
                    raise StateError(
                        f"{self.path} holds sandbox state of format version {meta.get('version')}, this "
                        f"sandbox reads version {VERSION}; start fresh with {RESET}"
                    )
            current = meta.get("version") == str(VERSION)
            # A fresh file or one of format 1 (in clear) gets a key; a sealed one needs the key it had.
            self.cipher = Cipher(self._key(make=not current))
            if current:
                self._check_key(meta)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            if meta.get("version") == "1":
                self._migrate_from_1(db)
            elif meta.get("rebuild"):
                self._rebuild(db)
            elif not tables:
                db.executescript(SCHEMA)
                db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", FORMAT), ("version", str(VERSION)), ("key_check", self._key_check())],
                )
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            raise StateError(
                f"{self.path} is not a readable sandbox state file ({exc}); move it away or start fresh "
                f"with {RESET}"
            ) from None
        except StateError:
            db.close()
            raise
        for suffix in ("-wal", "-shm"):
            with _quiet_oserror():
                _owner_only(Path(f"{self.path}{suffix}"))
        self.files.mkdir(mode=0o700, exist_ok=True)
        return db

    def _key(self, *, make: bool) -> bytes:
        if self._key_text is not None:
            return _parse_key(self._key_text, "the key given", self.path)
        configured = configured_key()
        if configured is not None:
            return _parse_key(configured, KEY_ENV, self.path)
        key = _read_key_file(self.key_file, self.path)
        if key is not None:
            return key
        if not make:
            raise StateError(
                f"{self.path} is encrypted and its key {self.key_file} is missing: restore that file (or "
                f"set {KEY_ENV} to the key it was written with); without its key the state cannot be read "
                f"and is not overwritten: to start fresh instead, {RESET} removes it"
            )
        return _create_key_file(self.key_file)

    def _key_check(self) -> str:
        return base64.b64encode(self.cipher.seal(KEY_CHECK, "meta", "key_check")).decode()

    def _check_key(self, meta: dict) -> None:
        try:
            sealed = base64.b64decode(meta.get("key_check", ""), validate=True)
            opened = self.cipher.open(sealed, "meta", "key_check")
        except ValueError:  # Unreadable, or not base64
            opened = None
        if opened != KEY_CHECK:
            source = (
                "the key given"
                if self._key_text is not None
                else (KEY_ENV if configured_key() is not None else str(self.key_file))
            )
            raise StateError(
                f"{self.path} was encrypted with another key than {source}: restore the key it was "
                f"written with ({self.key_file}, or {KEY_ENV}); without it the state cannot be read and is "
                f"not overwritten: to start fresh instead, {RESET} removes it"
            )

    def _migrate_from_1(self, db: sqlite3.Connection) -> None:
        """Format 1 (every row in clear, tenants and created API keys by their key) to this one, in one
        transaction; then the file is rebuilt (VACUUM) and its WAL emptied, so no page in clear is left."""
        seal = self.cipher.seal
        db.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left with their old rows
        db.execute("BEGIN IMMEDIATE")
        try:
            old = {
                table: db.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 (our table names)
                for table in ("tenants", "records", "audit", "telemetry")
            }
            for table in old:
                db.execute(f"DROP TABLE {table}")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            ids: dict[str, str] = {}
            for api_key, data in old["tenants"]:
                fields = json.loads(data)
                tenant_id = fields["id"]
                if not isinstance(tenant_id, str) or not isinstance(api_key, str):
                    raise TypeError("tenant id")
                ids[api_key] = tenant_id
                fields["key_sha256"] = key_digest(api_key)
                db.execute(
                    "INSERT INTO tenants (tenant, data) VALUES (?, ?)",
                    (tenant_id, seal(_dumps(fields), "tenant", tenant_id)),
                )
            for api_key, tbl, record_id, data in old["records"]:
                if api_key in ids:
                    tenant_id = ids[api_key]
                    text = _dumps(_upgraded_from_1(tbl, json.loads(data), api_key, tenant_id))
                    db.execute(
                        "INSERT INTO records (tenant, tbl, id, data) VALUES (?, ?, ?, ?)",
                        (tenant_id, tbl, record_id, seal(text, "record", tenant_id, tbl, record_id)),
                    )
            for api_key, n, data in old["audit"]:
                if api_key in ids:
                    db.execute(
                        "INSERT INTO audit (tenant, n, data) VALUES (?, ?, ?)",
                        (ids[api_key], n, seal(data, "audit", ids[api_key], n)),
                    )
            for api_key, tbl, record_id, seq, data in old["telemetry"]:
                if api_key in ids:
                    place = (ids[api_key], tbl, record_id, seq)
                    db.execute(
                        "INSERT INTO telemetry (tenant, tbl, id, seq, data) VALUES (?, ?, ?, ?, ?)",
                        (*place, seal(data, "telemetry", *place)),
                    )
            db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(VERSION),))
            db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [("key_check", self._key_check()), ("rebuild", "after the migration from format 1")],
            )
            db.execute("COMMIT")
        except BaseException as exc:
            db.execute("ROLLBACK")
            if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):
                raise StateError(
                    f"{self.path} holds sandbox state of format version 1 that could not be migrated "
                    f"({type(exc).__name__}); it is left as it was: move it away or start fresh with {RESET}"
                ) from None
            raise
        self._rebuild(db)
        db.execute("PRAGMA secure_delete = OFF")
        log.info("sandbox state %s: migrated from format version 1 to %d (encrypted)", self.path, VERSION)

    @staticmethod
    def _rebuild(db: sqlite3.Connection) -> None:
        """Every page rewritten (VACUUM) and the WAL emptied: what format 1 left in free pages or WAL frames
        goes. Marked in meta until done, so a crash right after the migration's commit redoes it."""
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("DELETE FROM meta WHERE key = 'rebuild'")

    def _foreign(self) -> StateError:
        return StateError(
            f"{self.path} is an SQLite database, but not the sandbox's state (left untouched); "
            "point SANDBOX_STATE at another file"
        )

    # Loading ------------------------------------------------------------------------------------------

    def load(self, registry) -> int:
        """Every saved tenant into ``registry`` (same keys, ids and records); how many were loaded."""
        codec, unseal = self.codec, self.cipher.open
        where = "the tenants"
        try:
            tenants = {}
            for tenant_id, sealed in self.db.execute("SELECT tenant, data FROM tenants"):
                where = f"tenant {tenant_id}"
                data = unseal(sealed, "tenant", tenant_id)
                fields = codec.decode(json.loads(data))
                if not isinstance(fields["key_sha256"], str):
                    raise TypeError("key_sha256")
                tenant = Tenant(key_sha256=fields["key_sha256"], id=tenant_id)
                tenant.clock_offset = fields.get("clock_offset") or timedelta(0)
                tenant.keepalive_seconds = float(fields.get("keepalive_seconds", 15.0))
                tenant.settings = fields.get("settings") or {}
                tenant.default_project_id = fields.get("default_project_id", "")
                tenants[tenant_id] = tenant
                self._rows[("tenant", tenant_id)] = data
            archives = {}
            for tenant_id, tbl, record_id, sealed in self.db.execute(
                "SELECT tenant, tbl, id, data FROM records"
            ):
                tenant = tenants.get(tenant_id)
                if tenant is None:
                    continue
                where = f"record {tbl}/{record_id}"
                data = unseal(sealed, "record", tenant_id, tbl, record_id)
                codec.archives.clear()
                tenant.table(tbl)[record_id] = codec.load_record(tbl, record_id, data)
                for (t, i), archive in codec.archives.items():
                    archives[(tenant_id, t, i)] = archive
                self._rows[("record", tenant_id, tbl, record_id)] = data
            where = "the telemetry archives"
            self._load_telemetry(archives)
            where = "the audit logs"
            self._load_audit(tenants)
            where = "the processes and recordings"
            for tenant in tenants.values():
                after_load(tenant)
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
            if isinstance(exc, Unreadable):
                detail = "does not open with the key: damaged"
            raise StateError(
                f"{self.path} could not be read as sandbox state ({where}: {detail}); move it away or "
                "start fresh with `python manage.py sandbox --reset`"
            ) from None
        for tenant in tenants.values():
            registry.tenants[tenant.key_sha256] = tenant
            for key in tenant.table("api_keys").values():
                if key.get("_key_sha256"):  # keys it created work again (deleted or expired stay refused)
                    registry.tenants[key["_key_sha256"]] = tenant
        return len(tenants)

    def _load_audit(self, tenants: dict) -> None:
        rows = self.db.execute("SELECT tenant, n, data FROM audit ORDER BY tenant, n")
        for tenant_id, n, sealed in rows:
            tenant = tenants.get(tenant_id)
            if tenant is None:
                continue
            entries = tenant.settings.get(AUDIT)
            if entries is None:
                entries = tenant.settings[AUDIT] = new_audit_log()
            entries.append(json.loads(self.cipher.open(sealed, "audit", tenant_id, n)))
            self._audit[tenant_id] = (entries[-1], n)

    def _load_telemetry(self, archives: dict) -> None:
        """The archives' saved rows back into them: ``archives`` maps (tenant id, tbl, id) to the archive
        its record holds (``Kind.restore``)."""
        rows = self.db.execute(
            "SELECT tenant, tbl, id, seq, data FROM telemetry ORDER BY tenant, tbl, id, seq"
        )
        for tenant_id, tbl, record_id, seq, sealed in rows:
            archive = archives.get((tenant_id, tbl, record_id))
            if archive is None:
                continue
            body = json.loads(self.cipher.open(sealed, "telemetry", tenant_id, tbl, record_id, seq))
            self.codec.names[type(archive)].restore(archive, seq, body)
            first, _ = self._seqs.get((tenant_id, tbl, record_id), (seq, seq))
            self._seqs[(tenant_id, tbl, record_id)] = (first, seq)

    # Saving -------------------------------------------------------------------------------------------

    def save(self, registry, only=None) -> int:
        """Write what changed since the last save, in one transaction; the number of rows written.

        ``only``: the digests (``key_digest``) of the API keys of the tenants to save (a request changes its
        own tenant only); None saves every tenant. Rows are compared in clear and sealed when written."""
        before_save()
        codec = self.codec
        rows: dict[tuple, str] = {}
        telemetry: dict[tuple, object] = {}
        # A tenant is listed under its own key and under every API key it created: saved once, by its id.
        if only is None:
            scope = None
            tenants = registry.own()
        else:
            chosen = {registry.tenants[d].id: registry.tenants[d] for d in only if d in registry.tenants}
            scope, tenants = set(chosen), list(chosen.values())
        for tenant in tenants:
            rows[("tenant", tenant.id)] = json.dumps(
                codec.encode(
                    {
                        "id": tenant.id,
                        "clock_offset": tenant.clock_offset,
                        "keepalive_seconds": tenant.keepalive_seconds,
                        "settings": {k: v for k, v in tenant.settings.items() if k != AUDIT},
                        "default_project_id": tenant.default_project_id,
                        "key_sha256": tenant.key_sha256,
                    }
                ),
                separators=(",", ":"),
            )
            for tbl, table in list(tenant.tables.items()):
                for record_id, record in list(table.items()):
                    codec.archives.clear()
                    rows[("record", tenant.id, tbl, record_id)] = codec.record(tbl, record_id, record)
                    for (t, i), archive in codec.archives.items():
                        telemetry[(tenant.id, t, i)] = archive
        changed = [(key, data) for key, data in rows.items() if self._rows.get(key) != data]
        gone = [key for key in self._rows if key not in rows and (scope is None or key[1] in scope)]
        appended, trimmed, seqs = self._telemetry_changes(telemetry)
        logged, forgotten, marks = self._audit_changes(tenants)
        if not changed and not gone and not appended and not trimmed and not logged and not forgotten:
            return 0
        db, seal = self.db, self.cipher.seal
        sealed = [(key, seal(data, *key)) for key, data in changed]
        db.execute("BEGIN IMMEDIATE")
        try:
            for key, blob in sealed:
                if key[0] == "tenant":
                    db.execute("INSERT OR REPLACE INTO tenants (tenant, data) VALUES (?, ?)", (key[1], blob))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO records (tenant, tbl, id, data) VALUES (?, ?, ?, ?)",
                        (*key[1:], blob),
                    )
            for key in gone:
                if key[0] == "tenant":
                    db.execute("DELETE FROM tenants WHERE tenant = ?", (key[1],))
                    db.execute("DELETE FROM telemetry WHERE tenant = ?", (key[1],))
                    db.execute("DELETE FROM audit WHERE tenant = ?", (key[1],))
                else:
                    db.execute("DELETE FROM records WHERE tenant = ? AND tbl = ? AND id = ?", key[1:])
                    db.execute("DELETE FROM telemetry WHERE tenant = ? AND tbl = ? AND id = ?", key[1:])
            db.executemany(
                "INSERT OR REPLACE INTO telemetry (tenant, tbl, id, seq, data) VALUES (?, ?, ?, ?, ?)",
                appended,
            )
            db.executemany(
                "DELETE FROM telemetry WHERE tenant = ? AND tbl = ? AND id = ? AND seq < ?", trimmed
            )
            db.executemany("INSERT OR REPLACE INTO audit (tenant, n, data) VALUES (?, ?, ?)", logged)
            db.executemany("DELETE FROM audit WHERE tenant = ? AND n < ?", forgotten)
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
        """Tenants created since the last save (a tenant's creation carries no key of its own): the
        digests of their keys, as ``save`` takes them."""
        return [t.key_sha256 for t in registry.own() if ("tenant", t.id) not in self._rows]

    def _audit_changes(self, tenants: list) -> tuple[list, list, dict]:
        """The audit entries appended since the last save (the log only grows at its end, and drops its
        oldest past its bound): rows to insert, rows to forget, and the new marks."""
        logged, forgotten, marks = [], [], {}
        for tenant in tenants:
            entries = tenant.settings.get(AUDIT)
            if not entries:
                continue
            last, n = self._audit.get(tenant.id, (None, 0))
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
                text = json.dumps(self.codec.encode(entry), separators=(",", ":"))
                logged.append((tenant.id, n, self.cipher.seal(text, "audit", tenant.id, n)))
            forgotten.append((tenant.id, n - len(entries) + 1))
            marks[tenant.id] = (entries[-1], n)
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
                if event.spanned:
                    continue  # the span (in the record) rebuilds it: saving it would build it now
                text = json.dumps(event.body, separators=(",", ":"))
                appended.append((*key, event.seq, self.cipher.seal(text, "telemetry", *key, event.seq)))
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
COMPANIONS = ("", "-wal", "-shm", "-journal", ".lock", ".key", ".files")


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


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _upgraded_from_1(tbl: str, record, api_key: str, tenant_id: str):
    """A record of format 1 with the API keys it held in clear replaced: a created key by its digest (as
    ``api_keys.issue`` keeps it now), the tenant's own key in a session by the tenant's id. In place, so
    the next save finds the same encoding."""
    if not isinstance(record, dict):
        return record
    if tbl == "api_keys" and isinstance(record.get("_secret"), str):
        record = {
            ("_key_sha256" if k == "_secret" else k): (key_digest(v) if k == "_secret" else v)
            for k, v in record.items()
        }
    if tbl == "browsers" and record.get("_tenant") == api_key:
        record["_tenant"] = tenant_id
    return record


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
        key_path(target),  # a fresh start gets a new key (SANDBOX_STATE_KEY, if set, stays the key)
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
