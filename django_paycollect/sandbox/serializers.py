"""Request validation with DRF serializers: their nested error dicts map straight onto the spec's error list
(``billing_data`` errors nested one level deeper, as the spec shows).

Input is read tolerantly where the spec is loose (amounts as JSON numbers or decimal text, booleans as
"true", currency in any case) and strictly where money is at stake (at most two decimals, positive).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from . import conf
from .money import CURRENCIES, DEFAULT_CURRENCY

# A country code first: "+" optional, no leading 0 (a local number), 10 to 15 digits in all.
PHONE_RE = re.compile(r"^\+?[1-9]\d{9,14}$")
CUSTOM_FIELD_TYPES = ("TEXT", "NUMBER", "CHECKBOX", "DROPDOWNLIST")
APP_MODULES = ("Service", "Bill", "Event", "Product", "Training", "Sport", "Course")


def one_of(allowed: Sequence[str]) -> str:
    return gettext("Must be one of %(allowed)s.") % {"allowed": ", ".join(allowed)}


def not_one_of(item: Any, allowed: Sequence[str]) -> str:
    text = gettext("%(item)s is not one of %(allowed)s.")
    return text % {"item": repr(item), "allowed": ", ".join(allowed)}


def validate_phone(value: str) -> str:
    compact = re.sub(r"[\s\-()]", "", value)
    if not PHONE_RE.match(compact):
        raise serializers.ValidationError(
            gettext("Enter a phone number prefixed with its country code, e.g. +201001234567.")
        )
    return compact


def validate_full_name(value: str) -> str:
    parts = value.split()
    if len(parts) < 2:
        raise serializers.ValidationError(gettext("Enter a first and a last name separated by a space."))
    return " ".join(parts)


def check_maximum(value: Decimal) -> None:
    limit = conf.get_settings().max_amount
    if value > limit:
        raise serializers.ValidationError(
            gettext("Ensure this amount is at most %(limit)s.") % {"limit": limit}, code="max_amount"
        )


class MoneyField(serializers.DecimalField):
    """A positive amount with at most two decimals, at most MAX_AMOUNT; JSON numbers arrive as Decimal
    (parse_float=Decimal)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", Decimal("0.01"))
        super().__init__(max_digits=14, decimal_places=2, **kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        if isinstance(data, bool | float):
            # float cannot reach here from JSON (parsed as Decimal); refusing it keeps binary floats out.
            self.fail("invalid")
        value: Decimal = super().to_internal_value(data)
        check_maximum(value)
        return value


class CurrencyField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        value = str(super().to_internal_value(data)).upper()
        if value not in CURRENCIES:
            raise serializers.ValidationError(one_of(CURRENCIES))
        return value


class ScalarField(serializers.Field):  # type: ignore[type-arg]
    """A custom field value: string, number or boolean."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str | bool | int | Decimal):
            return data
        raise serializers.ValidationError(gettext("Must be a string, a number or a boolean."))

    def to_representation(self, value: Any) -> Any:
        return value


class PayUsingField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        value = str(super().to_internal_value(data)).lower()
        known = conf.pay_using_values()
        if value not in known:
            raise serializers.ValidationError(one_of(known))
        return value


class BillingDataSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    email = serializers.EmailField(max_length=254)
    phone_number = serializers.CharField(max_length=32)

    def validate_name(self, value: str) -> str:
        return validate_full_name(value)

    def validate_phone_number(self, value: str) -> str:
        return validate_phone(value)


class CustomFieldValueSerializer(serializers.Serializer):  # type: ignore[type-arg]
    field_label = serializers.CharField(max_length=200)
    field_value = ScalarField()


class PrepareAmountSerializer(serializers.Serializer):  # type: ignore[type-arg]
    community_id = serializers.CharField(max_length=64)
    amount = MoneyField()
    currency = CurrencyField(required=False, allow_null=True, default=DEFAULT_CURRENCY)
    selected_payment_method = PayUsingField(required=False, allow_null=True, default="card")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["currency"] = attrs.get("currency") or DEFAULT_CURRENCY
        attrs["selected_payment_method"] = attrs.get("selected_payment_method") or "card"
        return attrs


ORIGINAL_AMOUNT_REQUIRED = _(
    "This field is required: the service cost without fees (amount is what is charged). The spec marks it "
    "required; a sandbox with REQUIRE_ORIGINAL_AMOUNT set to false (settings or _control/config) accepts "
    "a payment without it."
)


class PaySerializer(serializers.Serializer):  # type: ignore[type-arg]
    community_id = serializers.CharField(max_length=64)
    amount = MoneyField(required=False)
    amount_piasters = serializers.IntegerField(required=False, min_value=1)
    original_amount = MoneyField(required=False, allow_null=True)
    currency = CurrencyField(required=False, allow_null=True, default=DEFAULT_CURRENCY)
    variable_amount_id = serializers.IntegerField()
    pay_using = PayUsingField(required=False, allow_null=True, default="card")
    billing_data = BillingDataSerializer()
    membership_id = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=128)
    is_recurring = serializers.BooleanField(required=False, allow_null=True)
    expiry_date = serializers.DateField(required=False, allow_null=True, input_formats=["%Y-%m-%d"])
    minimum_days_between_payments = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    promocode_id = serializers.IntegerField(required=False, allow_null=True)
    custom_fields = CustomFieldValueSerializer(many=True, required=False, allow_null=True)
    language = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=16)

    def to_internal_value(self, data: Any) -> Any:
        # A missing amount is reported with the other field errors, not only once they are fixed.
        errors: dict[str, Any] = {}
        value: Any = None
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            errors = dict(exc.detail) if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        if isinstance(data, dict) and data.get("amount") is None and data.get("amount_piasters") is None:
            errors.setdefault("amount", [gettext("This field is required.")])
        if (
            isinstance(data, dict)
            and data.get("original_amount") is None
            and self.context.get("require_original_amount", True)
        ):
            errors.setdefault("original_amount", [str(ORIGINAL_AMOUNT_REQUIRED)])
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["currency"] = attrs.get("currency") or DEFAULT_CURRENCY
        attrs["pay_using"] = attrs.get("pay_using") or "card"
        amount = attrs.get("amount")
        piasters = attrs.get("amount_piasters")
        # The spec's kiosk example carries amount_piasters in place of amount and does not say which wins:
        # either is enough, and when both come they must agree.
        if amount is not None and piasters is not None and amount * 100 != piasters:
            raise serializers.ValidationError({"amount_piasters": [gettext("Does not match amount.")]})
        if amount is None:
            attrs["amount"] = (Decimal(int(piasters or 0)) / 100).quantize(Decimal("0.01"))
            try:
                check_maximum(attrs["amount"])
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"amount_piasters": exc.detail}) from None
        if attrs.get("is_recurring"):
            errors: dict[str, list[str]] = {}
            if not attrs.get("expiry_date"):
                errors["expiry_date"] = [gettext("Required for a recurring payment (YYYY-MM-DD).")]
            if not attrs.get("minimum_days_between_payments"):
                errors["minimum_days_between_payments"] = [gettext("Required for a recurring payment.")]
            if attrs["pay_using"] != "card":
                errors["pay_using"] = [gettext("Recurring payments are charged to a card; use card.")]
            if errors:
                raise serializers.ValidationError(errors)
        labels = [item["field_label"] for item in attrs.get("custom_fields") or []]
        if len(labels) != len(set(labels)):
            raise serializers.ValidationError(
                {"custom_fields": [gettext("Each field_label may appear once.")]}
            )
        return attrs


class TransactionUuidSerializer(serializers.Serializer):  # type: ignore[type-arg]
    transaction_uuid = serializers.UUIDField()


class RefundBodySerializer(TransactionUuidSerializer):
    refund_amount = MoneyField()


class PromocodeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=64)
    community_id = serializers.CharField(max_length=64)
    phone_number = serializers.CharField(max_length=32)
    amount = MoneyField()
    currency = CurrencyField()
    payment_for = serializers.CharField(max_length=32)
    variable_amount_id = serializers.CharField(max_length=32)

    def validate_phone_number(self, value: str) -> str:
        return validate_phone(value)


class MoneyAmountSerializer(serializers.Serializer):  # type: ignore[type-arg]
    amount = MoneyField()
    currency = CurrencyField(required=False, allow_null=True, default=DEFAULT_CURRENCY)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["currency"] = attrs.get("currency") or DEFAULT_CURRENCY
        return attrs


class DiscountSerializer(MoneyAmountSerializer):
    amount = MoneyField(min_value=Decimal("0.00"))


class CustomFieldDefinitionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    field_label = serializers.CharField(max_length=200)
    field_type = serializers.CharField()
    # A field named like Field.required: DRF's metaclass moves declared fields off the class, so no clash.
    required = serializers.BooleanField(  # type: ignore[assignment]
        required=False, allow_null=True, default=False
    )
    field_choices = serializers.CharField(required=False, allow_blank=True, allow_null=True)

    def validate_field_type(self, value: str) -> str:
        upper = value.upper()
        if upper not in CUSTOM_FIELD_TYPES:
            raise serializers.ValidationError(one_of(CUSTOM_FIELD_TYPES))
        return upper

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["required"] = bool(attrs.get("required"))
        choices = [c.strip() for c in (attrs.get("field_choices") or "").split(",") if c.strip()]
        if attrs["field_type"] == "DROPDOWNLIST" and not choices:
            raise serializers.ValidationError(
                {"field_choices": [gettext("A DROPDOWNLIST needs comma-separated choices.")]}
            )
        attrs["field_choices"] = ",".join(choices) if attrs["field_type"] == "DROPDOWNLIST" else None
        return attrs


class TagSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField(max_length=100)


class TagsField(serializers.Field):  # type: ignore[type-arg]
    """An array of {id, name} as the examples send; a comma-separated string of names is tolerated too."""

    def to_internal_value(self, data: Any) -> list[dict[str, Any]]:
        if isinstance(data, str):
            return [{"id": None, "name": name.strip()} for name in data.split(",") if name.strip()]
        serializer = TagSerializer(data=data, many=True)
        if not serializer.is_valid():
            raise serializers.ValidationError(serializer.errors)
        return [dict(item) for item in serializer.validated_data]

    def to_representation(self, value: Any) -> Any:
        return value


class DirectOrderSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    community_id = serializers.CharField(max_length=64)
    amount = MoneyAmountSerializer()
    payment_methods = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    customer_name = serializers.CharField(max_length=200)
    customer_email = serializers.EmailField(max_length=254)
    customer_mobile = serializers.CharField(max_length=32)
    discount_amount = DiscountSerializer(required=False, allow_null=True)
    allow_recurring_payments = serializers.BooleanField(required=False, allow_null=True)
    expiry_date = serializers.DateField(required=False, allow_null=True, input_formats=["%Y-%m-%d"])
    minimum_days_between_payments = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    custom_fields = CustomFieldDefinitionSerializer(many=True, required=False, allow_null=True)
    order_description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    address = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=500)
    customer_title = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=64)
    vat_percentage = serializers.DecimalField(
        max_digits=6,
        decimal_places=3,
        min_value=Decimal("0"),
        max_value=Decimal("100"),
        required=False,
        allow_null=True,
    )
    send_by_email = serializers.BooleanField(required=False, allow_null=True)
    cc_email = serializers.EmailField(required=False, allow_blank=True, allow_null=True)
    send_by_sms = serializers.BooleanField(required=False, allow_null=True)
    redirect_url = serializers.URLField(required=False, allow_blank=True, allow_null=True, max_length=2000)
    callback_url = serializers.URLField(required=False, allow_blank=True, allow_null=True, max_length=2000)
    paid = serializers.BooleanField(required=False, allow_null=True)
    tags = TagsField(required=False, allow_null=True)

    def validate_customer_name(self, value: str) -> str:
        return validate_full_name(value)

    def validate_customer_mobile(self, value: str) -> str:
        return validate_phone(value)

    def validate_payment_methods(self, value: list[str]) -> list[str]:
        known = conf.pay_using_values()
        methods: list[str] = []
        for item in value:
            lowered = item.strip().lower()
            if lowered not in known:
                raise serializers.ValidationError(
                    gettext("%(item)s is not a payment method (%(known)s).")
                    % {"item": repr(item), "known": ", ".join(known)}
                )
            if lowered not in methods:
                methods.append(lowered)
        return methods

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        discount = attrs.get("discount_amount")
        if discount:
            if discount["currency"] != attrs["amount"]["currency"]:
                errors["discount_amount"] = {"currency": [gettext("Must be the currency of amount.")]}
            elif discount["amount"] >= attrs["amount"]["amount"]:
                errors["discount_amount"] = {"amount": [gettext("Must be less than the amount.")]}
        if attrs.get("allow_recurring_payments"):
            if not attrs.get("expiry_date"):
                errors["expiry_date"] = [gettext("Required for a recurring order (YYYY-MM-DD).")]
            if not attrs.get("minimum_days_between_payments"):
                errors["minimum_days_between_payments"] = [gettext("Required for a recurring order.")]
        labels = [item["field_label"] for item in attrs.get("custom_fields") or []]
        if len(labels) != len(set(labels)):
            errors["custom_fields"] = [gettext("Each field_label may appear once.")]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class CreateCommunitySerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    logo = serializers.FileField()
    app_modules = serializers.CharField(required=False, allow_blank=True)
    registered_name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    address = serializers.CharField(required=False, allow_blank=True, max_length=500)
    email = serializers.EmailField(required=False, allow_blank=True)
    phone = serializers.CharField(required=False, allow_blank=True, max_length=32)
    payment_methods = serializers.CharField(required=False, allow_blank=True)
    kiosk_processor = serializers.CharField(required=False, allow_blank=True)
    wallet_processor = serializers.CharField(required=False, allow_blank=True)
    redirect_successful_only = serializers.URLField(required=False, allow_blank=True, max_length=2000)

    def validate_logo(self, value: Any) -> Any:
        limit = conf.get_settings().logo_max_bytes
        if value.size > limit:
            raise serializers.ValidationError(
                gettext("The logo may be at most %(limit)s bytes.") % {"limit": limit}
            )
        head = value.read(8)
        value.seek(0)
        if logo_content_type(head) is None:
            raise serializers.ValidationError(gettext("Upload a png or jpg image."))
        return value

    def validate_app_modules(self, value: str) -> list[str]:
        canonical = {m.lower(): m for m in APP_MODULES}
        modules: list[str] = []
        for item in _comma_list(value):
            if item.lower() not in canonical:
                raise serializers.ValidationError(not_one_of(item, APP_MODULES))
            modules.append(canonical[item.lower()])
        return modules

    def validate_payment_methods(self, value: str) -> list[str]:
        names = conf.community_payment_method_names()
        methods: list[str] = []
        for item in _comma_list(value):
            if item.lower() not in names:
                allowed = ["Card", "Kiosk", *[n for n in names if n not in ("card", "kiosk")]]
                raise serializers.ValidationError(not_one_of(item, allowed))
            methods.append(names[item.lower()])
        return methods

    def validate_kiosk_processor(self, value: str) -> str:
        names = conf.get_settings().network_names
        allowed = [names["bill_network"], names["kiosk_network"]]
        if value and value.lower() not in [a.lower() for a in allowed]:
            raise serializers.ValidationError(one_of(allowed))
        return value or names["kiosk_network"]

    def validate_wallet_processor(self, value: str) -> str:
        allowed = conf.get_settings().wallet_processors
        if value and value.lower() not in [a.lower() for a in allowed]:
            raise serializers.ValidationError(one_of(allowed))
        return value

    def validate_phone(self, value: str) -> str:
        return validate_phone(value) if value else value


def logo_content_type(head: bytes) -> str | None:
    """Judge the logo by its content, not its name or declared type: a renamed text file is still refused."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    return None


def _comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
