"""The fast reading of a callback body's claims (``intake.fastpath.fast_callback_claims``) against the one
parser, ``intake.parsing.CallbackBodySerializer``, whose rules it shares: on every generated body, in English
and in Arabic, it either defers to the parser (None) or gives exactly the parser's ``validated_data`` and
``hint_errors``, the hints' words included.

1,000 bodies mixing the spec's shapes with the values the serializer refuses or converts: numbers as text,
text as numbers, blanks, nulls, booleans, uuids in every spelling, amounts with three decimals or fifteen
digits, recurring blocks of every shape.
"""

from __future__ import annotations

import uuid as uuid_lib
from decimal import Decimal

from django.utils import translation
from hypothesis import example, given
from hypothesis import strategies as st

from django_paycollect.intake.fastpath import fast_callback_claims
from django_paycollect.intake.parsing import CallbackBodySerializer
from tests.fuzz.support import fuzz_settings

UUID = "3f1c2a9e-8b7d-4c6e-9f00-1b2c3d4e5f60"
uuids = st.sampled_from([UUID, UUID.upper(), UUID.replace("-", ""), str(uuid_lib.UUID(int=7)), "not-a-uuid"])
texts = st.one_of(st.text(max_size=8), st.sampled_from(["", "  ", " x ", "x" * 101, "x" * 5001]))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, max_value=10**13, min_value=-(10**13)),
    st.sampled_from([Decimal("100"), Decimal("100.5"), Decimal("1E+3"), Decimal("12345678901234.5")]),
    texts,
    uuids,
)
recurrings = st.one_of(
    st.none(),
    scalars,
    st.fixed_dictionaries(
        {},
        optional={
            "is_sub_payment": st.one_of(st.booleans(), st.none(), scalars),
            "parent_transaction": st.one_of(uuids, st.none(), scalars),
            "type": texts,
        },
    ),
)
amounts = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=10**6),
    st.none(),
)
# The shapes the service sends, with room for what the serializer trims, refuses or converts.
plain_bodies = st.fixed_dictionaries(
    {
        "transaction_uuid": st.one_of(uuids, st.just("")),
        "transaction_status": st.sampled_from(["SUCCESSFUL", "PENDING", "FAILED", "", " PENDING "]),
    },
    optional={
        "transaction_id": st.one_of(uuids, st.integers(min_value=0, max_value=10**6), st.just("123")),
        "total_amount": amounts,
        "total_amount_piasters": st.one_of(st.integers(min_value=-1, max_value=10**8), st.none()),
        "member_id": st.one_of(st.none(), st.text(max_size=8)),
        "payment_id": st.one_of(st.none(), st.text(max_size=8)),
        "merchant_id": st.one_of(st.none(), st.text(max_size=8)),
        "message": st.one_of(st.none(), texts),
        "recurring": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "is_sub_payment": st.one_of(st.booleans(), st.none()),
                    "parent_transaction": st.one_of(uuids, st.none(), st.just("")),
                },
            ),
        ),
    },
)
noisy_bodies = st.fixed_dictionaries(
    {},
    optional={
        "transaction_uuid": st.one_of(uuids, scalars),
        "transaction_id": st.one_of(uuids, st.integers(min_value=0, max_value=10**6), scalars),
        "transaction_status": st.one_of(st.sampled_from(["SUCCESSFUL", "PENDING", "", "ON_HOLD"]), scalars),
        "total_amount": scalars,
        "total_amount_piasters": scalars,
        "member_id": scalars,
        "payment_id": scalars,
        "merchant_id": scalars,
        "message": scalars,
        "recurring": recurrings,
        "Branch": texts,
    },
)
bodies = st.one_of(plain_bodies, noisy_bodies)


@fuzz_settings(1000)
@given(bodies, st.sampled_from(["en", "ar"]))
@example(
    {"transaction_uuid": UUID, "transaction_status": "SUCCESSFUL", "total_amount": Decimal("100.00")}, "en"
)
@example(
    {"transaction_id": UUID.upper(), "transaction_status": "PENDING", "recurring": {"is_sub_payment": 1}},
    "en",
)
@example({"transaction_uuid": UUID, "transaction_id": str(uuid_lib.UUID(int=7))}, "en")
@example(
    {"transaction_uuid": UUID, "total_amount": Decimal("1" * 5000 + ".0")}, "en"
)  # too many digits for int()
@example({"transaction_uuid": UUID, "total_amount": Decimal("123456789012.34")}, "en")
@example({"transaction_uuid": UUID}, "ar")  # no status: a hint, in the active language either way
def test_the_fast_reading_agrees_with_the_parser_or_defers_to_it(body, language):
    with translation.override(language):
        fast = fast_callback_claims(body)
        if fast is None:
            return
        serializer = CallbackBodySerializer(data=body)
        assert serializer.is_valid(), (body, serializer.errors)
    data, hints = fast
    assert data == serializer.validated_data
    assert hints == serializer.hint_errors


def test_the_spec_s_callback_takes_the_fast_path():
    body = {
        "transaction_uuid": UUID,
        "transaction_id": UUID,
        "transaction_status": "SUCCESSFUL",
        "total_amount": Decimal("150.00"),
        "total_amount_piasters": 15000,
        "member_id": None,
        "payment_id": "9f1b",
        "merchant_id": "42",
        "message": "Paid",
        "recurring": {"is_sub_payment": False, "parent_transaction": UUID},
        "Branch": "Cairo",
    }
    serializer = CallbackBodySerializer(data=body)
    assert serializer.is_valid()
    assert fast_callback_claims(body) == (serializer.validated_data, {})


def test_a_body_without_a_status_is_noted_in_the_active_language_by_both_readings():
    body = {"transaction_uuid": UUID, "total_amount": Decimal("150.00")}
    for language, words in (("en", "No status was sent."), ("ar", "لم تُرسل أي حالة.")):
        with translation.override(language):
            serializer = CallbackBodySerializer(data=body)
            assert serializer.is_valid()
            assert fast_callback_claims(body) == (serializer.validated_data, {"transaction_status": [words]})
