"""``manage.py demo_setup``: make the demo work with no account (run ``migrate`` first).

* Seeds the mounted sandbox with the community of ``settings.PAYCOLLECT`` (its id, API key, basic
  credentials and ``VARIABLE_AMOUNT_ID``), so the site's settings and the sandbox agree.
* Points that API payment's redirect URL at the payment app's return view and its callback URL at the
  payment app's callback view with the current token: what a merchant enters in the service's dashboard.
* Creates the demo staff user (a superuser, for the demo only) and a member (not staff) for the single-page
  checkout on the REST API.
* Prints the URLs and the credentials.

The published passwords are the demo's, with DEBUG on. With DEBUG off the site may be reachable by others,
so they are refused: each account gets a random password, printed once (a ``--password`` of your own is
checked by the project's password validators).

Running it again is harmless: it keeps the data and sets the same values again.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from django_paycollect.conf import paycollect_settings

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password-123"  # noqa: S105 (the demo's published credentials)
#: A member (not staff) for the single-page checkout, which needs a signed-in user.
MEMBER_USERNAME = "member"
MEMBER_PASSWORD = "member-password-123"  # noqa: S105 (the demo's published credentials)


class Command(BaseCommand):
    help = "Seed the mounted sandbox, configure its API payment for this site and create the demo user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--site-url", default="", help="where the site is reached (default: SITE_URL)")
        parser.add_argument("--reset", action="store_true", help="wipe the sandbox's data first")
        parser.add_argument("--username", default=DEMO_USERNAME)
        parser.add_argument("--password", default=DEMO_PASSWORD)

    def handle(self, *args: Any, **options: Any) -> None:
        site = (options["site_url"] or settings.SITE_URL).rstrip("/")
        redirect_url = site + reverse("paycollect:return")
        paycollect_settings.require("CALLBACK_TOKENS")
        callback_url = site + reverse(
            "paycollect:callback", args=[paycollect_settings.texts("CALLBACK_TOKENS")[0]]
        )
        sandbox = apps.is_installed("django_paycollect.sandbox")
        if sandbox:
            self._seed_sandbox(site, redirect_url, callback_url, reset=options["reset"])
        password = self._password(options["password"], DEMO_PASSWORD, options["username"])
        member_password = self._password(MEMBER_PASSWORD, MEMBER_PASSWORD, MEMBER_USERNAME)
        user = self._demo_user(options["username"], password)
        self._member(member_password)
        self._print(site, sandbox, user, password, member_password, redirect_url, callback_url)

    def _password(self, asked: str, published: str, username: str) -> str:
        """``asked``, unless DEBUG is off and it is the published one: then a random password."""
        if settings.DEBUG:
            return asked
        if asked == published:
            self.stderr.write(
                self.style.WARNING(
                    f"DEBUG is off: the published password of {username!r} is refused; "
                    "a random one is set (printed below)."
                )
            )
            return secrets.token_urlsafe(15)
        try:
            validate_password(asked)
        except ValidationError as error:
            raise CommandError(f"--password: {' '.join(error.messages)}") from error
        return asked

    # --- the sandbox

    def _identity(self, site: str) -> dict[str, Any]:
        username, _, password = paycollect_settings.basic_credentials().partition(":")
        if not (username and password):
            raise CommandError("PAYCOLLECT['BASIC_CREDENTIALS'] must be 'username:password' for the sandbox.")
        base_url = str(paycollect_settings.require("BASE_URL")).rstrip("/")
        if base_url != f"{site}/sandbox":
            self.stderr.write(
                self.style.WARNING(
                    f"PAYCOLLECT['BASE_URL'] is {base_url}, not this site's sandbox ({site}/sandbox): "
                    "payments will not reach the sandbox seeded here."
                )
            )
        return {
            "base_url": f"{site}/sandbox",
            "community_id": str(paycollect_settings.require("COMMUNITY_ID")),
            "api_key": str(paycollect_settings.require("API_KEY")),
            "basic_username": username,
            "basic_password": password,
            "variable_amount_id": int(paycollect_settings.require("VARIABLE_AMOUNT_ID")),
            # Explicit too: on PostgreSQL an explicit primary key does not move the sequence, so a second
            # API payment left to the sequence would collide with the first.
            "member_variable_amount_id": int(paycollect_settings.require("VARIABLE_AMOUNT_ID")) + 1,
        }

    def _seed_sandbox(self, site: str, redirect_url: str, callback_url: str, *, reset: bool) -> None:
        from django_paycollect.sandbox import seed
        from django_paycollect.sandbox.models import ApiPayment, Community
        from django_paycollect.sandbox.state import get_state, writing

        wanted = self._identity(site)
        state = get_state()
        stored = dict(state.seed or {})
        same = all(stored.get(key) == value for key, value in wanted.items() if key != "base_url")
        if stored and (
            reset or not same or not Community.objects.filter(community_id=wanted["community_id"]).exists()
        ):
            # Other credentials than the settings' (or asked to): start the sandbox again with these.
            state.seed = wanted
            state.save(update_fields=["seed"])
            seed.reset()
            self.stdout.write("Sandbox reset and seeded with the settings' community.")
        elif not stored:
            seed.seed(wanted, wanted["base_url"])
            self.stdout.write("Sandbox seeded.")
        else:
            seed.ensure_seeded(wanted["base_url"])
            self.stdout.write("Sandbox already seeded; data kept.")
        with writing():
            # What a merchant enters in the service's dashboard for its API payment.
            updated = ApiPayment.objects.filter(pk=wanted["variable_amount_id"]).update(
                redirect_url=redirect_url, callback_url=callback_url
            )
        if not updated:
            raise CommandError(f"The sandbox has no API payment {wanted['variable_amount_id']}.")

    # --- the staff user

    def _demo_user(self, username: str, password: str) -> Any:
        user_model = get_user_model()
        user, created = user_model._default_manager.get_or_create(
            **{user_model.USERNAME_FIELD: username}, defaults={"email": "demo@example.com"}
        )
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
        self.stdout.write(f"Demo user {'created' if created else 'updated'}.")
        return user

    def _member(self, password: str) -> Any:
        user_model = get_user_model()
        member, _ = user_model._default_manager.get_or_create(
            **{user_model.USERNAME_FIELD: MEMBER_USERNAME},
            defaults={"email": "member@example.com", "first_name": "Mona", "last_name": "Ali"},
        )
        member.set_password(password)
        member.save()
        return member

    def _print(
        self,
        site: str,
        sandbox: bool,
        user: Any,
        password: str,
        member_password: str,
        redirect_url: str,
        callback_url: str,
    ) -> None:
        token = paycollect_settings.texts("CALLBACK_TOKENS")[0]
        lines = [
            "",
            "The club site (an example of django-paycollect)",
            f"  site               {site}/",
            f"  join (checkout)    {site}/join/",
            f"  API checkout       {site}/checkout/  (member login {MEMBER_USERNAME} / {member_password})",
            f"  invoices (staff)   {site}/invoices/",
            f"  admin              {site}/admin/",
            f"  REST API docs      {site}/api/docs/",
        ]
        if sandbox:
            lines += [
                f"  sandbox dashboard  {site}/sandbox/_sandbox/",
                f"  sandbox outbox     {site}/sandbox/_sandbox/outbox/",
            ]
        lines += [
            f"  staff login        {user.get_username()} / {password}",
            f"  redirect URL       {redirect_url}",
            f"  callback URL       {callback_url.replace(str(token), '<token>')}",
        ]
        if sandbox:
            lines.append("  promocodes         SAVE10, FLAT25, SMALL5 (EXPIRED20 is refused)")
        self.stdout.write("\n".join([*lines, ""]))
