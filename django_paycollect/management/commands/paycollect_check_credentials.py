"""``manage.py paycollect_check_credentials [--community ID]``: a thin caller of
``services.credentials.check_credentials`` (what it does: its ``help``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...exceptions import PayCollectConfigurationError
from ...services.credentials import CredentialsCheck, check_credentials, configured_communities

SOURCES = {"settings": "PAYCOLLECT settings", "community": "Community row"}


class Command(BaseCommand):
    help = (
        "Try the API key and basic credentials of every configured community (PAYCOLLECT's and each "
        "Community row with a key) against the service, with reads that change nothing: fetching a "
        "transaction no payment has (the service's 404 means the key was accepted) and, with basic "
        "credentials, the dashboard statistics. Says which work and what to fix; fails if any is refused."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--community", metavar="ID", help="only this community (default: every one)")

    def handle(self, *args: Any, **options: Any) -> None:
        wanted = [options["community"]] if options["community"] else configured_communities()
        if not wanted:
            raise CommandError(
                'No credentials to try: set PAYCOLLECT["COMMUNITY_ID"] and PAYCOLLECT["API_KEY"], or add a '
                "Community row with an API key in the admin."
            )
        failed = 0
        for community_id in wanted:
            try:
                found = check_credentials(community_id)
            except PayCollectConfigurationError as error:
                failed += 1
                self.stdout.write(f"{community_id}: not configured: {error}")
                continue
            self.stdout.write(self._line(found))
            failed += 0 if found.accepted else 1
        if failed:
            raise CommandError(
                f"{failed} of {len(wanted)} communities: credentials refused or not tried (see above)."
            )

    def _line(self, found: CredentialsCheck) -> str:
        line = (
            f"{found.community_id}: API key: {found.api_key}; basic credentials: {found.basic_credentials} "
            f"({SOURCES.get(found.source, found.source)})"
        )
        return f"{line}\n    {found.problem}" if found.problem else line
