"""The membership checkout form and the staff's invoice form.

Both check names, phones and amounts with django-paycollect's own rules (its BillingDataForm, validators
and AmountFormField, the rules the service layer applies), so a customer corrects them before anything is
created.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from django_paycollect.amounts import AmountFormField
from django_paycollect.forms import BillingDataForm
from django_paycollect.validators import validate_person_name, validate_phone_number

from .models import Billing, PayUsing, Plan

#: The club's order tags at the service (id, name).
CLUB_TAGS: dict[int, str] = {1: "membership", 2: "events", 3: "coaching"}
CUSTOM_FIELD_TYPES = [
    ("TEXT", _("Text")),
    ("NUMBER", _("Number")),
    ("CHECKBOX", _("Checkbox")),
    ("DROPDOWNLIST", _("Drop-down list")),
]
#: How many custom field rows the invoice form offers.
CUSTOM_FIELD_ROWS = 3


class JoinForm(BillingDataForm):
    """The plan and how to pay, with the payer's name, e-mail and mobile (BillingDataForm)."""

    plan = forms.ChoiceField(
        label=_("Plan"), choices=Plan.choices, initial=Plan.STANDARD, widget=forms.RadioSelect
    )
    billing = forms.ChoiceField(
        label=_("Billing"), choices=Billing.choices, initial=Billing.YEARLY, widget=forms.RadioSelect
    )
    pay_using = forms.ChoiceField(
        label=_("Payment method"), choices=PayUsing.choices, initial=PayUsing.CARD, widget=forms.RadioSelect
    )
    promocode = forms.CharField(label=_("Promocode"), max_length=50, required=False)

    def clean_promocode(self) -> str:
        return str(self.cleaned_data.get("promocode") or "").strip().upper()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("billing") == Billing.MONTHLY and data.get("pay_using") != PayUsing.CARD:
            self.add_error("pay_using", _("Monthly renewals are charged to a card: choose the card."))
        return data


class InvoiceForm(forms.Form):
    """A direct order: the service e-mails (or texts) the customer a payment link."""

    #: Sent back on submit: a second click finds the order the first one created.
    form_token = forms.UUIDField(widget=forms.HiddenInput)
    name = forms.CharField(label=_("Invoice title"), max_length=200, initial=_("Club invoice"))
    order_description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    customer_title = forms.CharField(label=_("Title"), max_length=100, required=False)
    customer_name = forms.CharField(
        label=_("Customer name"),
        max_length=200,
        validators=[validate_person_name],
        help_text=_("First and last name."),
        widget=forms.TextInput(attrs={"dir": "auto"}),
    )
    customer_email = forms.EmailField(
        label=_("Customer e-mail"), widget=forms.EmailInput(attrs={"dir": "ltr"})
    )
    customer_mobile = forms.CharField(
        label=_("Customer mobile"),
        max_length=32,
        validators=[validate_phone_number],
        help_text=_("With + and the country code, for example +201001234567."),
        widget=forms.TextInput(attrs={"dir": "ltr", "inputmode": "tel"}),
    )
    amount = AmountFormField(label=_("Amount (EGP)"))
    discount_amount = AmountFormField(label=_("Discount (EGP)"), required=False)
    vat_percentage = AmountFormField(
        label=_("VAT %"), required=False, initial=Decimal("14"), minimum=Decimal("0"), maximum=Decimal("100")
    )
    payment_methods = forms.MultipleChoiceField(
        label=_("Payment methods"),
        choices=[(PayUsing.CARD.value, _("Card")), (PayUsing.KIOSK.value, _("Kiosk"))],
        initial=[PayUsing.CARD.value, PayUsing.KIOSK.value],
        widget=forms.CheckboxSelectMultiple,
    )
    tags = forms.TypedMultipleChoiceField(
        label=_("Tags"),
        choices=[(str(pk), name) for pk, name in CLUB_TAGS.items()],
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    send_by_email = forms.BooleanField(label=_("E-mail the payment link"), required=False, initial=True)
    send_by_sms = forms.BooleanField(label=_("Text the payment link"), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).setdefault("form_token", uuid.uuid4())
        super().__init__(*args, **kwargs)
        for row in range(CUSTOM_FIELD_ROWS):
            self.fields[f"field_{row}_label"] = forms.CharField(
                label=_("Label"), max_length=200, required=False
            )
            self.fields[f"field_{row}_type"] = forms.ChoiceField(
                label=_("Type"), choices=CUSTOM_FIELD_TYPES, initial="TEXT"
            )
            self.fields[f"field_{row}_required"] = forms.BooleanField(label=_("Required"), required=False)
            self.fields[f"field_{row}_choices"] = forms.CharField(
                label=_("Choices"),
                max_length=500,
                required=False,
                help_text=_("Comma-separated, for a list."),
            )

    def custom_field_rows(self) -> list[list[forms.BoundField]]:
        return [
            [self[f"field_{row}_{part}"] for part in ("label", "type", "required", "choices")]
            for row in range(CUSTOM_FIELD_ROWS)
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        discount, amount = data.get("discount_amount"), data.get("amount")
        if discount is not None and amount is not None and discount >= amount:
            self.add_error("discount_amount", _("The discount must be less than the amount."))
        for row in range(CUSTOM_FIELD_ROWS):
            label = (data.get(f"field_{row}_label") or "").strip()
            if (
                data.get(f"field_{row}_type") == "DROPDOWNLIST"
                and label
                and not data.get(f"field_{row}_choices")
            ):
                self.add_error(f"field_{row}_choices", _("A drop-down list needs its choices."))
        return data

    def custom_field_definitions(self) -> list[dict[str, Any]]:
        """The custom field definitions, as the service layer takes them."""
        fields = []
        for row in range(CUSTOM_FIELD_ROWS):
            label = (self.cleaned_data.get(f"field_{row}_label") or "").strip()
            if not label:
                continue
            kind = self.cleaned_data[f"field_{row}_type"]
            choices = ",".join(
                choice.strip()
                for choice in (self.cleaned_data.get(f"field_{row}_choices") or "").split(",")
                if choice.strip()
            )
            fields.append(
                {
                    "field_label": label,
                    "field_type": kind,
                    "required": bool(self.cleaned_data.get(f"field_{row}_required")),
                    "field_choices": choices if kind == "DROPDOWNLIST" else None,
                }
            )
        return fields

    def tag_list(self) -> list[dict[str, Any]]:
        return [{"id": pk, "name": CLUB_TAGS[pk]} for pk in self.cleaned_data.get("tags") or []]
