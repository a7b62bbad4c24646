from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.utils.translation import gettext_lazy as _


def _sqlite_wal(sender: Any, connection: Any, **kwargs: Any) -> None:
    # Readers do not wait for the writer in WAL mode: the site, the mounted sandbox and its callback
    # thread share one SQLite file in the demo.
    if connection.vendor == "sqlite" and connection.settings_dict["NAME"] not in ("", ":memory:"):
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode=WAL")


class MembersConfig(AppConfig):
    name = "clubsite.members"
    label = "members"
    verbose_name = _("Club members")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects the payment signals)

        connection_created.connect(_sqlite_wal, dispatch_uid="clubsite-sqlite-wal")
