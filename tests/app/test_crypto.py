"""Encryption at rest of stored community keys."""

import pytest
from django.test import override_settings

from django_paycollect import crypto
from django_paycollect.models import Community


def test_round_trip_and_ciphertext_hides_the_plaintext():
    token = crypto.encrypt("live-key-0123456789")
    assert "live-key" not in token
    assert token.startswith("pcx1:")
    assert crypto.decrypt(token) == "live-key-0123456789"


def test_same_plaintext_encrypts_differently_each_time():
    assert crypto.encrypt("same") != crypto.encrypt("same")


def test_tampered_ciphertext_is_refused():
    token = crypto.encrypt("secret-value")
    prefix, key_id, body = token.split(":")
    flipped = body[:-4] + ("A" if body[-4] != "A" else "B") + body[-3:]
    with pytest.raises(crypto.DecryptionError):
        crypto.decrypt(f"{prefix}:{key_id}:{flipped}")


@pytest.mark.parametrize("garbage", ["", "plain text", "pcx1:x:%%%", "pcx9:abc:AAAA"])
def test_garbage_is_refused_with_a_decryption_error(garbage):
    with pytest.raises(crypto.DecryptionError):
        crypto.decrypt(garbage)


def test_rotation_first_key_encrypts_all_keys_decrypt():
    with override_settings(PAYCOLLECT={"ENCRYPTION_KEYS": ["old-key"]}):
        old = crypto.encrypt("api-key-1")
    with override_settings(PAYCOLLECT={"ENCRYPTION_KEYS": ["new-key", "old-key"]}):
        assert crypto.decrypt(old) == "api-key-1"
        assert crypto.needs_reencryption(old)
        assert not crypto.needs_reencryption(crypto.encrypt("api-key-1"))
    with (
        override_settings(PAYCOLLECT={"ENCRYPTION_KEYS": ["new-key"]}),
        pytest.raises(crypto.DecryptionError),
    ):
        crypto.decrypt(old)


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
