"""The example project's error pages as a live site (DEBUG off) shows them to customers: a page not found, a
form refused for its missing CSRF token, a server error. With ``LANGUAGE_CODE = "ar"`` they read in Arabic,
right to left; Django's own pages for these would be English whatever the language."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.example_project import run_example

RENDER = """
import json, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.test import Client, RequestFactory
from django.views.defaults import server_error

client = Client(HTTP_HOST="127.0.0.1", enforce_csrf_checks=True, raise_request_exception=False)
pages = {
    "not found": client.get("/no-such-page/"),
    "refused form": client.post("/join/", {"name": "منى علي"}),
    "server error": server_error(RequestFactory().get("/")),
}
print(json.dumps({name: [page.status_code, page.content.decode()] for name, page in pages.items()}))
"""
#: Three English words in a row: a sentence, or a piece of one, left in English.
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*(?:[ \t]+[A-Za-z][A-Za-z'\u2019-]*){2,}")


def rendered(language: str) -> dict[str, tuple[int, str]]:
    done = run_example("-c", RENDER, CLUBSITE_DEBUG="0", CLUBSITE_LANGUAGE_CODE=language)
    assert done.returncode == 0, done.stderr
    return {name: (status, html) for name, (status, html) in json.loads(done.stdout.splitlines()[-1]).items()}


def text_of(html: str) -> str:
    without_code = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.DOTALL)
    return " ".join(re.sub(r"<[^>]+>", " ", without_code).split())


@pytest.fixture(scope="module")
def arabic() -> dict[str, tuple[int, str]]:
    return rendered("ar")


@pytest.mark.parametrize(
    ("page", "status", "title"),
    [
        ("not found", 404, "تعذر العثور على الصفحة"),
        ("refused form", 403, "انتهت صلاحية النموذج"),
        ("server error", 500, "حدث خطأ ما"),
    ],
)
def test_the_example_s_error_pages_read_in_arabic_right_to_left(arabic, page, status, title):
    code, html = arabic[page]
    assert code == status
    assert '<html lang="ar" dir="rtl">' in html
    assert f'<h1 id="error-title">{title}</h1>' in html
    text = text_of(html)
    assert not ENGLISH_RUN.findall(text), text


def test_in_english_they_read_in_english():
    pages = rendered("en")
    assert '<h1 id="error-title">Page not found</h1>' in pages["not found"][1]
    assert '<html lang="en" dir="ltr">' in pages["server error"][1]


MISCONFIGURED = """
import json, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.core.management import call_command
from django.test import Client

call_command("migrate", verbosity=0)
client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
page = client.post(
    "/join/",
    {"plan": "standard", "billing": "yearly", "pay_using": "card", "name": "Sara Hassan",
     "email": "sara@example.com", "phone_number": "+201001234567", "promocode": ""},
)
print(json.dumps([page.status_code, page.content.decode()]))
"""


def test_a_misconfigured_payment_app_is_the_error_page_and_a_logged_error_never_an_unreachable_service(
    tmp_path, example_migrated
):
    # Fees are in the bill, so joining asks the service for them first: with no API key set, the payment app
    # raises its configuration error, which the club site leaves to Django (the site's fault, not a member's).
    done = run_example(
        "-c",
        MISCONFIGURED,
        CLUBSITE_DEBUG="0",
        # A copy of the run's migrated database: MISCONFIGURED's migrate is then a check.
        CLUBSITE_DB=str(shutil.copyfile(example_migrated, tmp_path / "club.sqlite3")),
        PAYCOLLECT_API_KEY="",
        PAYCOLLECT_FEES_IN_BILL="1",
    )
    assert done.returncode == 0, done.stderr
    status, html = json.loads(done.stdout.splitlines()[-1])
    assert status == 500
    assert '<h1 id="error-title">Something went wrong</h1>' in html
    assert "cannot be reached" not in html
    assert "PayCollectConfigurationError: settings.PAYCOLLECT['API_KEY'] is required" in done.stderr
