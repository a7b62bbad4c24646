"""A community: the merchant account at the service, with its credentials encrypted at rest."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from .. import crypto
from .fields import last4


class Community(models.Model):
    """A merchant account of the service. The community in ``PAYCOLLECT`` needs no row; rows add more."""

    community_id = models.CharField(_("community id"), max_length=100, unique=True)
    name = models.CharField(_("name"), max_length=200, blank=True)
    # Encrypted at rest; shown only as the last four characters.
    api_key_encrypted = models.TextField(_("encrypted API key"), blank=True, editable=False)
    api_key_last4 = models.CharField(_("end of the API key"), max_length=4, blank=True, editable=False)
    basic_credentials_encrypted = models.TextField(
        _("encrypted basic credentials"), blank=True, editable=False
    )
    basic_credentials_last4 = models.CharField(
        _("end of the basic credentials"), max_length=4, blank=True, editable=False
    )
    variable_amount_id = models.PositiveIntegerField(_("default variable_amount_id"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("community")
        verbose_name_plural = _("communities")
        ordering = ["name", "community_id"]

    def __str__(self) -> str:
        return self.name or self.community_id

    def __repr__(self) -> str:
        return f"<Community {self.community_id}>"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.rotate_keys()  # a value of an older key or format is written again with the current one
        super().save(*args, **kwargs)

    def rotate_keys(self) -> tuple[list[str], list[str]]:
        """Encrypt the stored keys again with the current encryption key, where another key or the earlier
        format wrote them (``paycollect_rotate_keys``, and every save). Returns the columns rewritten and
        those no configured key decrypts (left as they are: check ``paycollect.E005``)."""
        rewritten, unreadable = [], []
        for column in ("api_key_encrypted", "basic_credentials_encrypted"):
            stored = getattr(self, column)
            if not stored or not crypto.needs_reencryption(stored):
                continue
            try:
                setattr(self, column, crypto.reencrypted(stored))
            except crypto.DecryptionError:
                unreadable.append(column)
            else:
                rewritten.append(column)
        return rewritten, unreadable

    @property
    def api_key(self) -> str:
        return crypto.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.api_key_encrypted = crypto.encrypt(value) if value else ""
        self.api_key_last4 = last4(value) if value else ""

    @property
    def basic_credentials(self) -> str:
        return crypto.decrypt(self.basic_credentials_encrypted) if self.basic_credentials_encrypted else ""

    @basic_credentials.setter
    def basic_credentials(self, value: str) -> None:
        self.basic_credentials_encrypted = crypto.encrypt(value) if value else ""
        self.basic_credentials_last4 = last4(value) if value else ""
