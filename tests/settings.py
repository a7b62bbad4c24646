"""Django settings for the test suite.

SQLite by default; PostgreSQL when PAYCOLLECT_TEST_POSTGRES holds
``host:port:dbname:user`` string (set by ``.ci/run`` for the locking tests).
"""

import importlib.util
import os

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_paycollect",
    # The sandbox's models must be known to mypy's Django plugin and to its in-process tests.
    "django_paycollect.sandbox",
]

# The tests of the Django task runner (PAYCOLLECT["TASK_RUNNER"] = "django") need django-tasks-db's table:
# the "tasks" extra, which make install brings.
if importlib.util.find_spec("django_tasks_db"):
    INSTALLED_APPS.append("django_tasks_db")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

_pg = os.environ.get("PAYCOLLECT_TEST_POSTGRES")
if _pg:
    _host, _port, _name, _user = _pg.split(":")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": _host,
            "PORT": _port,
            "NAME": _name,
            "USER": _user,
        },
    }
    # For tests/app/test_databases.py alone (created only for the tests that ask for them): a second database
    # a router may put the app's models on, and a replica that never receives a write (a replica as far
    # behind as one can be), to which a router may send reads.
    for _alias in ("payments", "replica"):
        DATABASES[_alias] = {**DATABASES["default"], "NAME": f"{_name}_{_alias}"}
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}

STATIC_URL = "/static/"

# Staff and members are made in hundreds of tests; the default hasher spends a third of a second on each
# password by design. No test is about the hasher (the example project, run in its own process, keeps
# Django's).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tests point these at a live sandbox (see tests/conftest.py); the values here only satisfy checks.
PAYCOLLECT = {
    "BASE_URL": "http://127.0.0.1:9",
    "COMMUNITY_ID": "tests-community",
    "API_KEY": "tests-api-key-not-real",
    "CALLBACK_TOKENS": ["tests-callback-token-0123456789"],
}
SILENCED_SYSTEM_CHECKS = ["paycollect.W001"]  # the tests point BASE_URL at a loopback sandbox

# Celery runs tasks inline unless a test (or the worker suite) points it at a broker.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = "memory://"

# As a project's package __init__ does: the Celery app the tasks use, configured from these settings, so that
# `manage.py check` and `makemigrations` see what a real project has (paycollect.E009 stays quiet).
from tests import celery_app as celery_app  # noqa: E402
