#!/usr/bin/env bash
# The checkout, as `pip install <checkout>` or `pip install git+<url>` gives it: the committed tree at HEAD
# (pip clones it from a git URL, so files the checkout has but git does not, such as .mo files compiled
# locally, cannot help), installed, not editable, with its dependencies into a fresh virtualenv on python3.
# Then Django, configured with LANGUAGE_CODE = "ar", must read the app's and the sandbox's messages in Arabic:
# proof that the compiled catalogues are committed and shipped. Dependencies come from pip's cache when it
# has them. Usage: bash .ci/checkout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
commit=$(git rev-parse HEAD)
checkout=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/paycollect-checkout.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "git+file://$checkout@$commit"

cd "$work"
unset PYTHONPATH DJANGO_SETTINGS_MODULE
PAYCOLLECT_COMMIT=$commit "$work/venv/bin/python" - <<'PY'
import os
import sys

import django
from django.apps import apps
from django.conf import settings

import django_paycollect

where = django_paycollect.__file__
assert "/site-packages/" in where, f"django_paycollect imported from {where}, not from the installed checkout"

settings.configure(
    # The app's catalogues first: Django's own and contrib's may hold the same English.
    INSTALLED_APPS=["django_paycollect", "django_paycollect.sandbox", "django.contrib.contenttypes"],
    LANGUAGE_CODE="ar",
    USE_I18N=True,
)
django.setup()

from django.utils.translation import gettext  # noqa: E402

app_name = str(apps.get_app_config("paycollect").verbose_name)
read = {
    "the app's name (its AppConfig)": (app_name, "تحصيل المدفوعات"),
    "the app's waiting page": (gettext("Confirming your payment"), "جارٍ تأكيد دفعتك"),
    "the sandbox's payment page": (gettext("Decline"), "رفض"),
}
wrong = {what: got for what, (got, arabic) in read.items() if got != arabic}
assert not wrong, f"English, not Arabic, after a plain install (no compiled catalogue?): {wrong}"
commit = os.environ["PAYCOLLECT_COMMIT"][:12]
print(
    f"django_paycollect {django_paycollect.__version__} installed from git at {commit};",
    f"Django {django.get_version()}, Python {sys.version.split()[0]}; read in Arabic:",
    "; ".join(arabic for arabic, _ in read.values()),
)
PY
echo "A plain install of the checkout carries the Arabic catalogues."
