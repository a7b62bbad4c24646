"""The admin renders every stored callback, whatever its body: lone surrogates, bytes that are not UTF-8,
NaN, nesting past any recursion limit, megabytes. A change page that answers 500 hides the very callback a
person needs to look at.

Every kind of body the callback fuzz generates is sent through the view, then the stored row's change page
is rendered; explicit examples pin each kind down.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from hypothesis import given

from django_paycollect.models import ReceivedCallback
from tests.hypothesis_profiles import examples
from tests.support.payments import CALLBACK_TOKEN

from .support import Deep, Obj, Raw, encode, fuzz_settings, render
from .test_fuzz_callback import (  # noqa: F401  (fixtures)
    UUIDS,
    Mutated,
    Request,
    ingest_only,
    mutated_callbacks,
    requests_,
    send,
    with_secret,
)

pytestmark = pytest.mark.django_db(transaction=True)
ingest = pytest.mark.usefixtures("ingest_only")

URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"
CALLBACK = {"transaction_uuid": UUIDS[0], "transaction_status": "SUCCESSFUL"}


def callback_with(*pairs: tuple[Any, Any]) -> str:
    return render(Obj((*CALLBACK.items(), *pairs)))


#: One body of each kind of invalid (and odd but valid) callback the fuzz produces.
KINDS: dict[str, bytes] = {
    "lone surrogate escape": callback_with(("Note", Raw('"\\ud800"'))).encode(),
    "lone surrogate key": callback_with((Raw('"Note\\udfff"'), 1)).encode(),
    "reversed surrogate pair": callback_with(("message", Raw('"\\udfff\\ud800"'))).encode(),
    "raw surrogate bytes": encode(render({**CALLBACK, "Note": "\ud800"}, ascii_only=False)),
    "bytes that are not UTF-8": b'{"transaction_uuid": "\xff\xfe\xfd", "transaction_status": "\xc3"}',
    "binary": bytes(range(256)) * 4,
    "UTF-16": encode(render(CALLBACK), "utf-16"),
    "UTF-32 with a NUL": encode(callback_with(("Note", "a\x00b")), "utf-32"),
    "NUL escape": callback_with(("message", Raw('"a\\u0000b"'))).encode(),
    "NaN": callback_with(("total_amount", Raw("NaN"))).encode(),
    "NaN text everywhere": b'{"NaN": NaN, "Infinity": [Infinity, -Infinity]}',
    "a number of 5000 digits": callback_with(("total_amount", Raw("1" * 5000))).encode(),
    "1e400": callback_with(("total_amount_piasters", Raw("1e400"))).encode(),
    "nesting 50,000 deep (lists)": render(Deep(50_000, "list", 1)).encode(),
    "nesting 5,000 deep (objects)": callback_with(("Notes", Deep(5000, "dict", "x"))).encode(),
    "nesting 900 deep (parses, then fails a recursive walk)": callback_with(
        ("N", Deep(900, "list", 1))
    ).encode(),
    "not JSON": b"transaction_uuid=1&transaction_status=SUCCESSFUL",
    "not an object": b"[1, 2, 3]",
    "empty": b"",
    "wrong types": render({"transaction_uuid": [1], "transaction_status": {"a": None}}).encode(),
    "a broken token": b'{"transaction_uuid": tru',
    "markup": callback_with(("Note", "</pre><script>alert(1)</script>")).encode(),
    "above the size limit": callback_with(("Note", "\u00e9" * 40_000)).encode(),
}


def change_page(client: Client, row: ReceivedCallback) -> Any:
    return client.get(f"/admin/paycollect/receivedcallback/{row.pk}/change/")


@ingest
def test_the_change_page_of_every_kind_of_stored_body_renders(admin_client):
    for kind, body in KINDS.items():
        response = send(Client(), Request("POST", URL, 0, True, body, {"CONTENT_LENGTH": str(len(body))}))
        assert response.status_code < 500, kind
        row = ReceivedCallback.objects.latest("pk")
        page = change_page(admin_client, row)
        assert page.status_code == 200, kind
        assert "<script>alert(1)</script>" not in page.content.decode(), kind
    assert ReceivedCallback.objects.count() == len(KINDS)
    assert admin_client.get("/admin/paycollect/receivedcallback/").status_code == 200


@ingest
def test_a_body_of_megabytes_renders(admin_client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_CALLBACK_BYTES": 8 * 1024 * 1024}
    text = callback_with(("Notes", ["\ud800 " * 100, Deep(900, "list", "x")] * 50), ("Big", "z" * 3_000_000))
    body = encode(text)
    assert len(body) > 3_000_000
    response = send(Client(), Request("POST", URL, 0, True, body, {"CONTENT_LENGTH": str(len(body))}))
    assert response.status_code in (200, 400)
    assert change_page(admin_client, ReceivedCallback.objects.get()).status_code == 200


@ingest
def test_the_change_pages_of_fuzzed_requests_render(admin_client):
    seen = 0

    @fuzz_settings(300)
    @given(requests_())
    def run(request: Request) -> None:
        nonlocal seen
        last = ReceivedCallback.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        send(Client(), request)
        for row in ReceivedCallback.objects.filter(pk__gt=last):
            assert change_page(admin_client, row).status_code == 200, request
            seen += 1

    run()
    assert seen >= examples(300) // 3  # a third of arbitrary requests reach the view and are stored


@pytest.mark.usefixtures("with_secret")
def test_the_change_pages_of_fuzzed_callbacks_render(admin_client):
    seen = 0

    @fuzz_settings(150)
    @given(mutated_callbacks())
    def run(case: Mutated) -> None:
        nonlocal seen
        meta = {"CONTENT_LENGTH": str(len(case.body)), "CONTENT_TYPE": "application/json"}
        last = ReceivedCallback.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        send(Client(), Request("POST", URL, 0, True, case.body, meta))
        for row in ReceivedCallback.objects.filter(pk__gt=last):
            assert change_page(admin_client, row).status_code == 200, case
            seen += 1

    run()
    assert seen >= examples(150)  # every one is stored
