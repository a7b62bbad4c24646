#!/usr/bin/env bash
# The whole test suite on SQLite under Django 4.2 LTS (the oldest Django setup.cfg supports), in a
# virtualenv of its own so that .venv keeps the newest Django. Usage: bash .ci/django42.sh [pytest args]
#
# The virtualenv (.venv-dj42, or $DJ42_VENV) is created when missing and reinstalled when setup.cfg or
# pyproject.toml changed since; browser, worker and PostgreSQL tests skip here as they do without their
# services (PAYCOLLECT_TEST_POSTGRES and PAYCOLLECT_TEST_REDIS are unset for this run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
venv=${DJ42_VENV:-.venv-dj42}
python=${PYTHON:-python3}
stamp="$venv/.installed"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # One resolve, so the test extras cannot pull Django back up to 5.x.
  "$venv/bin/python" -m pip install --quiet -e '.[test]' 'Django>=4.2,<4.3'
  touch "$stamp"
fi
"$venv/bin/python" -c 'import django, sys; assert django.VERSION[:2] == (4, 2), django.get_version(); print("Django", django.get_version(), "on Python", sys.version.split()[0])'
exec env -u PAYCOLLECT_TEST_POSTGRES -u PAYCOLLECT_TEST_REDIS "$venv/bin/python" -m pytest "$@"
