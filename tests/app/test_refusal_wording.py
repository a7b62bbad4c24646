"""The service layer's refusals are worded when they are read, in the language active then: the admin and
the REST API show them in the language of the request, while what is kept as a record (a callback's error,
a reconciliation finding, a log line) stays English."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from django_paycollect import services
from django_paycollect.amounts import parse_amount
from django_paycollect.exceptions import (
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceUnavailable,
    StateConflict,
    describe_error,
)
from django_paycollect.models import ApiCall, RecurringSeries, Refund, Transaction
from django_paycollect.services.config import community_config

live = pytest.mark.django_db(transaction=True)


def refusal_of(call, *args, **kwargs) -> PaymentRefused | StateConflict:
    with pytest.raises((PaymentRefused, StateConflict)) as caught:
        call(*args, **kwargs)
    return caught.value


def read_in(language: str, error: Exception) -> dict[str, list[str]]:
    with translation.override(language):
        return error.message_dict  # type: ignore[attr-defined, no-any-return]


def local(community_id: str, **fields) -> Transaction:
    values = {"community_id": community_id, "total_amount": Decimal("100.00")}
    return Transaction.objects.create(**{**values, **fields})


def test_an_amount_refused_by_the_service_layer_reads_in_the_language_it_is_read_in():
    refused = refusal_of(parse_amount, 10.5, "amount")
    assert read_in("en", refused)["amount"][0].startswith("Pass amounts as Decimal (e.g. Decimal('12.50'))")
    assert "not the float 10.5" in read_in("en", refused)["amount"][0]
    arabic = read_in("ar", refused)["amount"][0]
    assert arabic.startswith("مرّر المبالغ بصيغة Decimal")
    assert "10.5" in arabic
    assert read_in("ar", refusal_of(parse_amount, Decimal("1.005"), "amount")) == {
        "amount": ["القيمة 1.005 فيها أكثر من منزلتين عشريتين؛ المبالغ دقيقة حتى 0.01 ولا تُقرَّب أبدًا."]
    }
    assert read_in("ar", refusal_of(parse_amount, None, "amount")) == {"amount": ["هذا الحقل مطلوب."]}
    # A record of it is English whatever the language of who raised or reads it.
    with translation.override("ar"):
        assert describe_error(refused).startswith("PaymentRefused: Pass amounts as Decimal")


@live
def test_refusals_of_the_state_read_in_arabic_and_their_records_in_english(paycollect_in_process):
    community = paycollect_in_process.community_id
    unpaid = local(community, status=Transaction.PENDING, uuid="0b0b0b0b-1111-4222-8333-444455556666")
    captured = local(
        community, status=Transaction.SUCCESSFUL, capture_state=Transaction.CAPTURE_DONE, uuid="c-1"
    )
    paid = local(community, status=Transaction.SUCCESSFUL, uuid="p-1", refunded_amount=Decimal("5.00"))
    done = Refund.objects.create(transaction=paid, amount=Decimal("5.00"), state=Refund.SUCCEEDED)
    series = RecurringSeries.objects.create(
        parent_uuid="s-1", community_id=community, cancel_state=RecurringSeries.CANCEL_DONE
    )
    refusals = {
        "refund": refusal_of(services.refund, unpaid, Decimal("1.00")),
        "over": refusal_of(services.refund, paid, Decimal("500.00")),
        "changed": refusal_of(services.refund, paid, Decimal("1.00"), expected_refundable=Decimal("100.00")),
        "capture": refusal_of(services.capture, unpaid),
        "again": refusal_of(services.capture, captured),
        "cancel": refusal_of(services.cancel_recurring, series),
        "settle": refusal_of(services.resolve_refund, done, succeeded=True),
    }
    assert {name: type(refusal).__name__ for name, refusal in refusals.items()} == dict.fromkeys(
        refusals, "StateConflict"
    )
    arabic = {
        name: " ".join(read_in("ar", refusal)[field][0] for field in refusal.message_dict)
        for name, refusal in refusals.items()
    }
    assert arabic == {
        "refund": "لا يُسترد إلا مبلغ معاملة ناجحة (الحالة PENDING).",
        "over": "لا يمكن استرداد أكثر من 95.00 EGP بعد الآن.",
        "changed": (
            "تغيّر المبلغ القابل للاسترداد في الأثناء من 100.00 إلى 95.00 EGP (استرداد آخر؟)؛ لم يُرسل شيء."
        ),
        "capture": "لا يُحصَّل المبلغ المحجوز إلا لمعاملة ناجحة (الحالة PENDING).",
        "again": "طُلب تحصيل المبلغ المحجوز من قبل: حُصِّل المبلغ المحجوز.",
        "cancel": "السلسلة في حالة ملغاة بالفعل.",
        "settle": "لا يُسوّى يدويًا إلا استرداد نتيجته غير معروفة أو معلّق منذ مدة طويلة (الحالة: نجحت).",
    }
    with translation.override("ar"):
        assert describe_error(refusals["again"]) == "StateConflict: Capture already captured."
        assert describe_error(refusals["settle"]) == (
            "StateConflict: Only a refund of unknown outcome or long pending is settled by hand (succeeded)."
        )
    assert paycollect_in_process.control.journal("refund") == []  # refused before anything was sent


@pytest.mark.django_db
def test_a_configuration_error_and_a_service_out_of_reach_read_in_arabic(settings):
    with pytest.raises(PayCollectConfigurationError) as caught:
        community_config("c-nowhere")
    with translation.override("ar"):
        assert caught.value.messages == [
            "المجتمع c-nowhere ليس له سجل Community بمفتاح للواجهة البرمجية، "
            "وليس هو PAYCOLLECT['COMMUNITY_ID']"
        ]
        assert describe_error(caught.value).startswith(
            "PayCollectConfigurationError: community c-nowhere has no"
        )
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": ""}
    with pytest.raises(PayCollectConfigurationError) as caught:
        community_config()
    with translation.override("ar"):
        assert caught.value.messages == ["الإعداد settings.PAYCOLLECT['API_KEY'] مطلوب"]
    assert str(caught.value) == "settings.PAYCOLLECT['API_KEY'] is required"
    # Out of reach: the client's words (hosts, settings) stay in str() and the record; people are told
    # that nothing was done, in their language.
    unavailable = ServiceUnavailable("could not connect to http://127.0.0.1:9/x/")
    with translation.override("ar"):
        assert unavailable.messages == ["يتعذّر الوصول إلى خدمة الدفع؛ لم يُنفَّذ شيء. حاول مرة أخرى بعد قليل."]
        assert describe_error(unavailable) == "ServiceUnavailable: could not connect to http://127.0.0.1:9/x/"
    assert unavailable.messages == [
        "The payment service cannot be reached; nothing was done. Try again in a moment."
    ]


# --- the service's refusals of fields we know ------------------------------------------------------------

PAYER = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}
#: The sandbox's words (the service's, in English) for a phone it refuses and an expired promocode.
SERVICE_PHONE_WORDS = "Enter a phone number prefixed with its country code"
SERVICE_PROMOCODE_WORDS = "Promocode not found."


@live
def test_a_phone_the_service_refuses_is_told_in_our_words_and_its_own_are_kept_in_the_record(
    paycollect_in_process,
):
    # Our rule lets +2010012 through (7 digits after the +); the service wants 10 to 15.
    refused = refusal_of(
        services.start_payment,
        amount=Decimal("100.00"),
        billing_data={**PAYER, "phone_number": "+2010012"},
        merchant_reference="refused-phone",
    )
    assert read_in("en", refused) == {
        "billing_data.phone_number": [
            "The payment service did not accept this mobile number: check it, with + and the country code "
            "(for example +201001234567)."
        ]
    }
    assert read_in("ar", refused) == {
        "billing_data.phone_number": [
            "لم تقبل خدمة الدفع رقم الهاتف المحمول هذا: تحقّق منه، مع علامة + ورمز الدولة "
            "(مثلًا \u2066+201001234567\u2069)."
        ]
    }
    # The service's own words: in the stored envelope, the rejected payment's error (the admin shows both)
    # and the client's error behind the refusal.
    call = ApiCall.objects.get(operation="pay")
    assert SERVICE_PHONE_WORDS in str(call.errors)
    assert refused.record.status == Transaction.REJECTED
    assert SERVICE_PHONE_WORDS in Transaction.objects.get(pk=refused.record.pk).last_error
    assert SERVICE_PHONE_WORDS in str(refused.__cause__)
    with translation.override("ar"):
        assert SERVICE_PHONE_WORDS in describe_error(refused)


@live
def test_a_promocode_the_service_refuses_is_told_in_our_words_once(paycollect_in_process):
    for code in ("EXPIRED20", "NO-SUCH-CODE"):
        refused = refusal_of(
            services.validate_promocode, code, amount=Decimal("100.00"), phone_number="+201001234567"
        )
        assert read_in("en", refused) == {"name": ["This promocode is unknown or no longer valid."]}
        assert read_in("ar", refused) == {"name": ["هذا الرمز الترويجي غير معروف أو لم يعد صالحًا."]}
    stored = [call.errors for call in ApiCall.objects.filter(operation="validate_promocode")]
    assert SERVICE_PROMOCODE_WORDS in str(stored)
    # The phone the promocode is checked for, refused by the service: the phone's message, not the
    # promocode's.
    refused = refusal_of(
        services.validate_promocode, "SAVE10", amount=Decimal("100.00"), phone_number="+2010012"
    )
    assert list(read_in("en", refused)) == ["phone_number"]
    assert read_in("en", refused)["phone_number"][0].startswith(
        "The payment service did not accept this mobile"
    )


@live
def test_a_customer_s_mobile_the_service_refuses_on_a_direct_order_is_told_in_our_words(
    paycollect_in_process,
):
    refused = refusal_of(
        services.create_direct_order,
        name="Invoice",
        amount=Decimal("100.00"),
        payment_methods=["card"],
        customer_name="Omar Said",
        customer_email="omar@example.com",
        customer_mobile="+2010012",
    )
    assert list(read_in("ar", refused)) == ["customer_mobile"]
    assert read_in("ar", refused)["customer_mobile"][0].startswith("لم تقبل خدمة الدفع رقم الهاتف المحمول")
