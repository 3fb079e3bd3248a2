"""Encryption at rest for organizations' service API keys.

MultiFernet over KEY_ENCRYPTION_KEYS: the first key encrypts, every key decrypts, so keys rotate by
prepending a new one, running `manage.py rotate_org_keys`, then removing the old one.

Every page of an organization decrypts its key: decryptions are remembered per process, keyed by the token
(a new key or a rotation makes a new token), so a page does not pay for the HMAC check and AES again. The
plaintext stays in this process's memory, as it does in every ``Service`` built from it.
"""

from functools import cache, lru_cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.KEY_ENCRYPTION_KEYS])


def reset() -> None:
    """Forget the cached keys and decryptions (tests and rotation change the setting at run time)."""
    _fernet.cache_clear()
    _decrypt.cache_clear()


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _decrypt(token)


# Sized for the organizations one process serves; an invalid token raises and is not remembered.
@lru_cache(maxsize=256)
def _decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()


def rotate(token: str) -> str:
    """Re-encrypt a token under the current first key."""
    return _fernet().rotate(token.encode()).decode()
