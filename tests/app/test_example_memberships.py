"""The example project's memberships belong to who started them, never to an e-mail anyone can type.

The club site runs in its own process (its own settings, the mounted sandbox as the service). A visitor joins
on the anonymous form with a member's e-mail; the member then pays the same plan on the single-page checkout
(the REST API, whose payable hook picks the membership). The member's payment must go to the member's own
membership, and the visitor's page must show nothing of it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.browser.support import MEMBER_PASSWORD, MEMBER_USERNAME, ClubSite, start_club_site

MEMBER_EMAIL = "member@example.com"  # demo_setup's member


@pytest.fixture
def site(tmp_path_factory: pytest.TempPathFactory, example_migrated: Path) -> Iterator[ClubSite]:
    workdir = Path(tmp_path_factory.mktemp("clubsite-owners"))
    started = start_club_site(workdir, migrated=example_migrated, log_path=workdir / "server.log")
    yield started
    started.stop()


def csrf(session: requests.Session, url: str) -> str:
    """GET the form page, return its CSRF token (also set as the cookie)."""
    page = session.get(url, timeout=30)
    assert page.status_code == 200, page.text[:500]
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, page.text[:500]
    return found.group(1)


def join_as_visitor(site: ClubSite, email: str) -> tuple[requests.Session, str]:
    """The anonymous join form, with ``email``: the visitor's session and membership page path."""
    visitor = requests.Session()
    token = csrf(visitor, f"{site.url}/join/")
    answer = visitor.post(
        f"{site.url}/join/",
        data={
            "csrfmiddlewaretoken": token,
            "plan": "standard",
            "billing": "yearly",
            "pay_using": "card",
            "name": "Sara Hassan",
            "email": email,
            "phone_number": "+201001234567",
            "promocode": "",
        },
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302, answer.text[:2000]
    assert answer.headers["Location"].startswith("/memberships/"), answer.headers["Location"]
    return visitor, answer.headers["Location"]


def signed_in_member(site: ClubSite) -> requests.Session:
    member = requests.Session()
    token = csrf(member, f"{site.url}/accounts/login/")
    answer = member.post(
        f"{site.url}/accounts/login/",
        data={"csrfmiddlewaretoken": token, "username": MEMBER_USERNAME, "password": MEMBER_PASSWORD},
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302, answer.text[:2000]
    return member


def api(member: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:
    headers = {"X-CSRFToken": member.cookies["csrftoken"], "Referer": url}
    return member.request(method, url, headers=headers, timeout=60, **kwargs)


def wait_until_paid(member: requests.Session, url: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        payment: dict[str, Any] = api(member, "GET", url).json()
        if payment["status"] == "SUCCESSFUL" or time.monotonic() > deadline:
            return payment
        time.sleep(0.3)


def test_a_visitor_joining_with_a_members_e_mail_cannot_capture_the_members_payment(site: ClubSite) -> None:
    visitor, visitor_page = join_as_visitor(site, MEMBER_EMAIL)

    member = signed_in_member(site)
    started = api(
        member,
        "POST",
        f"{site.url}/api/payments/",
        json={"reference": "standard-yearly", "billing_data": {"phone_number": "+201009876543"}},
    )
    assert started.status_code == 201, started.text
    uuid = started.json()["uuid"]
    site.control.complete(uuid)  # the member pays; the service's callback tells the site
    payment = wait_until_paid(member, f"{site.url}/api/payments/{uuid}/")
    assert payment["status"] == "SUCCESSFUL", payment

    # The visitor's membership is still unpaid, and its page shows nothing of the member's payment.
    status = visitor.get(f"{site.url}{visitor_page}status/", timeout=30).json()
    assert status["status"] == "new", status
    page = visitor.get(f"{site.url}{visitor_page}", timeout=30)
    assert page.status_code == 200
    assert uuid not in page.text
    assert uuid not in status["html"]
    # Nor does the thank-you page the member's return would land on, when the visitor opens it.
    thanks = visitor.get(f"{site.url}/payment/thanks/", params={"transaction_uuid": uuid}, timeout=30)
    assert thanks.status_code == 200
    assert "Mona Ali" not in thanks.text
    assert "Sara Hassan" not in thanks.text

    # The payment is the member's own membership's, and that one is paid.
    with sqlite3.connect(site.database) as db:
        rows = db.execute(
            "SELECT m.status, m.name, u.username FROM paycollect_transaction t "
            "JOIN members_membership m ON CAST(m.id AS TEXT) = t.object_id "
            "LEFT JOIN auth_user u ON u.id = m.user_id WHERE t.uuid = ?",
            (uuid,),
        ).fetchall()
    assert rows == [("paid", "Mona Ali", MEMBER_USERNAME)]

    # The member finds that membership on the home page and may open it; the visitor may not.
    home = member.get(f"{site.url}/", timeout=30)
    links = set(re.findall(r'href="(/memberships/[0-9a-f-]+/)"', home.text))
    assert len(links) == 1, home.text[:3000]
    (link,) = links
    assert link != visitor_page
    assert member.get(f"{site.url}{link}", timeout=30).status_code == 200
    assert visitor.get(f"{site.url}{link}", timeout=30).status_code == 404
