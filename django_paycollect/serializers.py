"""DRF serializers for the service layer's inputs (callback bodies and browser return parameters are
:mod:`django_paycollect.intake.parsing`'s).

The spec's rules (names, phones, currencies, amounts, recurring fields) live once, in
``django_paycollect.client.validation.Checker``; the fields here call it, so a rule never drifts
between the client and the forms, admin and API that feed the service layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from . import problem_messages
from .amounts import ZERO, AmountField
from .client import CURRENCIES, DEFAULT_CURRENCY, DEFAULT_PAY_USING
from .client.validation import Checker


def _spec_rule(rule: Callable[..., Any], **options: Any) -> Callable[[Any], Any]:
    """A DRF validator running one of the client's checks on the field's value (its messages in the
    active language)."""

    def validate(value: Any) -> Any:
        check = Checker()
        rule(check, "value", value, **options)
        if check.problems:
            raise serializers.ValidationError(
                [problem_messages.message(p) for problems in check.problems.values() for p in problems]
            )
        return value

    return validate


class RecurringTermsSerializer(serializers.Serializer[dict[str, Any]]):
    expiry_date = serializers.DateField()
    minimum_days_between_payments = serializers.IntegerField(min_value=1)


class BillingDataSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField(max_length=200, validators=[_spec_rule(Checker.person_name)])
    email = serializers.EmailField()
    phone_number = serializers.CharField(max_length=32, validators=[_spec_rule(Checker.phone)])


class StartPaymentSerializer(serializers.Serializer[dict[str, Any]]):
    amount = AmountField()
    currency = serializers.ChoiceField(choices=CURRENCIES, default=DEFAULT_CURRENCY)
    pay_using = serializers.CharField(max_length=40, default=DEFAULT_PAY_USING)
    billing_data = BillingDataSerializer()
    merchant_reference = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    community_id = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    variable_amount_id = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    membership_id = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    recurring = RecurringTermsSerializer(required=False, allow_null=True, default=None)
    promocode_id = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    custom_fields = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        default=list,
        validators=[_spec_rule(lambda check, path, value: check.custom_field_values(value))],
    )
    language = serializers.CharField(max_length=16, required=False, allow_null=True, default=None)


class CustomFieldDefinitionSerializer(serializers.Serializer[dict[str, Any]]):
    field_label = serializers.CharField(max_length=200)
    field_type = serializers.ChoiceField(choices=["TEXT", "NUMBER", "CHECKBOX", "DROPDOWNLIST"])
    # DRF's metaclass takes declared fields off the class, so this does not shadow Field.required.
    required = serializers.BooleanField(required=False, allow_null=True, default=None)  # type: ignore[assignment]
    field_choices = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        check = Checker()
        check.custom_field_definitions([attrs])
        if check.problems:
            raise serializers.ValidationError(
                {
                    path.rsplit(".", 1)[-1]: problem_messages.messages(problems)
                    for path, problems in check.problems.items()
                }
            )
        return attrs


class TagSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.IntegerField(min_value=1)
    name = serializers.CharField(max_length=100)


class DirectOrderSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField(max_length=200)
    amount = AmountField()
    currency = serializers.ChoiceField(choices=CURRENCIES, default=DEFAULT_CURRENCY)
    payment_methods = serializers.ListField(child=serializers.CharField(max_length=40), min_length=1)
    customer_name = serializers.CharField(max_length=200, validators=[_spec_rule(Checker.person_name)])
    customer_email = serializers.EmailField()
    customer_mobile = serializers.CharField(max_length=32, validators=[_spec_rule(Checker.phone)])
    community_id = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    # Optional by being left out (the service layer leaves out a Python caller's None); null is refused.
    discount_amount = AmountField(required=False, default=None)
    vat_percentage = AmountField(required=False, default=None, minimum=ZERO, maximum=Decimal(100))
    recurring = RecurringTermsSerializer(required=False, allow_null=True, default=None)
    custom_fields = CustomFieldDefinitionSerializer(many=True, required=False, default=list)
    tags = TagSerializer(many=True, required=False, default=list)
    order_description = serializers.CharField(required=False, allow_blank=True, default="")
    address = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    customer_title = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    send_by_email = serializers.BooleanField(default=False)
    cc_email = serializers.EmailField(required=False, allow_blank=True, default="")
    send_by_sms = serializers.BooleanField(default=False)
    redirect_url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
    callback_url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
    paid = serializers.BooleanField(default=False)
    merchant_reference = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        discount = attrs.get("discount_amount")
        if discount is not None and discount >= attrs["amount"]:
            raise serializers.ValidationError({"discount_amount": [_("Must be less than the amount.")]})
        return attrs


def error_messages(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's error detail as ``{"dotted.path": [messages]}``."""
    if not isinstance(detail, (Mapping, list)):
        return {prefix: [str(detail)]}
    # A list's items are at the path itself, as non-field errors are.
    items = detail.items() if isinstance(detail, Mapping) else [("non_field_errors", item) for item in detail]
    out: dict[str, list[str]] = {}
    for key, value in items:
        name = "" if key == "non_field_errors" else str(key)
        path = f"{prefix}.{name}" if prefix and name else (prefix or name)
        for inner, messages in error_messages(value, path).items():
            out.setdefault(inner, []).extend(messages)
    return out
