"""The admin's forms: community credentials, the direct order add form, the refund page and the dashboard's
choice of community, currency and period.

Names, phones and amounts are checked with the app's own rules (django_paycollect.validators and
django_paycollect.amounts, the ones the service layer applies), so every problem shows on its field at
once. What only the service layer or the service can tell (what is still refundable, the service's own
refusals) is mapped back onto the fields by ``add_service_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.admin import widgets
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..amounts import ZERO, AmountFormField
from ..client import CURRENCIES, CUSTOM_FIELD_TYPES, DEFAULT_CURRENCY
from ..conf import paycollect_settings
from ..models import Community, Transaction
from ..reporting.figures import DEFAULT_PERIOD, PERIODS
from ..validators import validate_person_name, validate_phone_number

if TYPE_CHECKING:
    CommunityModelForm = forms.ModelForm[Community]
else:
    # django-stubs declares ModelForm generic; Django's own class cannot be subscripted at run time.
    CommunityModelForm = forms.ModelForm


def stored_secret_text(last4: str, encrypted: str) -> str:
    """How a stored secret is shown: its last four characters at most, never more."""
    if not encrypted:
        return gettext("Nothing stored.")
    if last4:
        return gettext("Stored: …%(last4)s.") % {"last4": last4}
    return gettext("Stored (too short to show its end).")


def _secret_field(label: Any) -> forms.CharField:
    # render_value=False: a stored or just-typed key never travels back to the browser,
    # not even when the form is redisplayed with errors.
    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})
    return forms.CharField(label=label, required=False, widget=widget)


class CommunityForm(CommunityModelForm):
    """Community with write-only credentials: typed in, encrypted, never rendered back."""

    api_key = _secret_field(label=_("API key"))
    clear_api_key = forms.BooleanField(label=_("Remove the stored API key"), required=False)
    basic_credentials = _secret_field(label=_("Basic credentials"))
    clear_basic_credentials = forms.BooleanField(
        label=_("Remove the stored basic credentials"), required=False
    )

    class Meta:
        model = Community
        fields = ["community_id", "name", "variable_amount_id"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        community = self.instance
        keep = gettext("Leave blank to keep what is stored.")
        shape = gettext("As username:password; only dashboard statistics needs them.")
        api_key = stored_secret_text(community.api_key_last4, community.api_key_encrypted)
        basic = stored_secret_text(community.basic_credentials_last4, community.basic_credentials_encrypted)
        self.fields["api_key"].help_text = f"{api_key} {keep}"
        self.fields["basic_credentials"].help_text = f"{basic} {shape} {keep}"

    def clean_basic_credentials(self) -> str:
        value: str = self.cleaned_data["basic_credentials"]
        if value and ":" not in value:
            raise ValidationError(_("Enter them as username:password."), code="invalid")
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in ("api_key", "basic_credentials"):
            if cleaned.get(name) and cleaned.get(f"clear_{name}"):
                self.add_error(f"clear_{name}", _("Either enter a new value or remove the stored one."))
        return cleaned

    def save(self, commit: bool = True) -> Community:
        community = self.instance
        # Blank keeps the stored value: the field is write-only, so blank means "not retyped".
        for name in ("api_key", "basic_credentials"):
            if self.cleaned_data.get(f"clear_{name}"):
                setattr(community, name, "")
            elif self.cleaned_data.get(name):
                setattr(community, name, self.cleaned_data[name])
        return super().save(commit)


def community_choices(*, with_key_only: bool = True) -> list[tuple[str, str]]:
    """The community configured in settings, then every Community row (only those holding an API key,
    unless ``with_key_only`` is false)."""
    choices: list[tuple[str, str]] = []
    default_id = paycollect_settings.COMMUNITY_ID
    if default_id:
        choices.append((str(default_id), gettext("%(id)s (from settings)") % {"id": default_id}))
    rows = Community.objects.exclude(community_id=default_id or "")
    if with_key_only:
        rows = rows.exclude(api_key_encrypted="")
    choices += [(row.community_id, str(row)) for row in rows.only("community_id", "name")]
    return choices


def currency_choices() -> list[tuple[str, str]]:
    """The spec's currencies, the settings' default first."""
    default = str(paycollect_settings.DEFAULT_CURRENCY)
    codes = [default, *(code for code in CURRENCIES if code != default)]
    return [(code, code) for code in codes]


class DashboardForm(forms.Form):
    """What the dashboard shows: a community, a currency and a period (a GET form: links can be shared)."""

    community = forms.ChoiceField(label=_("Community"))
    currency = forms.ChoiceField(label=_("Currency"))
    days = forms.TypedChoiceField(
        label=_("Period"),
        coerce=int,
        choices=lambda: [
            (days, ngettext("last %(days)d day", "last %(days)d days", days) % {"days": days})
            for days in PERIODS
        ],  # worded when shown, in the language of the request
    )

    def __init__(self, data: Any = None) -> None:
        communities = community_choices(with_key_only=False)
        currencies = currency_choices()
        initial = {
            "community": communities[0][0] if communities else "",
            "currency": currencies[0][0],
            "days": DEFAULT_PERIOD,
        }
        # Whatever is missing from the query string takes its default.
        super().__init__({**initial, **(data.dict() if data is not None else {})}, initial=initial)
        for name, choices in (("community", communities), ("currency", currencies)):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices


def _text(**kwargs: Any) -> forms.CharField:
    return forms.CharField(widget=widgets.AdminTextInputWidget, **kwargs)


def _lines_field(rows: int, **kwargs: Any) -> forms.CharField:
    return forms.CharField(required=False, widget=widgets.AdminTextareaWidget(attrs={"rows": rows}), **kwargs)


def _url(**kwargs: Any) -> forms.URLField:
    # assume_scheme: a URL typed without a scheme is https.
    widget = widgets.AdminURLFieldWidget
    return forms.URLField(required=False, max_length=2000, widget=widget, assume_scheme="https", **kwargs)


def _lines(text: str) -> list[tuple[int, list[str]]]:
    """Non-blank lines as (line number, fields split on "|")."""
    numbered = enumerate(text.splitlines(), start=1)
    return [(number, [part.strip() for part in line.split("|")]) for number, line in numbered if line.strip()]


YES = {"required", "yes", "true", "1"}
NO = {"", "optional", "no", "false", "0"}


class DirectOrderForm(forms.Form):
    """Every field of the spec's Direct order, as the admin's add form (``services.create_direct_order``)."""

    community_id = forms.ChoiceField(label=_("Community"))
    name = _text(label=_("Order name"), max_length=200)
    amount = AmountFormField(label=_("Amount"))
    currency = forms.ChoiceField(
        label=_("Currency"), choices=[(c, c) for c in CURRENCIES], initial=DEFAULT_CURRENCY
    )
    discount_amount = AmountFormField(
        label=_("Discount"), required=False, help_text=_("Subtracted from the amount, same currency.")
    )
    vat_percentage = AmountFormField(
        label=_("VAT %"),
        required=False,
        minimum=ZERO,
        maximum=Decimal(100),
        help_text=_("Added to the amount; shown on the payment page as a separate VAT entry."),
    )
    payment_methods = _text(
        label=_("Payment methods"),
        initial="Card",
        help_text=_("Comma-separated, e.g. Card, Kiosk (case-insensitive)."),
    )
    merchant_reference = _text(
        label=_("Merchant reference"), max_length=200, required=False, help_text=_("Your own reference.")
    )
    customer_name = _text(
        label=_("Customer name"),
        max_length=200,
        help_text=_("First and last name, separated by a space."),
        validators=[validate_person_name],
    )
    customer_email = forms.EmailField(label=_("Customer e-mail"), widget=widgets.AdminEmailInputWidget)
    customer_mobile = _text(
        label=_("Customer mobile"),
        max_length=32,
        help_text=_("With + and the country code: +201001234567."),
        validators=[validate_phone_number],
    )
    customer_title = _text(
        label=_("Customer title"), max_length=100, required=False, help_text=_("Used in the notification.")
    )
    address = _text(label=_("Billing address"), max_length=300, required=False)
    order_description = _lines_field(3, label=_("Description"))
    custom_fields = _lines_field(4, label=_("Custom fields asked of the customer"))
    tags = _lines_field(
        2, label=_("Tags"), help_text=_("One per line: id | name (the tag's id in the service's dashboard).")
    )
    allow_recurring_payments = forms.BooleanField(label=_("Recurring order"), required=False)
    expiry_date = forms.DateField(label=_("Recurring until"), required=False, widget=widgets.AdminDateWidget)
    minimum_days_between_payments = forms.IntegerField(
        label=_("Minimum days between payments"),
        required=False,
        min_value=1,
        widget=widgets.AdminIntegerFieldWidget,
    )
    paid = forms.BooleanField(
        label=_("First payment already paid"),
        required=False,
        help_text=_("Marks the first payment of a recurring order as paid."),
    )
    send_by_email = forms.BooleanField(label=_("Send the link by e-mail"), required=False)
    cc_email = forms.EmailField(label=_("CC e-mail"), required=False, widget=widgets.AdminEmailInputWidget)
    send_by_sms = forms.BooleanField(label=_("Send the link by SMS"), required=False)
    redirect_url = _url(
        label=_("Redirect URL"),
        help_text=_(
            "Where the customer returns after paying. Left blank: this site's return view, which sends the "
            "customer on to SUCCESS_URL or FAILURE_URL."
        ),
    )
    callback_url = _url(
        label=_("Callback URL"),
        help_text=_("Left blank: this site's callback view, with the current callback token."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["community_id"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = community_choices()
        if paycollect_settings.COMMUNITY_ID:
            field.initial = paycollect_settings.COMMUNITY_ID
        # Worded here, in the language of the request (a lazy text formatted in the class is fixed at import).
        self.fields["custom_fields"].help_text = gettext(
            "One per line: label | type | required or optional | choices (comma-separated, "
            "DROPDOWNLIST only). Types: %(types)s. Example: Size | DROPDOWNLIST | required | S, M, L"
        ) % {"types": ", ".join(CUSTOM_FIELD_TYPES)}

    def clean_payment_methods(self) -> list[str]:
        methods = [m.strip() for m in self.cleaned_data["payment_methods"].split(",") if m.strip()]
        if not methods:
            raise ValidationError(_("Enter at least one payment method."), code="required")
        return methods

    def clean_custom_fields(self) -> list[dict[str, Any]]:
        definitions: list[dict[str, Any]] = []
        problems: list[str] = []
        for number, parts in _lines(self.cleaned_data["custom_fields"]):
            if len(parts) < 2 or len(parts) > 4:
                problems.append(
                    gettext("Line %(line)d: write label | type | required | choices.") % {"line": number}
                )
                continue
            label, kind, *rest = parts
            required_text = (rest[0] if rest else "").lower()
            if required_text not in YES | NO:
                problems.append(
                    gettext("Line %(line)d: write “required” or “optional”, not “%(value)s”.")
                    % {"line": number, "value": rest[0]}
                )
                continue
            definition: dict[str, Any] = {"field_label": label, "field_type": kind.upper()}
            if required_text:
                definition["required"] = required_text in YES
            if len(rest) > 1 and rest[1]:
                definition["field_choices"] = rest[1]
            definitions.append(definition)
        if problems:
            raise ValidationError(problems, code="invalid")
        return definitions

    def clean_tags(self) -> list[dict[str, Any]]:
        tags: list[dict[str, Any]] = []
        problems: list[str] = []
        for number, parts in _lines(self.cleaned_data["tags"]):
            if len(parts) != 2 or not parts[0].isdigit() or not parts[1]:
                problems.append(gettext("Line %(line)d: write id | name.") % {"line": number})
                continue
            tags.append({"id": int(parts[0]), "name": parts[1]})
        if problems:
            raise ValidationError(problems, code="invalid")
        return tags

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("allow_recurring_payments"):
            for name in ("expiry_date", "minimum_days_between_payments"):
                if cleaned.get(name) is None and name not in self.errors:
                    self.add_error(name, _("Required for a recurring order."))
        return cleaned

    def service_fields(self) -> dict[str, Any]:
        """The keyword arguments of ``services.create_direct_order``."""
        data = self.cleaned_data
        recurring = {name: data[name] for name in ("expiry_date", "minimum_days_between_payments")}
        fields = {name: data[name] for name in self.fields if name not in DIRECT_ORDER_FORM_ONLY}
        return fields | {"recurring": recurring if data["allow_recurring_payments"] else None}

    def add_service_errors(self, errors: Mapping[str, Iterable[str]]) -> None:
        """Put the service layer's ``{"dotted.path": [messages]}`` on the fields they name."""
        for path, messages in errors.items():
            field, line = _field_for(path)
            for message in messages:
                text = str(message)
                if line is not None:
                    text = gettext("Line %(line)d: %(message)s") % {"line": line, "message": text}
                if field in self.fields:
                    self.add_error(field, text)
                elif field == NON_FIELD_ERRORS:
                    self.add_error(None, text)
                else:
                    self.add_error(None, f"{path}: {text}")


# Form fields that are not keyword arguments of the service (they are folded into ``recurring``).
DIRECT_ORDER_FORM_ONLY = {"allow_recurring_payments", "expiry_date", "minimum_days_between_payments"}

# The service's names for what the form calls otherwise.
_SERVICE_PATHS = {
    "amount.amount": "amount",
    "amount.currency": "currency",
    "discount_amount.amount": "discount_amount",
    "discount_amount.currency": "currency",
    "recurring": "allow_recurring_payments",
}


def _field_for(path: str) -> tuple[str, int | None]:
    """``recurring.expiry_date`` -> (``expiry_date``, None); ``tags.1.id`` -> (``tags``, 2)."""
    if path in _SERVICE_PATHS:
        return _SERVICE_PATHS[path], None
    parts = path.split(".")
    if parts[0] == "recurring" and len(parts) > 1:
        return parts[1], None
    if parts[0] in ("custom_fields", "tags") and len(parts) > 1 and parts[1].isdigit():
        # Lines of the form are numbered from 1; blank lines are skipped, so this is the n-th entry.
        return parts[0], int(parts[1]) + 1
    return parts[0], None


class RefundForm(forms.Form):
    """One amount per refundable transaction, defaulting to what is still refundable."""

    def __init__(self, refundable: Mapping[Transaction, Decimal], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refundable = refundable
        for txn, remainder in refundable.items():
            # Read as every surface reads a refund's amount; the page cannot leave it out (its box starts with
            # what is still refundable, which is how "all" is asked here), so an emptied box is refused.
            self.fields[self.field_name(txn)] = AmountFormField(
                read=services.refund_amount, label=str(txn), initial=remainder
            )

    def clean(self) -> dict[str, Any]:
        # Over what is still refundable: said on the page before any refund of it is sent (the service layer
        # checks it again under its lock).
        for txn, remainder in self.refundable.items():
            amount = self.cleaned_data.get(self.field_name(txn))
            if amount is not None and amount > remainder:
                self.add_error(self.field_name(txn), txn.refund_limit_message(remainder))
        return self.cleaned_data

    @staticmethod
    def field_name(txn: Transaction) -> str:
        return f"amount_{txn.pk}"

    def amount_for(self, txn: Transaction) -> Decimal:
        amount: Decimal = self.cleaned_data[self.field_name(txn)]
        return amount
