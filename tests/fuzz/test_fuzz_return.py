"""Fuzz of the browser return and its status endpoint: whatever the query, never a 5xx, never the
success URL unless the stored transaction the query names is SUCCESSFUL, and never the failure URL unless it
is FAILED: a query it cannot read shows the neutral page ("not confirmed yet, do not pay again").

The database holds a PENDING, a SUCCESSFUL and a FAILED transaction (the SUCCESSFUL one with the service's
numeric id ``SUCCESSFUL_ID``, which a return may name alone), and a uuid only a callback named (a direct
order's payment we have not fetched yet). ``BASE_URL`` is a port where nothing listens, so
every fetch fails at once and an open transaction must show the waiting page; the fetch throttle is off,
so every request tries. Queries are the Pay set, the Direct order set (with custom fields) and the
spec's ``member_id`` + ``transaction_id`` variant, built from those uuids in many spellings, with
values mutated, keys repeated, huge and unicode values, broken percent-escapes and raw bytes, then sent
to ``<mount>/return/`` and ``<mount>/return/status/``; the two must agree.
"""

from __future__ import annotations

import re
import uuid as uuid_lib
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from html import unescape
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from django.http import QueryDict
from django.test import Client
from hypothesis import example, given
from hypothesis import strategies as st

from django_paycollect.ids import canonical_uuid
from django_paycollect.models import ApiCall, ReceivedCallback, Transaction
from django_paycollect.services.callback_ledger import dedupe_key
from tests.hypothesis_profiles import FULL, examples

from .support import fuzz_settings, production_recursion_limit, texts

pytestmark = pytest.mark.django_db(transaction=True)

RETURN = "/paycollect/return/"
STATUS = "/paycollect/return/status/"
SUCCESS_URL = "/shop/paid/"
FAILURE_URL = "/shop/cart/?payment=failed"
COMMUNITY = "tests-community"

PENDING = "6a0d2c4e-1b3f-4a5c-8d7e-9f0a1b2c3d4e"
SUCCESSFUL = "7b1e3d5f-2c40-4b6d-9e8f-0a1b2c3d4e5f"
FAILED = "8c2f4e60-3d51-4c7e-af90-1b2c3d4e5f60"
HEARD_OF = "9d305f71-4e62-4d8f-b0a1-2c3d4e5f6071"  # named by a callback, not stored as a transaction
UNKNOWN = "a0416082-5f73-4e90-81b2-3d4e5f607182"
SUCCESSFUL_ID = 4821  # the service's numeric id of the SUCCESSFUL transaction
UUIDS = [PENDING, SUCCESSFUL, FAILED, HEARD_OF, UNKNOWN]
MARKUP = "<script>alert(1)</script>"


@pytest.fixture
def seeded(settings: Any, closed_base_url: str) -> dict[str, str]:
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "BASE_URL": closed_base_url,
        "COMMUNITY_ID": COMMUNITY,
        "SUCCESS_URL": SUCCESS_URL,
        "FAILURE_URL": FAILURE_URL,
        "RETURN_TIMEOUT": (0.5, 0.5),
        "RETURN_FETCH_INTERVAL": 0,  # every request may fetch: the worst case
    }
    statuses = {PENDING: Transaction.PENDING, SUCCESSFUL: Transaction.SUCCESSFUL, FAILED: Transaction.FAILED}
    for uuid, status in statuses.items():
        Transaction.objects.create(
            uuid=uuid,
            service_id=SUCCESSFUL_ID if uuid == SUCCESSFUL else None,
            community_id=COMMUNITY,
            status=status,
            total_amount=Decimal("100.00"),
        )
    ReceivedCallback.objects.create(
        state=ReceivedCallback.PROCESSED,
        transaction_uuid=HEARD_OF,
        claimed_status="SUCCESSFUL",
        merchant_id=COMMUNITY,
        dedupe_key=dedupe_key(HEARD_OF, "SUCCESSFUL"),
    )
    return statuses


# --- queries -------------------------------------------------------------------------------------------


def spellings(uuid: str) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            uuid,
            uuid,
            uuid,
            uuid.upper(),
            uuid.replace("-", ""),
            f"  {uuid} ",
            f"\t{uuid}\n",
            "{" + uuid + "}",
            f"urn:uuid:{uuid}",
            uuid[:-1],
            uuid + "f",
            uuid.replace("-", "\u2010"),
            uuid + "\x00",
        ]
    )


uuid_values = st.one_of(
    st.sampled_from(UUIDS),
    st.sampled_from(UUIDS),
    st.sampled_from(UUIDS).flatmap(spellings),
    st.uuids().map(str),
    st.sampled_from(["", "0", "4821", "04821", " 4821 ", "4822", "-1", "null", MARKUP]),
    texts,
)
#: Values a mutated parameter takes: the spec's, then anything.
values = st.one_of(
    st.sampled_from(["100", "100.00", "10000", "SUCCESSFUL", "FAILED", "PENDING", "", "M-1", MARKUP]),
    texts,
    st.integers().map(str),
    st.sampled_from(["9" * 5000, "\u00e9" * 3000, "%", "%zz", "+", "&", "=", "a=b&c"]),
)


@dataclass(frozen=True)
class Query:
    pairs: tuple[tuple[str, str], ...]
    raw_suffix: str  # appended to the encoded query as is: broken escapes, bare keys, separators

    @property
    def string(self) -> str:
        """QUERY_STRING as a WSGI server passes it (the bytes as latin-1 text)."""
        encoded = urlencode(self.pairs, errors="surrogatepass").encode("ascii")
        return (encoded + self.raw_suffix.encode("utf-8", errors="surrogatepass")).decode("latin-1")


@st.composite
def queries(draw: st.DrawFn) -> Query:
    uuid = draw(uuid_values)
    kind = draw(st.sampled_from(["pay", "direct", "variant", "both", "none"]))
    status = draw(st.sampled_from(["SUCCESSFUL", "FAILED", "PENDING", "successful", ""]))
    pairs: list[tuple[str, str]]
    if kind == "pay":
        pairs = [("amount_piasters", "10000"), ("amount", "100"), ("transaction_uuid", uuid)]
        pairs.append(("transaction_status", status))
    elif kind == "direct":
        pairs = [("total_amount_piasters", "10000"), ("total_amount", "100.00"), ("transaction_uuid", uuid)]
        pairs.append(("transaction_status", status))
        pairs += draw(st.lists(st.tuples(texts, values), max_size=3))  # the order's custom fields
    elif kind == "variant":
        pairs = [("member_id", draw(values)), ("transaction_id", uuid)]
    elif kind == "both":
        pairs = [("transaction_uuid", uuid), ("transaction_id", draw(uuid_values))]
    else:
        pairs = draw(st.lists(st.tuples(texts, values), max_size=4))
    for _ in range(draw(st.integers(0, 3))):
        mutation = draw(st.sampled_from(["value", "repeat", "drop", "extra", "wait"]))
        if mutation == "value" and pairs:
            i = draw(st.integers(0, len(pairs) - 1))
            pairs[i] = (pairs[i][0], draw(values))
        elif mutation == "repeat":
            key = draw(
                st.sampled_from(["transaction_uuid", "transaction_id", "transaction_status", "amount"])
            )
            pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(uuid_values)))
        elif mutation == "drop" and pairs:
            del pairs[draw(st.integers(0, len(pairs) - 1))]
        elif mutation == "extra":
            pairs.append((draw(texts), draw(values)))
        elif mutation == "wait":
            wait = draw(
                st.one_of(
                    st.integers(-5, 100).map(str),
                    st.sampled_from(["39", "40", "1e3", " 7 ", "\uff17", "9" * 5000, "-0", ""]),
                )
            )
            pairs.append(("wait", wait))
    # More than DATA_UPLOAD_MAX_NUMBER_FIELDS query fields: Django answers 400 before the view sees them.
    if draw(st.sampled_from([False] * 30 + [True])):
        pairs += [(f"f{n}", "x") for n in range(1001)]  # above DATA_UPLOAD_MAX_NUMBER_FIELDS
    suffix = draw(
        st.sampled_from(
            ["", "", "", "&", "&&=&", "&transaction_uuid", "&%zz=%", ";transaction_uuid=x", "&a=%ff%fe"]
        )
    )
    if draw(st.sampled_from([False] * 9 + [True])):
        suffix += "&raw=" + quote(draw(st.binary(max_size=30)))
    return Query(tuple(pairs), suffix)


# --- what the two views answered ------------------------------------------------------------------


def get(client: Client, path: str, query: Query, method: str = "GET") -> Any:
    with production_recursion_limit():
        return client.generic(method, path, QUERY_STRING=query.string)


WAITING_STATUS_URL = re.compile(r'data-status-url="([^"]*)"')


def named_in(query: str) -> str:
    """The one transaction_uuid or transaction_id a URL's query passes on ("" when none)."""
    parsed = parse_qs(query)
    names = parsed.get("transaction_uuid", []) + parsed.get("transaction_id", [])
    assert len(names) <= 1, query
    return names[0] if names else ""


def outcome_of_return(response: Any) -> tuple[str, str]:
    """("success" | "failure" | "waiting" | "neutral" | "refused", the uuid or id the view used, or "")."""
    if response.status_code == 302:
        location = response["Location"]
        parts = urlsplit(location)
        uuid = named_in(parts.query)
        if location.startswith(SUCCESS_URL):
            return "success", uuid
        assert location.startswith("/shop/cart/?payment=failed"), location
        return "failure", uuid
    if response.status_code == 400:
        return "refused", ""
    assert response.status_code == 200, response.status_code
    content = response.content.decode()
    if 'id="paycollect-waiting"' not in content:
        # Nothing it could read: the neutral end state at once, with nothing to poll.
        assert '<section id="paycollect-unconfirmed">' in content
        assert "data-status-url" not in content
        assert "fail" not in content.lower()
        return "neutral", ""
    found = WAITING_STATUS_URL.search(content)
    assert found is not None
    status_url = unescape(found.group(1))
    assert status_url.startswith(STATUS)
    used = named_in(urlsplit(status_url).query)
    assert used
    return "waiting", used


def same_uuid(text: str, uuid: str) -> bool:
    return text.replace("-", "").lower() == uuid.replace("-", "").lower()


def candidates(query: Query) -> set[str]:
    """What the view may use: the (last) transaction_uuid or transaction_id, stripped, a uuid in its canonical
    form (an id as a number)."""
    parsed = QueryDict(query.string.encode("latin-1"))
    found = {(parsed.get(key) or "").strip() for key in ("transaction_uuid", "transaction_id")} - {""}
    numbers = {str(int(text)) for text in found if text.isascii() and text.isdigit()}
    return {canonical_uuid(text) for text in found} | numbers


def names_successful(used: str) -> bool:
    return same_uuid(used, SUCCESSFUL) or used == str(SUCCESSFUL_ID)


def test_the_return_and_its_status_never_fail_and_never_show_success_unless_paid(seeded):
    client = Client()
    tally: Counter[str] = Counter()
    transactions = Transaction.objects.count()

    @fuzz_settings(1200)
    @given(queries(), st.sampled_from(["GET"] * 8 + ["HEAD", "POST"]))
    @example(Query((("transaction_uuid", SUCCESSFUL), ("transaction_status", "FAILED")), ""), "GET")
    @example(Query((("transaction_uuid", PENDING), ("transaction_status", "SUCCESSFUL")), ""), "GET")
    @example(Query((("transaction_id", SUCCESSFUL.upper()), ("member_id", "M-1")), ""), "GET")
    @example(Query((("member_id", "M-1"), ("transaction_id", str(SUCCESSFUL_ID))), ""), "GET")
    @example(Query((("transaction_id", "4822"),), ""), "GET")
    @example(Query((("transaction_uuid", PENDING), ("transaction_uuid", SUCCESSFUL)), ""), "GET")
    @example(Query((("transaction_uuid", SUCCESSFUL), ("transaction_id", PENDING)), ""), "GET")
    @example(Query((("transaction_uuid", HEARD_OF), ("wait", "9" * 5000)), ""), "GET")
    def run(query: Query, method: str) -> None:
        response = get(client, RETURN, query, method)
        status = get(client, STATUS, query, method)
        # Django refuses a query of more than DATA_UPLOAD_MAX_NUMBER_FIELDS (1000) "&"-separated fields.
        too_many_fields = query.string.count("&") + 1 > 1000
        for answer in (response, status):
            assert answer.status_code < 500, (answer.status_code, answer.content[:500])
            assert "no-cache" in answer.get("Cache-Control", "") or answer.status_code in (400, 405)
            assert MARKUP.encode() not in answer.content
        if method == "POST":
            assert response.status_code == status.status_code == 405
            tally["405"] += 1
            return
        if too_many_fields:
            assert response.status_code == status.status_code == 400  # Django's SuspiciousOperation
            tally["too many fields"] += 1
            return
        if method == "HEAD":
            assert response.status_code in (200, 302)
            assert status.status_code in (200, 400)
            tally["HEAD"] += 1
            return

        outcome, used = outcome_of_return(response)
        tally[outcome] += 1
        if used:
            assert used in candidates(query), (used, query.string)
            assert used == canonical_uuid(used)
        # Success only for the stored SUCCESSFUL transaction, failure only for the FAILED one, whatever the
        # spelling of their uuid (capitals, no dashes, braces, urn:uuid:): the view uses the canonical form.
        if outcome == "success":
            assert names_successful(used)
            tally["success by numeric id"] += used == str(SUCCESSFUL_ID)
        elif outcome == "failure":
            assert same_uuid(used, FAILED)
        elif outcome == "neutral":
            assert not used
        elif outcome == "waiting":
            assert used not in (SUCCESSFUL, FAILED)
            assert response["Referrer-Policy"] == "same-origin"
        else:
            pytest.fail(f"the return answered {response.status_code}")
        if names_successful(used):
            assert outcome == "success"
        if same_uuid(used, FAILED):
            assert outcome == "failure"
        # The status endpoint agrees with the return.
        if outcome == "neutral":
            assert status.status_code == 400
            assert status.json() == {"status": "UNKNOWN"}
        else:
            assert status.status_code == 200
            expected = {"success": "SUCCESSFUL", "failure": "FAILED", "waiting": "PENDING"}[outcome]
            assert status.json() == {"status": expected}

    run()
    print(f"\nreturn fuzz: {dict(tally)}; fetches tried: {ApiCall.objects.count()}")
    assert tally.total() >= examples(1200)
    if FULL:
        for outcome in ("success", "failure", "waiting", "neutral", "405", "too many fields"):
            assert tally[outcome] >= 10, tally
        assert tally["success by numeric id"] >= 1, tally
    # Nothing was changed: the service could not be read, and a query is never believed.
    assert dict(Transaction.objects.values_list("uuid", "status")) == seeded
    assert Transaction.objects.count() == transactions
    assert ApiCall.objects.filter(operation="get_transaction").exists()  # the fetches were really tried


def test_uuids_generated_at_random_are_pending_and_never_fetched(seeded):
    """Guessing uuids tells nothing and costs the service nothing."""
    client = Client()

    @fuzz_settings(100)
    @given(st.uuids())
    def run(guess: uuid_lib.UUID) -> None:
        query = Query((("transaction_uuid", str(guess)),), "")
        assert get(client, STATUS, query).json() == {"status": "PENDING"}

    run()
    assert not ApiCall.objects.exists()
