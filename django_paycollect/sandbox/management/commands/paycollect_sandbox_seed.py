"""Seed a mounted sandbox (the standalone runner seeds itself) and print its credentials."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import seed


class Command(BaseCommand):
    help = "Seed the Payment Collection Service sandbox once and print its base URL and credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--base-url",
            default="",
            help="where the sandbox is mounted, e.g. http://127.0.0.1:8000/sandbox (for demo merchant URLs)",
        )
        parser.add_argument("--reset", action="store_true", help="wipe all sandbox data first")

    def handle(self, *args: Any, **options: Any) -> None:
        identity = seed.reset() if options["reset"] else seed.ensure_seeded(options["base_url"])
        self.stdout.write(
            f"community id       {identity['community_id']}\n"
            f"API key            {identity['api_key']}\n"
            f"variable_amount_id {identity['variable_amount_id']}\n"
            f"basic credentials  {identity['basic_username']}:{identity['basic_password']}\n"
        )
