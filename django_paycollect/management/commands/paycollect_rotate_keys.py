"""``manage.py paycollect_rotate_keys [--database default]``: the stored community keys encrypted again with
the first of ``ENCRYPTION_KEYS`` (and in the current format), so the older keys can be removed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, transaction

from ...models import Community


class Command(BaseCommand):
    help = (
        "Encrypt the API keys and basic credentials stored in Community rows again with the first of "
        "PAYCOLLECT['ENCRYPTION_KEYS'], where an older key or the earlier format wrote them. Safe to run "
        "again: a row already encrypted with the current key is left alone."
    )
    # It is what fixes paycollect.E016's weak key: it must run while that check refuses the key.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database", default=DEFAULT_DB_ALIAS, help="the database alias (default: default)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"]
        rewritten, unreadable = 0, []
        for pk in Community.objects.using(using).order_by("pk").values_list("pk", flat=True):
            with transaction.atomic(using=using):
                row = Community.objects.using(using).select_for_update().filter(pk=pk).first()
                if row is None:
                    continue  # deleted meanwhile
                columns, lost = row.rotate_keys()
                if columns:
                    row.save(using=using, update_fields=[*columns, "updated_at"])
                    rewritten += 1
                if lost:
                    unreadable.append(row.community_id)
        if int(options["verbosity"]):
            self.stdout.write(f"{rewritten} communities' stored keys encrypted again with the current key.")
        if unreadable:
            raise CommandError(
                f"No configured key decrypts a stored key of the communities {', '.join(unreadable)}: put "
                "the key it was encrypted with back into PAYCOLLECT['ENCRYPTION_KEYS'] (after the current "
                "one) and run this again, or enter those keys again in the admin (paycollect.E005)."
            )
