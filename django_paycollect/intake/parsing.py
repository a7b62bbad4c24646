"""The one parser of what the service sends us: callback bodies and browser return parameters.

Nothing read here is trusted. What names the transaction decides (``transaction_uuid``, or a
``transaction_id`` holding the uuid; a return may name the service's numeric id instead): a uuid that is not
one, or two keys naming different transactions, and the message names nothing usable. Every other field is a
hint: a malformed one is read as if not sent and named in ``hint_errors`` (in the active language, as DRF's
own messages are), never a reason to refuse a callback or to lose a customer's return. Verification fetches
the transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from ..ids import canonical_uuid, looks_like_uuid
from ..serializers import error_messages

#: The hint noted on a callback that names no status (every callback the spec shows says one).
NO_STATUS_SENT = _("No status was sent.")


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


class TransactionIdField(serializers.Field):  # type: ignore[type-arg]
    """``transaction_id``: the uuid (the spec's example callback) or the integer id (Pay's answer)."""

    default_error_messages = {"invalid": _("Must be a transaction uuid or an integer id.")}

    def to_internal_value(self, data: Any) -> str | int:
        # A uuid as text, or an integer id (a number, or text of digits).
        if isinstance(data, str) and (looks_like_uuid(data) or data.strip().isdigit()):
            return data
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


_SERVICE_ID_TEXT = re.compile(r"[0-9]{1,18}")


def service_id_of(value: Any) -> int | None:
    """The service's numeric transaction id in ``value`` (ASCII digits, above zero), or None."""
    text = value.strip() if isinstance(value, str) else ""
    if not _SERVICE_ID_TEXT.fullmatch(text):
        return None
    return int(text) or None


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


class NamedTransactionSerializer(HintsSerializer):
    """What names the transaction in anything the service sends: ``transaction_uuid`` (decides: a value
    that is not a uuid makes the message unreadable), or a ``transaction_id`` holding the uuid (a hint
    otherwise: the service's numeric id names no uuid). Both naming different transactions is a
    contradiction, and the message unreadable. ``validated_data["transaction_uuid"]`` is the uuid named,
    canonical, or ""."""

    strict_fields = ("transaction_uuid",)

    transaction_uuid = TransactionUuidField(required=False, allow_blank=True, default="")
    transaction_id = TransactionIdField(required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        uuid: str = attrs.get("transaction_uuid") or ""
        other = attrs.get("transaction_id")
        if isinstance(other, str) and looks_like_uuid(other):
            other = canonical_uuid(other)
            if uuid and canonical_uuid(uuid) != other:
                raise serializers.ValidationError(
                    {"transaction_id": [_("Names another transaction than transaction_uuid.")]}
                )
            uuid = uuid or other
        attrs["transaction_uuid"] = uuid
        return attrs


class RecurringClaimSerializer(HintsSerializer):
    is_sub_payment = serializers.BooleanField(required=False, allow_null=True, default=None)
    parent_transaction = TransactionUuidField(required=False, allow_null=True, allow_blank=True, default="")


class CallbackBodySerializer(NamedTransactionSerializer):
    """The claims of a callback body, tolerant of the spec's variants: a body that names no transaction is
    invalid, every other field a hint (see the module). Amounts are numbers or decimal text (JSON numbers
    parsed as Decimal); custom fields (any other key) are not read here."""

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
        attrs = super().validate(attrs)
        if not attrs["transaction_uuid"]:
            raise serializers.ValidationError(
                {"transaction_uuid": [_("Required (or a transaction_id holding the uuid).")]}
            )
        if not attrs.get("transaction_status") and "transaction_status" not in self.hint_errors:
            # Noted, and verified all the same.
            self.hint_errors["transaction_status"] = [str(NO_STATUS_SENT)]
        return attrs


class ReturnParametersSerializer(NamedTransactionSerializer):
    """Query parameters of a browser return (the Pay set, the Direct order set, or the spec's variant). Only
    the uuid, or else the service's numeric id (``service_id``), is read; every other parameter is a claim,
    not read at all, so none of them can stop a customer's return."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        attrs["service_id"] = None if attrs["transaction_uuid"] else service_id_of(attrs["transaction_id"])
        return attrs


#: Top-level keys of the spec's callback body, the ones the parser reads; every other key is a custom field
#: (labels may hold spaces).
CALLBACK_FIELDS = frozenset(CallbackBodySerializer().fields)
