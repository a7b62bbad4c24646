"""Forms for merchants' own checkout pages: the payer's billing data, checked with the app's own rules
(django_paycollect.validators, the ones the service layer applies), so every problem shows on its field at
once; a later refusal of the service layer is put back on the fields by ``add_service_errors``.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext_lazy as _

from .client.validation import normalise_phone
from .exceptions import PaymentRefused, ServiceLayerError
from .validators import validate_person_name, validate_phone_number


def refusal_errors(error: ServiceLayerError) -> dict[str, list[str]]:
    """A refusal's messages by field path; those of no field under ``__all__``. The one reading of a
    refusal's fields: the admin, the REST API (``api.errors.field_errors``) and your views call it."""
    if isinstance(error, ValidationError) and hasattr(error, "error_dict"):
        return {key: [str(text) for text in texts] for key, texts in error.message_dict.items()}
    return {NON_FIELD_ERRORS: [str(text) for text in error.messages]}


class BillingDataForm(forms.Form):
    """The payer's name, e-mail and mobile for ``services.start_payment``, checked with the app's rules.

    Use it (or its fields) in a checkout form so the customer corrects what the service would refuse
    before anything is created; :meth:`billing_data` is the ``billing_data`` argument, and
    :meth:`add_service_errors` puts a later refusal (``billing_data.phone_number``) back on the fields.
    """

    name = forms.CharField(
        label=_("Full name"),
        max_length=200,
        help_text=_("First and last name."),
        validators=[validate_person_name],
        # dir="auto": a name typed in Arabic reads right to left, one in Latin letters left to right.
        widget=forms.TextInput(attrs={"autocomplete": "name", "dir": "auto"}),
    )
    email = forms.EmailField(
        label=_("E-mail"), widget=forms.EmailInput(attrs={"autocomplete": "email", "dir": "ltr"})
    )
    phone_number = forms.CharField(
        label=_("Mobile phone"),
        max_length=32,
        help_text=_("With + and the country code, for example +201001234567."),
        validators=[validate_phone_number],
        # Left to right on right-to-left pages too, so the + stays before the country code.
        widget=forms.TextInput(attrs={"autocomplete": "tel", "inputmode": "tel", "dir": "ltr"}),
    )

    def clean_name(self) -> str:
        return " ".join(self.cleaned_data["name"].split())

    def clean_phone_number(self) -> str:
        return normalise_phone(self.cleaned_data["phone_number"])

    def billing_data(self) -> dict[str, str]:
        return {name: self.cleaned_data[name] for name in ("name", "email", "phone_number")}

    def add_service_errors(self, refused: PaymentRefused) -> None:
        """Show a refusal of the service layer (or of the service) on the fields it names."""
        for path, messages in refusal_errors(refused).items():
            field = path.removeprefix("billing_data.")
            self.add_error(field if field in self.fields else None, list(messages))
