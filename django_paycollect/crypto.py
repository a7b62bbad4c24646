"""Encryption at rest of the Community rows' API keys and basic credentials: Fernet with rotation, each key
derived from an entry of ``PAYCOLLECT["ENCRYPTION_KEYS"]`` (or from ``SECRET_KEY``) by HKDF-SHA256; values of
the earlier cipher (``pcx1:...``, HMAC-SHA256 in counter mode) read, never written (docs/settings.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from collections import Counter
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from .conf import paycollect_settings

#: The prefix of values written by the earlier cipher (read, never written).
LEGACY_PREFIX = "pcx1"
NONCE_BYTES = 16
TAG_BYTES = 32
#: What a key needs to be one (check ``paycollect.E016``): this many characters or bytes, and about this many
#: bits by its length and the variety of its characters (a run of one letter or of zero bytes has none).
MIN_KEY_LENGTH = 32
MIN_KEY_BITS = 100
_INFO = b"django-paycollect/encryption-at-rest/fernet"


class DecryptionError(ValueError):
    """No configured key can decrypt the value (keys rotated away, or the value was altered)."""


def _key_material() -> tuple[bytes, ...]:
    keys = paycollect_settings.encryption_keys()
    return keys or (f"django-paycollect:{settings.SECRET_KEY}".encode(),)


@lru_cache(maxsize=32)
def _fernet(material: bytes) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(material)
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernets() -> MultiFernet:
    return MultiFernet([_fernet(material) for material in _key_material()])


def weakness(key: str | bytes) -> str | None:
    """Why ``key`` is too weak to be an encryption key, or None (check ``paycollect.E016``)."""
    if len(key) < MIN_KEY_LENGTH:
        return f"shorter than {MIN_KEY_LENGTH} characters"
    counts = Counter(key)
    # Shannon's estimate from the key's own letters: a long run of few letters (or of zero bytes) is no key.
    bits = -sum(n * math.log2(n / len(key)) for n in counts.values())
    if bits < MIN_KEY_BITS:
        return "too repetitive to be a random key"
    return None


def encrypt(plaintext: str) -> str:
    return _fernets().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    if token.startswith(f"{LEGACY_PREFIX}:"):
        return _legacy_decrypt(token)
    try:
        return _fernets().decrypt(token.encode()).decode()
    except (InvalidToken, TypeError, ValueError):
        raise DecryptionError("no configured encryption key decrypts this value") from None


def needs_reencryption(token: str) -> bool:
    """True when the value was written by the earlier cipher or with a key other than the current one."""
    if token.startswith(f"{LEGACY_PREFIX}:"):
        return True
    try:
        _fernet(_key_material()[0]).decrypt(token.encode())
    except (InvalidToken, TypeError, ValueError):
        return True
    return False


def reencrypted(token: str) -> str:
    """``token`` written with the current key in the current format (itself when it is already);
    :class:`DecryptionError` when no configured key decrypts it."""
    return encrypt(decrypt(token)) if needs_reencryption(token) else token


# --- the earlier cipher, read only ------------------------------------------------------------------------


def _derive(material: bytes, purpose: bytes) -> bytes:
    return hmac.new(material, b"django-paycollect/" + purpose, hashlib.sha256).digest()


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    counters = range((length + 31) // 32)
    stream = b"".join(hmac.new(key, nonce + n.to_bytes(8, "big"), hashlib.sha256).digest() for n in counters)
    return stream[:length]


def _legacy_decrypt(token: str) -> str:
    try:
        _prefix, _key_id, body = token.split(":", 2)
        raw = base64.urlsafe_b64decode(body.encode())
    except (ValueError, TypeError):
        raise DecryptionError("not an encrypted value") from None
    if len(raw) < NONCE_BYTES + TAG_BYTES:
        raise DecryptionError("not an encrypted value")
    nonce, ciphertext, tag = raw[:NONCE_BYTES], raw[NONCE_BYTES:-TAG_BYTES], raw[-TAG_BYTES:]
    for material in _key_material():
        expected = hmac.new(_derive(material, b"mac"), nonce + ciphertext, hashlib.sha256).digest()
        if hmac.compare_digest(expected, tag):
            stream = _keystream(_derive(material, b"enc"), nonce, len(ciphertext))
            try:
                return bytes(a ^ b for a, b in zip(ciphertext, stream, strict=True)).decode()
            except UnicodeDecodeError:
                break
    raise DecryptionError("no configured encryption key decrypts this value")
