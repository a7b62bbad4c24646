"""The example project's pages that must not say more than they know: the header's sandbox link only where
the sandbox dashboard answers, the success and failure pages only for a payment in that state, a numeric id
read as the payment app reads it, and the favicon every page asks for. The site runs in a process of its own
(its settings from its environment), on a temporary SQLite file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.example_project import run_example

PAID, PENDING, FAILED = (
    "0b0b0b0b-1111-4222-8333-44445555aaaa",
    "0b0b0b0b-1111-4222-8333-44445555bbbb",
    "0b0b0b0b-1111-4222-8333-44445555cccc",
)
RENDER = """
import json, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from django_paycollect.models import Transaction

call_command("migrate", verbosity=0)
paid, pending, failed = sys.argv[1:4]
rows = [(paid, "SUCCESSFUL", 41), (pending, "PENDING", 42), (failed, "FAILED", 43)]
for uuid, status, service_id in rows:
    Transaction.objects.create(
        uuid=uuid, status=status, service_id=service_id, community_id="c-1", total_amount="10.00"
    )
# The same numeric id stored from two environments: it names no one payment.
Transaction.objects.create(uuid=None, status="FAILED", service_id=44, community_id="c-1", total_amount="1.00")
Transaction.objects.create(
    uuid="0b0b0b0b-1111-4222-8333-44445555dddd", status="FAILED", service_id=44, community_id="c-2",
    total_amount="1.00",
)
Transaction.objects.create(
    uuid="0b0b0b0b-1111-4222-8333-44445555eeee", status="FAILED", service_id=44, community_id="c-3",
    total_amount="1.00",
)
client = Client(HTTP_HOST="127.0.0.1")
paths = sys.argv[4:]
answers = {path: client.get(path) for path in paths}
print(json.dumps({
    path: [answer.status_code, answer.get("Content-Type", ""), answer.content.decode(errors="replace")]
    for path, answer in answers.items()
}))
"""

CONFIRMED = "The payment service has confirmed your payment."
THANKS = "Thank you for your payment"
NOT_CONFIRMED = "We could not confirm this payment yet"
NOT_COMPLETED = "Your payment was not completed"


def pages(tmp_path: Path, migrated: Path, *paths: str, debug: bool) -> dict[str, tuple[int, str, str]]:
    # From a copy of the run's migrated database (tests/support/example_site.py): RENDER's migrate is then a
    # check, not four seconds of migrations.
    database = Path(shutil.copyfile(migrated, tmp_path / "club.sqlite3"))
    done = run_example(
        "-c",
        RENDER,
        PAID,
        PENDING,
        FAILED,
        *paths,
        CLUBSITE_DEBUG="1" if debug else "0",
        CLUBSITE_DB=str(database),
    )
    assert done.returncode == 0, done.stderr
    return {path: tuple(found) for path, found in json.loads(done.stdout.splitlines()[-1]).items()}


@pytest.fixture(scope="module")
def live_site(
    tmp_path_factory: pytest.TempPathFactory, example_migrated: Path
) -> dict[str, tuple[int, str, str]]:
    """The pages as a site with DEBUG off shows them."""
    return pages(
        tmp_path_factory.mktemp("club-live"),
        example_migrated,
        "/",
        "/sandbox/_sandbox/",
        "/favicon.ico",
        f"/payment/thanks/?transaction_uuid={PAID}",
        f"/payment/thanks/?transaction_uuid={PENDING}",
        f"/payment/thanks/?transaction_uuid={FAILED}",
        "/payment/thanks/?transaction_uuid=0b0b0b0b-1111-4222-8333-000000000000",
        "/payment/thanks/",
        "/payment/thanks/?transaction_id=41",
        "/payment/thanks/?transaction_id=44",
        "/payment/failed/?transaction_id=43",
        "/payment/failed/?transaction_id=44",
        debug=False,
    )


def test_the_sandbox_link_shows_only_where_the_sandbox_dashboard_answers(
    live_site, tmp_path, example_migrated
):
    status, _, home = live_site["/"]
    assert status == 200
    assert live_site["/sandbox/_sandbox/"][0] == 404  # off with DEBUG off
    assert 'href="/sandbox/_sandbox/"' not in home
    assert "Payments go to the local sandbox: no money moves." in home  # the sandbox is still the service
    demo = pages(tmp_path, example_migrated, "/", "/sandbox/_sandbox/", debug=True)
    assert demo["/sandbox/_sandbox/"][0] == 200
    assert 'href="/sandbox/_sandbox/"' in demo["/"][2]


def test_every_page_has_an_icon_and_so_has_the_site(live_site):
    status, content_type, icon = live_site["/favicon.ico"]
    assert (status, content_type) == (200, "image/svg+xml")
    assert icon.startswith("<svg")
    assert '<link rel="icon" href="/favicon.ico"' in live_site["/"][2]


@pytest.mark.parametrize(
    ("query", "confirmed"),
    [
        (f"transaction_uuid={PAID}", True),
        ("transaction_id=41", True),  # the paid payment's numeric id, read as the return view reads it
        (f"transaction_uuid={PENDING}", False),
        (f"transaction_uuid={FAILED}", False),
        ("transaction_uuid=0b0b0b0b-1111-4222-8333-000000000000", False),
        ("", False),
        ("transaction_id=44", False),
    ],
)
def test_the_success_page_thanks_only_for_a_payment_the_service_said_is_paid(live_site, query, confirmed):
    # Anyone may open it with any uuid or id.
    status, _, html = live_site[f"/payment/thanks/?{query}" if query else "/payment/thanks/"]
    assert status == 200
    assert (CONFIRMED in html, THANKS in html, NOT_CONFIRMED in html) == (confirmed, confirmed, not confirmed)


def test_a_numeric_id_names_a_payment_only_when_it_names_one(live_site):
    assert NOT_COMPLETED in live_site["/payment/failed/?transaction_id=43"][2]
    # Stored from several environments: not one payment, so not "failed" (the payment app's own reading).
    ambiguous = live_site["/payment/failed/?transaction_id=44"][2]
    assert NOT_COMPLETED not in ambiguous
    assert NOT_CONFIRMED in ambiguous
