"""One renewal is one renewal on every surface: the series admin's list, the cancel confirmation, the
dashboard and the REST API all count ``RecurringSeries.renewal_count`` (the successful charges after the
first), while the service's own ``recurring_count`` counts the first charge too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from django_paycollect import services
from django_paycollect.models import RecurringSeries, Transaction

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def renewed_once(api_in_process: Any, recurring_transaction: Transaction) -> RecurringSeries:
    """A paid monthly series after exactly one renewal, stored here as the callback's fetch stores it."""
    (renewal,) = api_in_process.control.advance_clock(31)
    services.sync_transaction(uuid=renewal)
    series = RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert series.charges.filter(status=Transaction.SUCCESSFUL).count() == 2  # the first and one renewal
    assert series.recurring_count == 2  # the service counts every charge, the first one included
    return series


def cells(html: str, column: str) -> list[str]:
    return re.findall(rf'<td class="field-{column}">([^<]*)</td>', html)


def test_the_series_list_shows_one_renewal(renewed_once: RecurringSeries, admin_client: Any) -> None:
    page = admin_client.get(reverse("admin:paycollect_recurringseries_changelist"))
    assert page.status_code == 200
    assert cells(page.content.decode(), "renewals") == ["1"]


def test_the_series_page_shows_one_renewal_and_the_services_own_count(
    renewed_once: RecurringSeries, admin_client: Any
) -> None:
    page = admin_client.get(reverse("admin:paycollect_recurringseries_change", args=[renewed_once.pk]))
    html = " ".join(re.sub(r"<[^>]+>", " ", page.content.decode()).split())
    assert "Renewals: 1 " in html
    assert "Charges the service counts (the first included): 2 " in html


@pytest.mark.parametrize("selected_from", ["recurringseries", "transaction"])
def test_the_cancel_confirmation_says_one_renewal(
    renewed_once: RecurringSeries, admin_client: Any, selected_from: str
) -> None:
    selected = renewed_once.pk if selected_from == "recurringseries" else renewed_once.parent_transaction_id
    action = "cancel" if selected_from == "recurringseries" else "cancel_recurring"
    page = admin_client.post(
        reverse(f"admin:paycollect_{selected_from}_changelist"),
        {"action": action, "_selected_action": [selected]},
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "admin/paycollect/cancel_recurring_confirmation.html" in [t.name for t in page.templates]
    assert re.search(r"<td>\s*1 renewal\s*</td>", html), html
    assert "2 renewals" not in html


def test_the_dashboard_counts_one_renewal_charge(
    api_in_process: Any, renewed_once: RecurringSeries, admin_client: Any
) -> None:
    query = {"community": api_in_process.community_id, "currency": "EGP", "days": "7"}
    page = admin_client.get(reverse("admin:paycollect_dashboard_changelist"), query)
    assert page.status_code == 200
    found = re.search(r'id="figure-collected"[^>]*>(.*?)</div>', page.content.decode(), re.DOTALL)
    assert found
    assert "of which 1 renewal charge (50.00)" in " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def test_the_rest_api_answers_one_renewal(renewed_once: RecurringSeries, as_user: Any) -> None:
    answer = as_user("canceller").post(f"/api/series/{renewed_once.pk}/cancel/", format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["renewals"] == 1


def test_the_renewal_count_is_the_larger_of_the_renewals_stored_and_the_services_count_less_one(
    db: Any,
) -> None:
    series = RecurringSeries.objects.create(
        parent_uuid="c0ffee00-0000-4000-8000-000000000001", community_id="c"
    )
    assert series.renewal_count == 0  # nothing charged yet, or only the first charge: no renewal
    series.recurring_count = 1
    assert series.renewal_count == 0
    series.recurring_count = 3  # renewals whose callbacks never came: the service counted them
    assert series.renewal_count == 2
    series.recurring_count = 1
    for n in (1, 2):  # two renewals stored from their callbacks before the series was fetched again
        Transaction.objects.create(
            uuid=f"c0ffee00-0000-4000-8000-00000000000{n + 1}",
            parent_uuid=series.parent_uuid,
            series=series,
            community_id="c",
            total_amount="50.00",
            status=Transaction.SUCCESSFUL,
            succeeded_at=f"2026-01-0{n}T10:00:00Z",
        )
    Transaction.objects.create(  # a failed renewal attempt is no renewal
        uuid="c0ffee00-0000-4000-8000-000000000009",
        parent_uuid=series.parent_uuid,
        series=series,
        community_id="c",
        total_amount="50.00",
        status=Transaction.FAILED,
    )
    assert series.renewal_count == 2
    assert RecurringSeries.objects.with_renewals().get(pk=series.pk).renewal_count == 2
