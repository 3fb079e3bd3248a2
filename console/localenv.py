"""The local `.env`: random per-install keys, created on first run and kept after.

Nothing secret ships in the repository. `make run` (`python -m console.localenv`) and, in DEBUG, every
process that loads the settings call `ensure()`: the keys missing from both the environment and `.env` are
generated into `.env` (git-ignored, mode 0600); values already there are never replaced. Processes racing
on a fresh clone (the console, `manage.py demo`, the tests) take a lock, so they write one file and agree.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

ENV_FILE = Path(__file__).resolve().parent.parent / ".env"


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


GENERATED: dict[str, Callable[[], str]] = {
    "SECRET_KEY": lambda: secrets.token_urlsafe(50),
    "KEY_ENCRYPTION_KEYS": _fernet_key,
    "SANDBOX_DEMO_KEY": lambda: "sk_demo_" + secrets.token_urlsafe(24),
    # Shared by the demo organization's single sign-on and the local identity provider (console/demo_idp).
    "DEMO_IDP_CLIENT_SECRET": lambda: secrets.token_urlsafe(32),
}
# Values that were published with the code at some point: never a production key.
PUBLISHED_SECRET_KEYS = {"dev-insecure-secret-key-change-me", "build-only"}
MIN_SECRET_KEY_LENGTH = 50  # as Django's deploy check (security.W009)


def parse(text: str) -> dict[str, str]:
    """NAME=VALUE lines (``export``, quotes and comments as dotenv files have them)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def read(path: Path = ENV_FILE) -> dict[str, str]:
    try:
        return parse(path.read_text())
    except FileNotFoundError:
        return {}


def ensure(path: Path = ENV_FILE, environ: Mapping[str, str] = os.environ) -> list[str]:
    """Generate into ``path`` each key set neither in ``environ`` nor in the file; the names added."""
    wanted = [name for name in GENERATED if not environ.get(name)]
    if not wanted or all(read(path).get(name) for name in wanted):
        return []
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)  # released when the descriptor closes
        text = path.read_text() if path.exists() else ""
        present = parse(text)
        missing = [name for name in wanted if not present.get(name)]
        if not missing:
            return []
        # An empty `NAME=` line (as copied from .env.example) gives way to the generated value.
        lines = [
            line
            for line in text.splitlines()
            if line.strip().removeprefix("export ").split("=", 1)[0].strip() not in missing
        ]
        lines += [f"{name}={GENERATED[name]()}" for name in missing]
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".env-")  # created with mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write("\n".join(lines) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return missing
    finally:
        os.close(directory)


def weak_secret_key(value: str) -> str | None:
    """Why ``value`` cannot be a production SECRET_KEY, or None."""
    if not value:
        return "is not set"
    if value in PUBLISHED_SECRET_KEYS or value.startswith("django-insecure"):
        return "is a published default"
    if len(value) < MIN_SECRET_KEY_LENGTH:
        return f"is shorter than {MIN_SECRET_KEY_LENGTH} characters"
    return None


def main() -> None:
    added = ensure()
    if added:
        print(f"Generated {', '.join(added)} into {ENV_FILE} (mode 0600, kept for the next runs).")


if __name__ == "__main__":
    main()
