#!/usr/bin/env bash
# The built wheel, as a new user gets it: installed (not the checkout) into a fresh virtualenv on Python 3.13
# with Django 6.1, in a project made by `django-admin startproject` and set up as the quick start says
# (INSTALLED_APPS, PAYCOLLECT, the URLs, Celery). Then migrate, check, collectstatic, and a test that uses the
# shipped paycollect_sandbox fixture: proof that the templates, migrations, static files, the compiled
# translation catalogues and the pytest plugin are in the wheel. Usage: make dist && bash .ci/wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
wheels=(dist/django_paycollect-*-py3-none-any.whl)
[ -f "${wheels[0]}" ] || { echo "no wheel in dist/: run make dist first" >&2; exit 2; }
wheel=$(realpath "${wheels[0]}")
python=$(bash .ci/python.sh 3.13)
work=$(mktemp -d "${TMPDIR:-/tmp}/paycollect-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel" 'Django~=6.1.0' 'pytest>=8' 'pytest-django>=4.8'

cd "$work"
unset PYTHONPATH DJANGO_SETTINGS_MODULE PAYCOLLECT_TEST_POSTGRES PAYCOLLECT_TEST_REDIS
export PATH="$work/venv/bin:$PATH"
django-admin startproject shop .
python - <<'PY'
import django_paycollect, sys
where = django_paycollect.__file__
assert "/site-packages/" in where, f"django_paycollect imported from {where}, not from the installed wheel"
import django
print(f"django_paycollect {django_paycollect.__version__} from the wheel; Django {django.get_version()};",
      f"Python {sys.version.split()[0]}")
PY

# --- the quick start's settings, Celery and URLs (steps 3, 4 and 6; tests/browser/test_quickstart.py follows
# the whole page, sample shop included, against the checkout) ---
cat >>shop/settings.py <<'PY'

# django-paycollect, as the quick start sets it up.
import os  # noqa: E402

INSTALLED_APPS += ["rest_framework", "django_paycollect"]

PAYCOLLECT = {
    "BASE_URL": os.environ.get("PAYCOLLECT_BASE_URL", "https://service.example"),
    "COMMUNITY_ID": os.environ.get("PAYCOLLECT_COMMUNITY_ID", "community-id"),
    "API_KEY": os.environ.get("PAYCOLLECT_API_KEY", "api-key"),
    "VARIABLE_AMOUNT_ID": 1,
    "CALLBACK_TOKENS": [os.environ.get("PAYCOLLECT_CALLBACK_TOKEN", "a-long-random-callback-token-0123456789")],
    "SUCCESS_URL": "/orders/paid/",
    "FAILURE_URL": "/orders/failed/",
    "PAYABLE_RESOLVER": "shop.payables.resolve",
}
CELERY_TASK_ALWAYS_EAGER = True
STATIC_ROOT = BASE_DIR / "static"
PY
cat >shop/urls.py <<'PY'
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycollect.urls")),
    path("api/", include("django_paycollect.api.urls")),
]
PY
cat >shop/payables.py <<'PY'
from decimal import Decimal

from django_paycollect.api.payables import Payable


def resolve(request, reference):
    return Payable(amount=Decimal("80.00"), merchant_reference=f"{reference}-{request.user.pk}") if reference == "book" else None
PY
cat >shop/celery.py <<'PY'
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
app = Celery("shop")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
PY
cat >shop/__init__.py <<'PY'
from .celery import app as celery_app

__all__ = ["celery_app"]
PY

# --- step 7: migrate and check (system checks as errors, the deployment ones aside) ---
python manage.py migrate --noinput -v 1 | grep -E "Applying paycollect|No migrations"
# Read whole before matching: `grep -q` stops reading at its match, and showmigrations then fails on the
# closed pipe (pipefail).
migrations=$(python manage.py showmigrations paycollect)
if grep -q '\[ \]' <<<"$migrations" || ! grep -q '\[X\] 0001_initial' <<<"$migrations"; then
  echo "migrations not all applied:" >&2; echo "$migrations" >&2; exit 1
fi
python manage.py check --database default --fail-level WARNING
python manage.py collectstatic --noinput -v 0
test -f static/paycollect/return-waiting.js
test -f static/paycollect/return-waiting.css

# --- a test of the new project that uses the shipped pytest plugin ---
cat >pytest.ini <<'INI'
[pytest]
DJANGO_SETTINGS_MODULE = shop.settings
INI
cat >test_payments.py <<'PY'
"""A payment through the installed app against the sandbox of the paycollect_sandbox fixture."""

from decimal import Decimal

import pytest
from django.template.loader import get_template
from django.urls import reverse

from django_paycollect import services
from django_paycollect.models import Transaction


@pytest.mark.django_db(transaction=True)  # the service layer never calls the service inside atomic
def test_a_payment_is_started_paid_refunded_and_shown(paycollect_sandbox, settings, admin_client):
    sandbox = paycollect_sandbox
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "BASE_URL": sandbox.base_url,
        "COMMUNITY_ID": sandbox.community_id,
        "API_KEY": sandbox.api_key,
        "VARIABLE_AMOUNT_ID": sandbox.variable_amount_id,
    }
    txn = services.start_payment(
        amount=Decimal("150.00"),
        billing_data={"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"},
        merchant_reference="order-1",
    )
    assert txn.status == Transaction.PENDING and txn.iframe_url.startswith(sandbox.base_url)

    sandbox.control.complete(txn.uuid, "SUCCESSFUL")
    assert services.sync_transaction(txn).status == Transaction.SUCCESSFUL

    # The app's own templates: the admin's refund page and the browser return's waiting page.
    refund_page = admin_client.get(reverse("admin:paycollect_transaction_refund") + f"?ids={txn.pk}")
    assert refund_page.status_code == 200
    assert "admin/paycollect/transaction/refund.html" in [t.name for t in refund_page.templates]
    assert "return-waiting.js" in get_template("paycollect/return_waiting.html").render({})

    refund = services.refund(txn, Decimal("50.00"))
    assert refund.state == refund.SUCCEEDED

    # The REST API works without the api extra (drf-spectacular): only the schema needs it.
    with pytest.raises(ImportError):
        import drf_spectacular  # noqa: F401
    started = admin_client.post(
        "/api/payments/",
        {"reference": "book", "billing_data": {"name": "Mona Ali", "phone_number": "+201001234567"}},
        content_type="application/json",
    )
    assert started.status_code == 201, started.content
    assert started.json()["amount"] == "80.00"


def test_the_compiled_arabic_catalogues_are_in_the_wheel():
    import gettext
    from pathlib import Path

    from django.apps import apps
    from django.utils import translation

    import django_paycollect

    with translation.override("ar"):
        waiting = get_template("paycollect/return_waiting.html").render({})
        assert str(apps.get_app_config("paycollect").verbose_name) == "تحصيل المدفوعات"
    assert 'dir="rtl"' in waiting and "جارٍ تأكيد دفعتك" in waiting
    # The sandbox is not in this project's INSTALLED_APPS: its catalogue read as Django would read it.
    locale = Path(django_paycollect.__file__).parent / "sandbox" / "locale"
    sandbox = gettext.translation("django", locale, ["ar"])
    assert sandbox.gettext("Decline") == "رفض"
PY
python -m pytest -q -p no:cacheprovider test_payments.py
echo "The wheel works in a new project."
