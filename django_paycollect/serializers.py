"""DRF serializers for what comes in: inputs of the service layer, callback bodies and browser return
parameters (and, later, the optional REST API).

The spec's rules (names, phones, currencies, amounts, recurring fields) live once, in
``django_paycollect.client.validation.Checker``; the fields here call it, so a rule never drifts
between the client and the forms, admin and API that feed the service layer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, cast

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from . import problem_messages
from .client import CURRENCIES, DEFAULT_CURRENCY, DEFAULT_PAY_USING
from .client.validation import Checker
from .ids import canonical_uuid, looks_like_uuid


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


def money_field(**kwargs: Any) -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=14, decimal_places=2, min_value=Decimal("0.01"), coerce_to_string=False, **kwargs
    )


class RecurringTermsSerializer(serializers.Serializer[dict[str, Any]]):
    expiry_date = serializers.DateField()
    minimum_days_between_payments = serializers.IntegerField(min_value=1)


class BillingDataSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField(max_length=200, validators=[_spec_rule(Checker.person_name)])
    email = serializers.EmailField()
    phone_number = serializers.CharField(max_length=32, validators=[_spec_rule(Checker.phone)])


class StartPaymentSerializer(serializers.Serializer[dict[str, Any]]):
    amount = money_field()
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
    amount = money_field()
    currency = serializers.ChoiceField(choices=CURRENCIES, default=DEFAULT_CURRENCY)
    payment_methods = serializers.ListField(child=serializers.CharField(max_length=40), min_length=1)
    customer_name = serializers.CharField(max_length=200, validators=[_spec_rule(Checker.person_name)])
    customer_email = serializers.EmailField()
    customer_mobile = serializers.CharField(max_length=32, validators=[_spec_rule(Checker.phone)])
    community_id = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)
    discount_amount = money_field(required=False, allow_null=True, default=None)
    vat_percentage = serializers.DecimalField(
        max_digits=5,
        decimal_places=2,
        min_value=Decimal(0),
        max_value=Decimal(100),
        required=False,
        allow_null=True,
        default=None,
        coerce_to_string=False,
    )
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


class RefundSerializer(serializers.Serializer[dict[str, Any]]):
    """A refund's amount once :func:`~django_paycollect.services.refund_amount` has read it: at least 0.01."""

    amount = money_field()


# --- what the service sends back: callback bodies and browser return parameters -----------------
#
# Nothing read here is trusted: these serializers only say which transaction a message is about
# and keep what it claims for the record. Verification fetches the transaction from the service.

#: Top-level keys of the spec's callback body; every other key is a custom field (labels may hold spaces).
CALLBACK_FIELDS = frozenset(
    {
        "total_amount_piasters",
        "total_amount",
        "transaction_uuid",
        "transaction_id",
        "transaction_status",
        "member_id",
        "payment_id",
        "merchant_id",
        "message",
        "recurring",
    }
)


class TransactionUuidField(serializers.CharField):
    """A transaction uuid, in its canonical form (lower case, with dashes) whatever spelling was sent."""

    default_error_messages = {"not_uuid": _("Not a transaction uuid.")}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value and not looks_like_uuid(value):
            self.fail("not_uuid")
        return canonical_uuid(value)


def claimed_uuid(attrs: dict[str, Any]) -> str:
    """The uuid of ``transaction_uuid``, or of a ``transaction_id`` holding one (the spec's example).

    A numeric ``transaction_id`` is the service's integer id: it names no uuid, so it is ignored here.
    Both keys naming different uuids is a contradiction, not something to pick from.
    """
    uuid: str = attrs.get("transaction_uuid") or ""
    other = attrs.get("transaction_id")
    if isinstance(other, str) and looks_like_uuid(other):
        other = canonical_uuid(other)
        if uuid and canonical_uuid(uuid) != other:
            raise serializers.ValidationError(
                {"transaction_id": [_("Names another transaction than transaction_uuid.")]}
            )
        uuid = uuid or other
    return uuid


class TransactionIdField(serializers.Field):  # type: ignore[type-arg]
    """``transaction_id``: the uuid (the spec's example callback) or the integer id (Pay's answer)."""

    default_error_messages = {"invalid": _("Must be a transaction uuid or an integer id.")}

    def to_internal_value(self, data: Any) -> str | int:
        if isinstance(data, bool) or not isinstance(data, (str, int)):
            self.fail("invalid")
        if isinstance(data, str) and not (looks_like_uuid(data) or data.strip().isdigit()):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def error_messages(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's error detail as ``{"dotted.path": [messages]}``."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name)
            for inner, messages in error_messages(value, path).items():
                out.setdefault(inner, []).extend(messages)
    elif isinstance(detail, list):
        for item in detail:
            for inner, messages in error_messages(item, prefix).items():
                out.setdefault(inner, []).extend(messages)
    else:
        out.setdefault(prefix, []).append(str(detail))
    return out


class HintsSerializer(serializers.Serializer[dict[str, Any]]):
    """A serializer whose fields are hints, except ``strict_fields``: a malformed hint is read as if it
    had not been sent, and its errors are kept in ``hint_errors`` (dotted paths, nested hints
    included) instead of making the whole input invalid."""

    strict_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hint_errors: dict[str, list[str]] = {}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        self.hint_errors = {}
        if isinstance(data, Mapping):
            kept = dict(data)
            for name, hint in self.fields.items():
                if name in self.strict_fields or name not in data:
                    continue
                if isinstance(hint, HintsSerializer):
                    hint.hint_errors = {}  # run_validation skips to_internal_value for a null
                try:
                    hint.run_validation(data[name])
                except serializers.ValidationError as exc:
                    self.hint_errors.update(error_messages(exc.detail, name))
                    del kept[name]
                else:
                    if isinstance(hint, HintsSerializer):
                        self.hint_errors.update(error_messages(hint.hint_errors, name))
            data = kept
        value: dict[str, Any] = super().to_internal_value(data)
        return value


class RecurringClaimSerializer(HintsSerializer):
    is_sub_payment = serializers.BooleanField(required=False, allow_null=True, default=None)
    parent_transaction = TransactionUuidField(required=False, allow_null=True, allow_blank=True, default="")


class CallbackBodySerializer(HintsSerializer):
    """The claims of a callback body, tolerant of the spec's variants.

    Only ``transaction_uuid`` and ``transaction_id`` say which transaction to fetch: a uuid that is not one,
    or two naming different transactions, make the body invalid. Every other field is a hint that is
    never applied (verification fetches the transaction): a malformed one is stored as not sent and named
    in ``hint_errors``, and the callback is kept and verified all the same. Amounts are numbers or decimal
    text (JSON numbers must be parsed as Decimal); ``member_id`` null or text; ``recurring`` an object.
    Custom fields (any other key) are not read here.
    """

    strict_fields = ("transaction_uuid",)

    transaction_uuid = TransactionUuidField(required=False, allow_blank=True, default="")
    transaction_id = TransactionIdField(required=False, allow_null=True, default=None)
    transaction_status = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    total_amount = serializers.DecimalField(
        max_digits=14, decimal_places=2, required=False, allow_null=True, default=None, coerce_to_string=False
    )
    total_amount_piasters = serializers.IntegerField(
        min_value=0, max_value=2**63 - 1, required=False, allow_null=True, default=None
    )
    member_id = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    payment_id = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    merchant_id = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    message = serializers.CharField(
        max_length=5000, required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    recurring = RecurringClaimSerializer(required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        uuid = claimed_uuid(attrs)
        if not uuid:
            raise serializers.ValidationError(
                {"transaction_uuid": [_("Required (or a transaction_id holding the uuid).")]}
            )
        attrs["transaction_uuid"] = uuid
        if not attrs.get("transaction_status") and "transaction_status" not in self.hint_errors:
            # Every callback the spec shows says a status: one without is noted, and still verified.
            self.hint_errors["transaction_status"] = [gettext("No status was sent.")]
        return attrs


class _CharRule:
    """What one of the serializer's CharFields accepts, read from its declaration."""

    def __init__(self, field: serializers.CharField) -> None:
        self.max_length: int | None = field.max_length
        self.allow_blank = field.allow_blank
        self.allow_null = field.allow_null
        self.trim = field.trim_whitespace


def _char(rule: _CharRule, value: Any) -> Any:
    """The serializer's result for ``value``, or ``_SLOW`` when only the serializer can tell."""
    if value is None:
        return None if rule.allow_null else _SLOW
    if not isinstance(value, str):
        return _SLOW  # numbers become text in DRF: left to it
    text = value.strip() if rule.trim else value
    if "\x00" in text or (not text.isascii() and _has_surrogate(text)):
        return _SLOW  # DRF refuses NUL and lone surrogates: its messages say so
    if not text and not rule.allow_blank:
        return _SLOW
    if rule.max_length is not None and len(text) > rule.max_length:
        return _SLOW
    return text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SLOW = object()
_BODY = CallbackBodySerializer._declared_fields
_CHARS = {
    name: _CharRule(cast(serializers.CharField, _BODY[name]))
    for name in ("member_id", "payment_id", "merchant_id", "message")
}
_STATUS = _CharRule(cast(serializers.CharField, _BODY["transaction_status"]))
_UUID = _CharRule(cast(serializers.CharField, _BODY["transaction_uuid"]))
_AMOUNT = cast(serializers.DecimalField, _BODY["total_amount"])
_PIASTERS = cast(serializers.IntegerField, _BODY["total_amount_piasters"])
_PARENT = _CharRule(
    cast(serializers.CharField, RecurringClaimSerializer._declared_fields["parent_transaction"])
)
_CENTS = Decimal("0.01")
_PLACES: int = _AMOUNT.decimal_places or 0
_WHOLE_DIGITS: int = (_AMOUNT.max_digits or 0) - _PLACES
_PIASTERS_RANGE: tuple[int, int] = (int(_PIASTERS.min_value or 0), int(_PIASTERS.max_value or 0))


def _uuid(rule: _CharRule, value: Any) -> Any:
    text = _char(rule, value)
    if text is _SLOW or not text:
        return text
    return canonical_uuid(text) if looks_like_uuid(text) else _SLOW


def _amount(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        return _SLOW
    number = Decimal(value)
    if not number.is_finite():
        return _SLOW
    exponent = number.as_tuple().exponent
    # From the exponent, never through int(): a number of thousands of digits must not be converted.
    whole_digits = max(number.adjusted() + 1, 0) if number else 0
    if not isinstance(exponent, int) or exponent < -_PLACES:
        return _SLOW
    if whole_digits > _WHOLE_DIGITS:
        return _SLOW
    return number.quantize(_CENTS)


def _piasters(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return _SLOW
    return value if _PIASTERS_RANGE[0] <= value <= _PIASTERS_RANGE[1] else _SLOW


def _recurring(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        return _SLOW
    sub = value.get("is_sub_payment")
    if sub is not None and not isinstance(sub, bool):
        return _SLOW
    parent = _uuid(_PARENT, value.get("parent_transaction", ""))
    if parent is _SLOW:
        return _SLOW
    return {"is_sub_payment": sub, "parent_transaction": parent if parent is not None else None}


def fast_callback_claims(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]] | None:
    """``CallbackBodySerializer``'s ``validated_data`` and ``hint_errors`` for a body in the plain shapes
    the service sends (text as text, amounts as numbers), without DRF's per-instance machinery; None when
    the body needs the serializer (anything else, malformed hints, errors), which then decides.

    The rules are the serializer's own: lengths, blank and null come from its declared fields, the uuid
    rules from the same helpers. A test compares both on the same bodies.
    """
    data: dict[str, Any] = {}
    uuid = _uuid(_UUID, document.get("transaction_uuid", ""))
    status = _char(_STATUS, document.get("transaction_status", ""))
    other = document.get("transaction_id")
    if uuid is _SLOW or status is _SLOW or uuid is None or status is None:
        return None
    if other is not None and (isinstance(other, bool) or not isinstance(other, (str, int))):
        return None
    if isinstance(other, str) and not (looks_like_uuid(other) or other.strip().isdigit()):
        return None
    data["transaction_uuid"], data["transaction_id"], data["transaction_status"] = uuid, other, status
    for name, read in (
        ("total_amount", _amount),
        ("total_amount_piasters", _piasters),
        ("recurring", _recurring),
    ):
        value = read(document.get(name))
        if value is _SLOW:
            return None
        data[name] = value
    for name, rule in _CHARS.items():
        if name in document:
            value = _char(rule, document[name])
            if value is _SLOW:
                return None
            data[name] = value
    try:
        data["transaction_uuid"] = claimed_uuid(data)
    except serializers.ValidationError:
        return None
    if not data["transaction_uuid"]:
        return None
    hints = {} if data["transaction_status"] else {"transaction_status": ["No status was sent."]}
    return data, hints


_SERVICE_ID_TEXT = re.compile(r"[0-9]{1,18}")


def service_id_of(value: Any) -> int | None:
    """The service's numeric transaction id in ``value`` (ASCII digits, above zero), or None."""
    text = value.strip() if isinstance(value, str) else ""
    if not _SERVICE_ID_TEXT.fullmatch(text):
        return None
    return int(text) or None


class ReturnParametersSerializer(serializers.Serializer[dict[str, Any]]):
    """Query parameters of a browser return: the Pay set, the Direct order set, or the spec's variant
    with ``member_id`` and a ``transaction_id`` (holding a uuid, or the service's numeric id).

    Only the uuid, or else the numeric id (``service_id``), is used: to find our transaction, which is
    then fetched. Amounts, status and member id are kept as text for the log, so a malformed claim
    never stops a customer's return. Custom fields of a direct order are further parameters and are
    not read.
    """

    transaction_uuid = TransactionUuidField(required=False, allow_blank=True, default="")
    transaction_id = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    transaction_status = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    amount = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    amount_piasters = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    total_amount = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    total_amount_piasters = serializers.CharField(max_length=32, required=False, allow_blank=True, default="")
    member_id = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["transaction_uuid"] = claimed_uuid(attrs)
        attrs["service_id"] = None if attrs["transaction_uuid"] else service_id_of(attrs["transaction_id"])
        return attrs
