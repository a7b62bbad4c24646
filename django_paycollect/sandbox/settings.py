"""Settings of the standalone runner (``python -m django_paycollect.sandbox``); not for mounting.

Configured through environment variables that the runner sets from its options:
PAYCOLLECT_SANDBOX_DB (SQLite file), PAYCOLLECT_SANDBOX_PREFIX (URL prefix),
PAYCOLLECT_SANDBOX_LANGUAGE (the language of answers to clients that ask for none: ``en-us`` or ``ar``),
PAYCOLLECT_SANDBOX_CALLBACK_RETRY_DELAYS (comma-separated seconds).
"""

import os
import secrets

# A fresh key per process: the sandbox signs nothing that must survive a restart except CSRF cookies,
# and a browser simply reloads the page then.
SECRET_KEY = os.environ.get("PAYCOLLECT_SANDBOX_SECRET_KEY") or secrets.token_urlsafe(50)
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = os.environ.get("PAYCOLLECT_SANDBOX_LANGUAGE", "en-us")
LANGUAGES = [("ar", "العربية"), ("en", "English")]
ROOT_URLCONF = "django_paycollect.sandbox.runner_urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
WSGI_APPLICATION = None

INSTALLED_APPS = ["django_paycollect.sandbox"]

MIDDLEWARE = [
    # The hosted pages speak the browser's language (Accept-Language); clients that send none, such as
    # the API's, get LANGUAGE_CODE (PAYCOLLECT_SANDBOX_LANGUAGE, English by default).
    "django.middleware.locale.LocaleMiddleware",
    # Sets Content-Length, without which the server closes every connection after one answer (a new
    # thread and a new database connection per request).
    "django.middleware.common.CommonMiddleware",
    # The hosted page's forms are CSRF protected, as a real payment page's are.
    "django.middleware.csrf.CsrfViewMiddleware",
]
# Paths are character-exact: a missing slash is the 404 envelope, never a redirect.
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]

# Take the write lock at BEGIN so a read-then-write transaction never fails half-way.
_db_options: dict[str, object] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("PAYCOLLECT_SANDBOX_DB", "paycollect-sandbox.sqlite3"),
        "OPTIONS": _db_options,
        # Keep each server thread's connection: reconnecting to SQLite (and setting its pragmas) on every
        # request costs more than the request itself.
        "CONN_MAX_AGE": None,
    }
}

PAYCOLLECT_SANDBOX_PREFIX = os.environ.get("PAYCOLLECT_SANDBOX_PREFIX", "")

_delays = os.environ.get("PAYCOLLECT_SANDBOX_CALLBACK_RETRY_DELAYS")
PAYCOLLECT_SANDBOX = {
    "CONTROL_API": True,
    # The standalone runner is the sandbox itself, driven from outside (tests, scripts) without DEBUG.
    "STAGING": True,
    "DASHBOARD": True,
    # No users here: the dashboard is for whoever reaches the runner (on loopback by default); secrets stay
    # hidden on it (the start-up banner and the control API give them).
    "DASHBOARD_PUBLIC": True,
    "CALLBACK_WORKER": True,
    "JOURNAL_STORAGE": "memory",
    **({"CALLBACK_RETRY_DELAYS": [float(d) for d in _delays.split(",") if d.strip()]} if _delays else {}),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("PAYCOLLECT_SANDBOX_LOG_LEVEL", "INFO")},
}
