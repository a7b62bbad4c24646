"""The callback endpoint's edge: which requests are callbacks at all (the token, the method, the size, a JSON
object), the shared secret, the client's address, and what is stored, answered and logged when something
fails. Requests go through Django's test client; the few that reach verification use the live sandbox.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connections
from django.urls import reverse
from django.utils.log import AdminEmailHandler

from django_paycollect import tasks
from django_paycollect.client.redaction import REDACTED
from django_paycollect.conf import DEFAULTS
from django_paycollect.intake import receive
from django_paycollect.models import Community, ReceivedCallback, Transaction
from django_paycollect.sandbox.envelope import dumps
from django_paycollect.services import callback_ledger
from tests.support.callbacks import URL, UUID, body_for, committed, live, post
from tests.support.payments import CALLBACK_TOKEN

# --- which requests are callbacks: the token, the method, the body --------------------------------------


@pytest.mark.django_db
def test_an_unknown_token_answers_404_stores_nothing_and_logs_one_line_without_it(client, caplog):
    caplog.set_level(logging.DEBUG)
    forged = "guessed-token-abcdefghijklmnop"
    response = post(client, body_for(), url=f"/paycollect/callback/{forged}/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 404
    assert not ReceivedCallback.objects.exists()
    lines = [r for r in caplog.records if r.name.startswith("django")]
    assert [r.getMessage() for r in lines] == ["callback refused: unknown token (from 203.0.113.9)"]
    assert forged not in caplog.text


@pytest.mark.django_db
def test_a_rotated_token_is_accepted_and_only_its_position_is_stored(client, settings, no_worker):
    old = "the-previous-token-still-configured"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": [CALLBACK_TOKEN, old]}
    assert post(client, body_for(), url=f"/paycollect/callback/{old}/").status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.token_index == 1
    stored = json.dumps(list(ReceivedCallback.objects.values()), default=str)
    assert old not in stored
    assert CALLBACK_TOKEN not in stored


@pytest.mark.django_db
def test_a_token_given_as_one_text_is_that_token_never_one_of_its_letters(client, settings, no_worker):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": CALLBACK_TOKEN}
    assert post(client, body_for(), url=f"/paycollect/callback/{CALLBACK_TOKEN[0]}/").status_code == 404
    assert post(client, body_for()).status_code == 200
    assert ReceivedCallback.objects.get().token_index == 0


@pytest.mark.django_db
def test_a_size_limit_that_cannot_be_read_is_the_default_never_an_error(client, settings, no_worker):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_CALLBACK_BYTES": "64 kilobytes"}  # paycollect.E010
    assert post(client, body_for()).status_code == 200
    too_big = body_for(Note="x" * DEFAULTS["MAX_CALLBACK_BYTES"])
    assert post(client, too_big).status_code == 413


@pytest.mark.django_db
def test_no_configured_token_accepts_nothing(client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": []}
    assert post(client, body_for()).status_code == 404
    assert receive.match_token("") is None
    assert not ReceivedCallback.objects.exists()


def test_tokens_are_compared_in_constant_time_with_every_configured_one(settings, monkeypatch):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": ["first-token-0123456789", "second-tok"]}
    compared = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(receive.hmac, "compare_digest", spy)
    assert receive.match_token("first-token-0123456789") == 0
    assert compared == [b"first-token-0123456789", b"second-tok"]  # no early exit
    assert receive.match_token("second-tok") == 1
    assert receive.match_token("second-to") is None
    assert receive.match_token("sécond-tok") is None  # non-ASCII compares as bytes, no TypeError


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "put", "delete", "head"])
def test_other_methods_answer_405_and_store_nothing(client, method):
    response = getattr(client, method)(URL)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert not ReceivedCallback.objects.exists()


@pytest.mark.django_db
def test_an_oversized_body_declared_so_is_refused_unread_and_recorded(client, no_worker):
    body = dumps(body_for(notes="x" * (DEFAULTS["MAX_CALLBACK_BYTES"] + 10)))
    response = post(client, body)
    assert response.status_code == 413
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert "above the limit of 65536 bytes" in callback.invalid_reason
    assert callback.body == ""
    assert callback.headers["content-length"] == str(len(body.encode()))
    no_worker.assert_not_called()


@pytest.mark.django_db
def test_a_body_longer_than_declared_limit_is_cut_and_recorded_truncated(client, settings, no_worker):
    """A sender whose Content-Length is missing or wrong: the body is read up to the limit, no further."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_CALLBACK_BYTES": 2048}
    body = dumps(body_for(notes="y" * 4000)).encode()
    response = client.post(URL, data=body, content_type="application/json", CONTENT_LENGTH="100")
    # Django reads what Content-Length says: a 100-byte prefix, not JSON.
    assert response.status_code == 400
    with mock.patch.object(receive, "_content_length", return_value=None):
        response = client.post(URL, data=body, content_type="application/json")
    assert response.status_code == 413
    callback = ReceivedCallback.objects.latest("pk")
    assert callback.state == ReceivedCallback.INVALID
    assert callback.body.endswith("[truncated]")
    assert len(callback.body) < 1100


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("transaction_uuid=abc&transaction_status=SUCCESSFUL", "the body is not JSON"),
        ("", "the body is not JSON"),
        ('{"transaction_uuid": "x",', "the body is not JSON"),
        (b"\xff\xfe\x00garbage", "the body is not JSON"),
        ('{"total_amount": NaN}', "the body is not JSON"),
        ("[" * 30_000 + "]" * 30_000, "the body is not JSON"),
        ("[1, 2]", "the body is not a JSON object"),
        ("null", "the body is not a JSON object"),
        ('"SUCCESSFUL"', "the body is not a JSON object"),
        ('{"transaction_uuid": "' + UUID + '", "transaction_status": "OK\\u0000"}', "NUL character"),
        ('{"transaction_uuid": "' + UUID + '", "transaction_status": "OK", "F\\ud800": 1}', "surrogate"),
    ],
    ids=["form", "empty", "cut", "binary", "nan", "deep", "array", "null", "string", "nul", "surrogate"],
)
def test_a_body_that_is_not_a_json_object_answers_400_and_is_stored_invalid(client, no_worker, body, reason):
    response = post(client, body)
    assert response.status_code == 400
    assert response.json()["received"] is False
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert reason in callback.invalid_reason
    assert "\x00" not in callback.body
    if body and isinstance(body, str) and len(body) < 1000:
        assert callback.body == body
    no_worker.assert_not_called()


# --- when storing or handing on fails, and what is logged -----------------------------------------------


@committed
def test_a_broker_that_cannot_be_reached_leaves_the_callback_stored_for_the_command(client, caplog):
    refused = ConnectionRefusedError("broker")
    with mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=refused):
        response = post(client, body_for())
    assert response.status_code == 200  # stored: the sender need not send it again
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.RECEIVED
    assert callback.error.startswith("could not be queued for verification at ")
    assert "(ConnectionRefusedError: broker); the sweep queues it again" in callback.error


@live
def test_under_atomic_requests_the_callback_and_its_failure_are_committed(
    client, paycollect_live, monkeypatch
):
    monkeypatch.setitem(connections.settings["default"], "ATOMIC_REQUESTS", True)
    monkeypatch.setitem(connections["default"].settings_dict, "ATOMIC_REQUESTS", True)
    assert post(client, body_for(UUID)).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED  # the failure record survived
    assert "NotFoundError" in callback.error
    assert callback.attempts == 1


@pytest.mark.django_db
def test_a_database_failure_answers_503_so_the_sender_tries_again(client, caplog):
    down = OperationalError("db down")
    with mock.patch.object(callback_ledger, "insert_callback", side_effect=down):
        response = post(client, body_for())
    assert response.status_code == 503
    assert CALLBACK_TOKEN not in caplog.text
    # Django's line for a 5xx stays, with the token redacted by the app's filter on django.request.
    served = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert served == [f"Service Unavailable: {URL.replace(CALLBACK_TOKEN, REDACTED)}"]


@pytest.mark.django_db
def test_a_callbacks_5xx_mailed_to_the_admins_bears_no_token(client):
    """Django mails a 5xx to ADMINS with its URL and META: the app's filter leaves the request out."""
    mailed: list[str] = []

    class Mailed(AdminEmailHandler):  # send_mail: Django's documented hook for what is sent
        def send_mail(self, subject: str, message: str, *args: Any, **kwargs: Any) -> None:
            mailed.append(f"{subject}\n{message}")

    handler, request_log = Mailed(), logging.getLogger("django.request")
    request_log.addHandler(handler)
    try:
        with mock.patch.object(callback_ledger, "insert_callback", side_effect=OperationalError("db down")):
            assert post(client, body_for()).status_code == 503
    finally:
        request_log.removeHandler(handler)
    [mail] = mailed
    assert f"Service Unavailable: {URL.replace(CALLBACK_TOKEN, REDACTED)}" in mail
    assert CALLBACK_TOKEN not in mail


@pytest.mark.django_db
def test_the_token_never_reaches_a_log_even_for_refused_callbacks(client, caplog, no_worker):
    caplog.set_level(logging.DEBUG)
    post(client, "not json")
    post(client, body_for(total_amount="x"))
    client.get(URL)
    post(client, body_for())
    assert caplog.records  # something was logged...
    assert CALLBACK_TOKEN not in caplog.text  # ...never the token (django.request would log the path)
    # Django's own 4xx lines are left out: the view wrote its own, without the token.
    assert not [r.getMessage() for r in caplog.records if r.name == "django.request"]


@pytest.mark.django_db
def test_the_url_works_without_its_trailing_slash(client, no_worker):
    assert post(client, body_for(), url=URL.rstrip("/")).status_code == 200
    assert reverse("paycollect:callback", kwargs={"token": "t"}) == "/paycollect/callback/t/"


# --- the shared secret echoed in the body -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("sent", [None, "", "wrong-secret", 12345, "echoed-secret-value-012345678"])
def test_a_missing_or_wrong_secret_answers_403_and_is_stored_invalid_without_it(
    client, secret_configured, no_worker, sent
):
    body = body_for()
    if sent is not None:
        body["paycollect secret"] = sent
    response = post(client, body)
    assert response.status_code == 403
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert callback.invalid_reason == (
        "the callback secret is missing" if sent is None else "the callback secret does not match"
    )
    assert callback.transaction_uuid == UUID  # what the forgery claimed, for the admin
    assert callback.dedupe_key is None
    assert "paycollect secret" not in callback.custom_fields
    if isinstance(sent, str) and sent:
        assert sent not in callback.body
        assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    no_worker.assert_not_called()


@pytest.mark.django_db
def test_the_right_secret_is_accepted_and_never_stored(client, secret_configured, no_worker, monkeypatch):
    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(receive.hmac, "compare_digest", lambda a, b: compared.append(b) or real(a, b))
    body = body_for(**{"paycollect secret": secret_configured, "Seats": 2})
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.QUEUED
    assert callback.custom_fields == {"Seats": 2}
    assert secret_configured not in callback.body
    assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    # Compared with both accepted secrets (rotation), each in constant time.
    assert [b"a-new-secret-not-yet-in-use-000", secret_configured.encode()] == compared[-2:]


@pytest.mark.django_db
def test_a_secret_spelled_with_json_escapes_is_still_redacted(client, secret_configured, no_worker):
    escaped = "".join(f"\\u{ord(c):04x}" for c in secret_configured)
    text = dumps(body_for())[:-1] + f', "paycollect secret": "{escaped}"}}'
    assert post(client, text).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert escaped not in callback.body
    assert secret_configured not in callback.body
    assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    assert json.loads(callback.body)["transaction_uuid"] == UUID


@pytest.mark.django_db
def test_our_secrets_are_scrubbed_from_bodies_refused_before_the_secret_is_read(
    client, secret_configured, no_worker
):
    text = f'{{"paycollect secret": "{secret_configured}", "note": "{CALLBACK_TOKEN}", "cut'
    assert post(client, text).status_code == 400
    callback = ReceivedCallback.objects.get()
    assert callback.invalid_reason == "the body is not JSON"
    assert secret_configured not in callback.body
    assert CALLBACK_TOKEN not in callback.body
    assert callback.body == '{"paycollect secret": "[redacted]", "note": "[redacted]", "cut'


@pytest.mark.django_db
def test_every_key_we_hold_is_scrubbed_from_a_stored_callback(client, settings, no_worker):
    """The default community's key and basic password, and a stored community's key, echoed anywhere."""
    api_key, password, stored_key = (
        settings.PAYCOLLECT["API_KEY"],
        "basic-password-42",
        "stored-key-0123456789",
    )
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASIC_CREDENTIALS": ("club", password)}
    community = Community(community_id="community-2")
    community.api_key = stored_key
    community.save()
    body = body_for(Echo=api_key, Again=stored_key, Note=f"pass {password}")
    assert post(client, body, HTTP_USER_AGENT=f"sender/1.0 ({stored_key})").status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.custom_fields == {"Echo": "[redacted]", "Again": "[redacted]", "Note": "pass [redacted]"}
    assert callback.headers["user-agent"] == "sender/1.0 ([redacted])"
    stored = json.dumps(list(ReceivedCallback.objects.values()), default=str)
    for secret in (api_key, password, stored_key):
        assert secret not in stored


@live
def test_with_the_right_secret_the_callback_is_verified(client, paycollect_live, pay, secret_configured):
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    assert post(client, body_for(txn.uuid, **{"paycollect secret": secret_configured})).status_code == 200
    assert ReceivedCallback.objects.get().state == ReceivedCallback.PROCESSED
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


# --- client IP behind proxies -------------------------------------------------------------------------


def nets(*entries: str) -> tuple[Any, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


@pytest.mark.parametrize(
    ("remote", "forwarded", "trusted", "expected"),
    [
        ("198.51.100.7", "", (), "198.51.100.7"),
        # Not behind a trusted proxy: X-Forwarded-For is the client's own claim and is ignored.
        ("198.51.100.7", "203.0.113.1", (), "198.51.100.7"),
        ("10.0.0.2", "203.0.113.1", ("10.0.0.0/8",), "203.0.113.1"),
        # Several hops: the right-most untrusted one; what is left of it may be forged.
        ("10.0.0.2", "1.2.3.4, 203.0.113.1, 10.0.0.9", ("10.0.0.0/8",), "203.0.113.1"),
        # Ports, as some proxies write them.
        ("10.0.0.2", "203.0.113.1:51234", ("10.0.0.0/8",), "203.0.113.1"),
        ("10.0.0.2", "[2001:db8::7]:443, 10.0.0.9:80", ("10.0.0.0/8",), "2001:db8::7"),
        ("10.0.0.2", "2001:db8::7", ("10.0.0.0/8",), "2001:db8::7"),
        ("10.0.0.2", '"[2001:DB8:0::7]"', ("10.0.0.0/8",), "2001:db8::7"),
        # IPv6 proxies, IPv4-mapped addresses, zone ids.
        ("fd00::2", "203.0.113.1", ("fd00::/8",), "203.0.113.1"),
        ("::ffff:10.0.0.2", "::ffff:203.0.113.1", ("10.0.0.2",), "203.0.113.1"),
        ("fe80::1%eth0", "", (), "fe80::1"),
        # Every hop is ours: the left-most.
        ("10.0.0.2", "10.0.0.5, 10.0.0.9", ("10.0.0.0/8",), "10.0.0.5"),
        ("10.0.0.2", "", ("10.0.0.0/8",), "10.0.0.2"),
        # Unreadable: nothing can be said.
        ("10.0.0.2", "unknown, 10.0.0.9", ("10.0.0.0/8",), None),
        ("", "203.0.113.1", (), None),
        ("not an address", "", (), None),
    ],
)
def test_the_client_ip_is_the_rightmost_address_not_a_trusted_proxy(remote, forwarded, trusted, expected):
    meta = {"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": forwarded}
    assert receive.client_ip(meta, nets(*trusted)) == expected


@pytest.mark.django_db
def test_a_stored_callback_and_a_redelivery_are_answered_alike(client, no_worker):
    first = post(client, body_for())
    again = post(client, body_for())  # a redelivery: the same answer
    for response in (first, again):
        assert response.status_code == 200
        assert response.json() == {"received": True}
        assert response["Content-Type"] == "application/json"
    assert ReceivedCallback.objects.count() == 2
    refused = post(client, "not json")
    assert (refused.status_code, refused.json()["received"]) == (400, False)


@pytest.mark.django_db
def test_the_client_ip_is_stored_from_the_trusted_proxies_setting(client, settings, no_worker, caplog):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TRUSTED_PROXIES": ["10.0.0.0/8", "oops"]}
    post(
        client,
        body_for(),
        REMOTE_ADDR="10.1.2.3",
        HTTP_X_FORWARDED_FOR="198.51.100.1, [2001:db8::7]:8443",
        HTTP_X_REQUEST_ID="req-1",
        HTTP_USER_AGENT="the-service/1.0",
    )
    callback = ReceivedCallback.objects.get()
    assert callback.remote_addr == "2001:db8::7"
    assert callback.headers == {
        "content-type": "application/json",
        "content-length": str(len(callback.body.encode())),
        "user-agent": "the-service/1.0",
        "x-forwarded-for": "198.51.100.1, [2001:db8::7]:8443",
        "x-request-id": "req-1",
    }
    assert "'oops' is not an address or network" in caplog.text
    # The default trusts no proxy.
    settings.PAYCOLLECT = {k: v for k, v in settings.PAYCOLLECT.items() if k != "TRUSTED_PROXIES"}
    post(client, body_for(status="FAILED"), REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert ReceivedCallback.objects.latest("pk").remote_addr == "10.1.2.3"
