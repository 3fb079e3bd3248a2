"""Encryption at rest for organizations' service API keys.

MultiFernet over KEY_ENCRYPTION_KEYS: the first key encrypts, every key decrypts, so keys rotate by
prepending a new one, running `manage.py rotate_org_keys`, then removing the old one.
"""

from functools import cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.KEY_ENCRYPTION_KEYS])


def reset() -> None:
    """Forget the cached keys (tests and rotation change the setting at run time)."""
    _fernet.cache_clear()


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()


def rotate(token: str) -> str:
    """Re-encrypt a token under the current first key."""
    return _fernet().rotate(token.encode()).decode()
