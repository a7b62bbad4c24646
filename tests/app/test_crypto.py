"""Encryption at rest of stored community keys: Fernet with rotation, keyed from the normalised setting."""

import base64
import os
import secrets

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from django_paycollect import crypto
from django_paycollect.models import Community

KEY = "a-long-random-encryption-key-Xq8v2LmP0wZr5TnK"
OLD, NEW = "the-old-encryption-key-4hG7sQ1xVb9NcE2u", "the-new-encryption-key-Jm3RtY8pKw0AdZ6f"
#: Written by the earlier cipher (HMAC-SHA256 in counter mode) before Fernet: with ``LEGACY_KEY``, and with
#: the key derived from tests.settings' SECRET_KEY (no ENCRYPTION_KEYS).
LEGACY_KEY = "legacy-key-written-before-fernet-0123456789"
LEGACY_API_KEY = (
    "pcx1:bf69bf60:7eHnx2ISSlDdmYR0EP0-D5pWUSqzeaZYBEtBbW-6kgCQabx8uZlzM2GC"
    "WtsZFzBIX-pcrJEPUqyhxj5PdLkm2PPQTYcL0aPf"
)
LEGACY_FROM_SECRET_KEY = (
    "pcx1:c7cc1aea:b-bUexu6tBW6NHCo2gRaw3bqZZEyZNT1gjhARQxKRMz2mVu4Wftd9a_9cRt"
    "vwFTugq9--mDR8vldrT8_DOhbTEdwjXpWxRIgKig="
)


def keys(value):
    return override_settings(PAYCOLLECT={"ENCRYPTION_KEYS": value})


def decrypts(token, value):
    with keys(value):
        try:
            return crypto.decrypt(token)
        except crypto.DecryptionError:
            return None


def test_a_value_is_a_fernet_token_of_the_key_derived_by_hkdf_from_the_setting():
    with keys([KEY]):
        token = crypto.encrypt("live-key-0123456789")
    assert "live-key" not in token
    # Readable by cryptography's own Fernet with the documented derivation: nothing hand-built in between.
    derived = HKDF(
        hashes.SHA256(), 32, salt=None, info=b"django-paycollect/encryption-at-rest/fernet"
    ).derive(KEY.encode())
    assert Fernet(base64.urlsafe_b64encode(derived)).decrypt(token.encode()) == b"live-key-0123456789"


def test_same_plaintext_encrypts_differently_each_time():
    assert crypto.encrypt("same") != crypto.encrypt("same")


def test_tampered_ciphertext_is_refused():
    token = crypto.encrypt("secret-value")
    flipped = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(crypto.DecryptionError):
        crypto.decrypt(flipped)


@pytest.mark.parametrize(
    "garbage", ["", "plain text", "pcx1:x:%%%", "pcx9:abc:AAAA", "gAAAAA", "pcx1:ab:AAAA"]
)
def test_garbage_is_refused_with_a_decryption_error(garbage):
    with pytest.raises(crypto.DecryptionError):
        crypto.decrypt(garbage)


def test_rotation_first_key_encrypts_all_keys_decrypt():
    with keys([OLD]):
        old = crypto.encrypt("api-key-1")
    with keys([NEW, OLD]):
        assert crypto.decrypt(old) == "api-key-1"
        assert crypto.needs_reencryption(old)
        new = crypto.encrypt("api-key-1")
        assert not crypto.needs_reencryption(new)
        assert crypto.reencrypted(new) is new
        assert decrypts(crypto.reencrypted(old), [NEW]) == "api-key-1"
    assert decrypts(old, [NEW]) is None


@pytest.mark.parametrize(
    "spelling", [KEY, [KEY], (KEY,), KEY.encode()], ids=["text", "list", "tuple", "bytes"]
)
def test_one_text_or_bytes_is_one_key_not_a_key_per_letter(spelling):
    """The finding: one text was a list of one-character keys, so a dump was decrypted by trying the 256
    one-byte keys; bytes gave keys of zero bytes. Now it is one key, in every spelling."""
    with keys(spelling):
        token = crypto.encrypt("stored-api-key-0123456789")
    assert decrypts(token, [KEY]) == "stored-api-key-0123456789"
    trivial = [bytes([n]) for n in range(256)] + [bytes(n) for n in range(1, 128)] + list(KEY)
    assert [key for key in trivial if decrypts(token, [key]) is not None] == []


def test_bytes_keys_stay_bytes():
    key = os.urandom(32)
    with keys([key]):
        token = crypto.encrypt("stored-api-key")
    assert decrypts(token, [key]) == "stored-api-key"
    assert decrypts(token, [str(key)]) is None  # never read as the text "b'...'"
    assert decrypts(token, [bytes(key[0])]) is None


def test_values_of_the_earlier_cipher_still_read_and_need_rewriting():
    with keys([NEW, LEGACY_KEY]):
        assert crypto.decrypt(LEGACY_API_KEY) == "api-key-from-before-9876"
        assert crypto.needs_reencryption(LEGACY_API_KEY)
        rewritten = crypto.reencrypted(LEGACY_API_KEY)
    assert not rewritten.startswith("pcx1:")
    assert decrypts(rewritten, [NEW]) == "api-key-from-before-9876"
    with override_settings(PAYCOLLECT={}):  # the key derived from SECRET_KEY, as before
        assert crypto.decrypt(LEGACY_FROM_SECRET_KEY) == "basic:password-from-before"
    assert decrypts(LEGACY_API_KEY, [NEW]) is None


@pytest.mark.parametrize(
    ("value", "check_id"),
    [
        ("short-key", "paycollect.E016"),
        ("a" * 64, "paycollect.E016"),
        (bytes(32), "paycollect.E016"),
        ([bytes(64)], "paycollect.E016"),
        ("passwordpasswordpasswordpassword", "paycollect.E016"),
        ([KEY, "old"], "paycollect.W010"),
        (KEY, None),
        ([secrets.token_urlsafe(32)], None),
        ([secrets.token_hex(16)], None),
        (os.urandom(32), None),
    ],
    ids=[
        "few-letters",
        "one-letter",
        "zero-bytes",
        "zero-bytes-listed",
        "repeated",
        "weak-older",
        "text",
        "urlsafe",
        "hex",
        "random-bytes",
    ],
)
def test_a_key_too_short_or_too_repetitive_to_be_a_key_is_refused(value, check_id):
    from django.core.checks import run_checks

    good = {"BASE_URL": "https://service.example", "COMMUNITY_ID": "c-1", "API_KEY": "key-0123456789"}
    with override_settings(PAYCOLLECT={**good, "CALLBACK_TOKENS": KEY, "ENCRYPTION_KEYS": value}):
        found = [m for m in run_checks(databases=[]) if m.id.startswith("paycollect.")]
    assert [m.id for m in found] == ([check_id] if check_id else [])
    shown = " ".join(f"{m.msg} {m.hint}" for m in found)
    assert KEY not in shown  # a key, even a weak one, is never shown
    assert "short-key" not in shown


@pytest.mark.django_db
def test_community_stores_keys_encrypted_and_shows_last_four_only():
    community = Community(community_id="c-9", name="Club")
    community.api_key = "abcdefgh-secret-9876"
    community.basic_credentials = "user:password-4321"
    community.save()
    stored = Community.objects.values("api_key_encrypted", "basic_credentials_encrypted").get()
    assert "abcdefgh" not in stored["api_key_encrypted"]
    assert "password" not in stored["basic_credentials_encrypted"]
    fresh = Community.objects.get()
    assert fresh.api_key == "abcdefgh-secret-9876"
    assert fresh.api_key_last4 == "9876"
    assert fresh.basic_credentials_last4 == "4321"
    assert "secret" not in repr(fresh)
    assert "secret" not in str(fresh)


def _legacy_row(community_id="c-legacy"):
    with keys([LEGACY_KEY]):
        Community.objects.create(community_id=community_id)  # save() has nothing to rewrite yet
    Community.objects.filter(community_id=community_id).update(
        api_key_encrypted=LEGACY_API_KEY, api_key_last4="9876"
    )


@pytest.mark.django_db
def test_saving_a_row_writes_its_keys_again_in_the_current_format_with_the_current_key():
    _legacy_row()
    with keys([NEW, LEGACY_KEY]):
        row = Community.objects.get()
        row.name = "renamed"
        row.save()
    stored = Community.objects.get().api_key_encrypted
    assert not stored.startswith("pcx1:")
    assert decrypts(stored, [NEW]) == "api-key-from-before-9876"


@pytest.mark.django_db
def test_rotate_keys_command_rewrites_what_needs_it_and_is_idempotent(capsys):
    _legacy_row()
    with keys([OLD]):
        fresh = Community(community_id="c-old")
        fresh.api_key = "older-key-0123456789"
        fresh.basic_credentials = "user:older-password"
        fresh.save()
    with keys([NEW]):
        current = Community(community_id="c-current")
        current.api_key = "current-key-0123456789"
        current.save()
    untouched = Community.objects.get(community_id="c-current").api_key_encrypted
    with keys([NEW, OLD, LEGACY_KEY]):
        call_command("paycollect_rotate_keys")
        assert "2 communities' stored keys encrypted again" in capsys.readouterr().out
        after = dict(Community.objects.values_list("community_id", "api_key_encrypted"))
        call_command("paycollect_rotate_keys")  # again: nothing left to do, nothing changed
        assert "0 communities'" in capsys.readouterr().out
    assert dict(Community.objects.values_list("community_id", "api_key_encrypted")) == after
    assert after["c-current"] == untouched
    with keys([NEW]):  # the older keys can go now
        assert [row.api_key for row in Community.objects.order_by("community_id")] == [
            "current-key-0123456789",
            "api-key-from-before-9876",
            "older-key-0123456789",
        ]
        assert Community.objects.get(community_id="c-old").basic_credentials == "user:older-password"


@pytest.mark.django_db
def test_rotate_keys_command_names_the_rows_no_key_decrypts_and_still_rewrites_the_others():
    _legacy_row("c-lost")
    with keys([OLD]):
        Community.objects.create(
            community_id="c-old", api_key_encrypted=crypto.encrypt("older-key-0123456789")
        )
    with keys([NEW, OLD]), pytest.raises(CommandError, match="communities c-lost: put the key"):
        call_command("paycollect_rotate_keys")
    assert (
        decrypts(Community.objects.get(community_id="c-old").api_key_encrypted, [NEW])
        == "older-key-0123456789"
    )
    assert Community.objects.get(community_id="c-lost").api_key_encrypted == LEGACY_API_KEY
