"""Encryption at rest of stored secrets (API keys and basic credentials of Community rows).

Built only on the standard library, so the app needs no extra dependency: a keystream from
HMAC-SHA256 in counter mode over a random 16-byte nonce, then an HMAC-SHA256 tag over the nonce
and the ciphertext (encrypt-then-MAC), with separate derived keys for each. The first key of
``PAYCOLLECT["ENCRYPTION_KEYS"]`` encrypts; every key is tried to decrypt, so keys can be rotated.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from django.conf import settings

from .conf import paycollect_settings

PREFIX = "pcx1"
NONCE_BYTES = 16
TAG_BYTES = 32


class DecryptionError(ValueError):
    """No configured key can decrypt the value (keys rotated away, or the value was altered)."""


def _key_material() -> list[bytes]:
    keys = list(paycollect_settings.ENCRYPTION_KEYS or [])
    if not keys:
        keys = [f"django-paycollect:{settings.SECRET_KEY}"]
    return [k.encode() if isinstance(k, str) else bytes(k) for k in keys]


def _derive(material: bytes, purpose: bytes) -> bytes:
    return hmac.new(material, b"django-paycollect/" + purpose, hashlib.sha256).digest()


def _key_id(material: bytes) -> str:
    return _derive(material, b"id").hex()[:8]


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = []
    for counter in range((length + 31) // 32):
        blocks.append(hmac.new(key, nonce + counter.to_bytes(8, "big"), hashlib.sha256).digest())
    return b"".join(blocks)[:length]


def _xor(data: bytes, stream: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, stream, strict=True))


def encrypt(plaintext: str) -> str:
    material = _key_material()[0]
    nonce = os.urandom(NONCE_BYTES)
    data = plaintext.encode()
    ciphertext = _xor(data, _keystream(_derive(material, b"enc"), nonce, len(data)))
    tag = hmac.new(_derive(material, b"mac"), nonce + ciphertext, hashlib.sha256).digest()
    token = base64.urlsafe_b64encode(nonce + ciphertext + tag).decode()
    return f"{PREFIX}:{_key_id(material)}:{token}"


def decrypt(token: str) -> str:
    try:
        prefix, key_id, body = token.split(":", 2)
        raw = base64.urlsafe_b64decode(body.encode())
    except (ValueError, TypeError):
        raise DecryptionError("not an encrypted value") from None
    if prefix != PREFIX or len(raw) < NONCE_BYTES + TAG_BYTES:
        raise DecryptionError("not an encrypted value")
    nonce, ciphertext, tag = raw[:NONCE_BYTES], raw[NONCE_BYTES:-TAG_BYTES], raw[-TAG_BYTES:]
    # The key id picks the likely key first; every key is still tried, ids are only a hint.
    candidates = sorted(_key_material(), key=lambda m: _key_id(m) != key_id)
    for material in candidates:
        expected = hmac.new(_derive(material, b"mac"), nonce + ciphertext, hashlib.sha256).digest()
        if hmac.compare_digest(expected, tag):
            return _xor(ciphertext, _keystream(_derive(material, b"enc"), nonce, len(ciphertext))).decode()
    raise DecryptionError("no configured encryption key decrypts this value")


def needs_reencryption(token: str) -> bool:
    """True when the value was encrypted with a key other than the current (first) one."""
    try:
        return token.split(":", 2)[1] != _key_id(_key_material()[0])
    except IndexError:
        return True
