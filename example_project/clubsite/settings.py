"""Settings of the club site, read from environment variables with safe demo defaults.

With no environment at all this is the demo: DEBUG on, SQLite next to manage.py, the sandbox mounted
at ``/sandbox/`` and used as the service (so no account is needed), Celery tasks run inline.

The site
    ``CLUBSITE_SITE_URL`` (``http://127.0.0.1:8000``): where the site is reached; the callback and
    return URLs are built on it. ``CLUBSITE_DEBUG`` (``1``). ``CLUBSITE_SECRET_KEY`` (required when
    DEBUG is off). ``CLUBSITE_ALLOWED_HOSTS`` (comma-separated; the site URL's host and loopback).
Database
    ``DATABASE_URL`` (``postgres://user:password@host:5432/name``) for PostgreSQL; otherwise SQLite
    in ``CLUBSITE_DB`` (``example_project/clubsite.sqlite3``).
The sandbox
    ``CLUBSITE_SANDBOX`` (``1``): mount it at ``/sandbox/`` (never in a live deployment: it refuses
    to start when ``PAYCOLLECT_DEPLOYMENT=live``). ``CLUBSITE_SANDBOX_CALLBACK_RETRY_DELAYS``: seconds
    between callback attempts, comma-separated. Its control API (no authentication) and its dashboard are
    on with DEBUG only; ``CLUBSITE_SANDBOX_CONTROL_API=1`` turns both on without DEBUG, for a staging site
    (the dashboard then for staff only).
Payments (``settings.PAYCOLLECT``)
    ``PAYCOLLECT_BASE_URL`` (``<site URL>/sandbox`` with the sandbox), ``PAYCOLLECT_COMMUNITY_ID``,
    ``PAYCOLLECT_API_KEY``, ``PAYCOLLECT_BASIC_CREDENTIALS`` (``username:password``; the demo
    community's by default), ``PAYCOLLECT_VARIABLE_AMOUNT_ID`` (``1``), ``PAYCOLLECT_CALLBACK_TOKENS``
    (comma-separated, the first is the one configured at the service), ``PAYCOLLECT_FEES_IN_BILL``
    (``1``: the community adds the service's fees to the bill), ``PAYCOLLECT_ENCRYPTION_KEYS``
    (comma-separated, the first encrypts the stored community keys; unset, derived from the secret key).
Languages
    ``CLUBSITE_LANGUAGE_CODE`` (``en``): the language of a visitor who has chosen none, ``en`` or
    ``ar`` (Arabic, right to left). Every page has a switch between the two (Django's ``set_language``).
Celery
    ``CELERY_BROKER_URL`` (e.g. ``redis://127.0.0.1:6379/0``); unset, tasks run inline (eager).
Background work
    ``CLUBSITE_TASK_RUNNER`` (``celery``): ``django`` runs the payment app's tasks on Django's task framework
    from this site's database (django-tasks-db: ``manage.py db_worker``, the periodic jobs from the timers of
    ``deploy/systemd``), with no broker.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django_paycollect.schedules import BEAT_SCHEDULE

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: list[str]) -> list[str]:
    value = env(name)
    return [item.strip() for item in value.split(",") if item.strip()] if value else default


# --- the site -------------------------------------------------------------------------------------

DEBUG = env_bool("CLUBSITE_DEBUG", True)
SITE_URL = env("CLUBSITE_SITE_URL", "http://127.0.0.1:8000").rstrip("/")

SECRET_KEY = env("CLUBSITE_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("Set CLUBSITE_SECRET_KEY when CLUBSITE_DEBUG is off.")
    SECRET_KEY = "clubsite-demo-only-not-secret"  # noqa: S105 (a demo default, refused without DEBUG)

ALLOWED_HOSTS = env_list(
    "CLUBSITE_ALLOWED_HOSTS", sorted({urlsplit(SITE_URL).hostname or "127.0.0.1", "127.0.0.1", "localhost"})
)
CSRF_TRUSTED_ORIGINS = [SITE_URL] if SITE_URL.startswith("https://") else []

SANDBOX = env_bool("CLUBSITE_SANDBOX", True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_paycollect",
    "clubsite.members",
]
if importlib.util.find_spec("drf_spectacular") and importlib.util.find_spec("drf_spectacular_sidecar"):
    # The REST API's schema and its browsable page (the api extra: pip install "django-paycollect[api]").
    INSTALLED_APPS += ["drf_spectacular", "drf_spectacular_sidecar"]
if SANDBOX:
    # The whole service, locally: the demo needs no account. Never in a live deployment (the sandbox
    # refuses to start when PAYCOLLECT_DEPLOYMENT=live).
    INSTALLED_APPS.append("django_paycollect.sandbox")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The visitor's language: the one chosen with the switch (a cookie), else the browser's, else
    # LANGUAGE_CODE. The payment app's pages and the mounted sandbox's follow it too.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "clubsite.urls"
WSGI_APPLICATION = "clubsite.wsgi.application"

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
                "clubsite.members.context_processors.club",
            ]
        },
    }
]


def _database() -> dict[str, Any]:
    url = env("DATABASE_URL")
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("postgres", "postgresql"):
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured("DATABASE_URL must be postgres://user:password@host:port/name")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
        }
    # The site calls the mounted sandbox over HTTP while the sandbox's callback thread calls the site:
    # several threads write to one SQLite file. Wait for the lock instead of failing at once, and take it
    # at BEGIN so no transaction fails half-way (WAL mode is set in members/apps.py).
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env("CLUBSITE_DB") or str(BASE_DIR / "clubsite.sqlite3"),
        "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
    }


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "admin:login"

LANGUAGE_CODE = env("CLUBSITE_LANGUAGE_CODE", "en")
# Each language in its own name, as the switch shows it.
LANGUAGES = [("en", "English"), ("ar", "العربية")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Amounts as Egypt writes them in Arabic too (1,500.00): Django's own Arabic formats write 1.500,00.
FORMAT_MODULE_PATH = ["clubsite.formats"]

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "static-collected"

if not DEBUG:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SITE_URL.startswith("https://")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Everything to the console (stderr), DEBUG on or off: gunicorn, systemd and containers collect it there.
# Every record passes the payment app's filter, which removes the callback token (a callback URL's path holds
# it, and Django writes paths: a 500's "Internal Server Error: <path>", runserver's request lines), the echoed
# secret and passwords written in URLs.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"paycollect_secrets": {"()": "django_paycollect.secrecy.SecretsLogFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["paycollect_secrets"]}
    },
    "loggers": {
        # Django's own (a 500's traceback in django.request, refused hosts in django.security): Django's
        # default writes them to the console only with DEBUG on, and mails ADMINS otherwise.
        "django": {"handlers": ["console"], "level": env("CLUBSITE_DJANGO_LOG_LEVEL", "INFO")},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django_paycollect": {"handlers": ["console"], "level": env("CLUBSITE_LOG_LEVEL", "INFO")},
        "clubsite": {"handlers": ["console"], "level": env("CLUBSITE_LOG_LEVEL", "INFO")},
    },
}

# --- payments ---------------------------------------------------------------------------------------

# The demo community: the sandbox is seeded with exactly these credentials by `manage.py demo_setup`.
# They are the sandbox's, not secrets; set the PAYCOLLECT_* variables to use your own community.
DEMO_COMMUNITY_ID = "0c1b5173-de30-4c0b-9a6e-5a2d3e4f5a6b"
DEMO_API_KEY = "sbx_clubsite_demo_key_0123456789abcdef"
DEMO_BASIC_CREDENTIALS = "clubsite-demo:demo-basic-password"
DEMO_CALLBACK_TOKEN = "clubsite-demo-callback-token-6f1c2a9e4b"  # noqa: S105 (demo default)

PAYCOLLECT = {
    "BASE_URL": env("PAYCOLLECT_BASE_URL") or (f"{SITE_URL}/sandbox" if SANDBOX else ""),
    "COMMUNITY_ID": env("PAYCOLLECT_COMMUNITY_ID", DEMO_COMMUNITY_ID),
    "API_KEY": env("PAYCOLLECT_API_KEY", DEMO_API_KEY),
    "BASIC_CREDENTIALS": env("PAYCOLLECT_BASIC_CREDENTIALS", DEMO_BASIC_CREDENTIALS),
    # As the environment gives it, text: the app reads "1" as the number (a word is check paycollect.E010).
    "VARIABLE_AMOUNT_ID": env("PAYCOLLECT_VARIABLE_AMOUNT_ID", "1"),
    "CALLBACK_TOKENS": env_list("PAYCOLLECT_CALLBACK_TOKENS", [DEMO_CALLBACK_TOKEN]),
    "FEES_IN_BILL": env_bool("PAYCOLLECT_FEES_IN_BILL", True),
    # Unset: a key derived from SECRET_KEY. Comma-separated, the first encrypts (`paycollect_rotate_keys`).
    "ENCRYPTION_KEYS": env_list("PAYCOLLECT_ENCRYPTION_KEYS", []),
    # URL names of the members app; the app appends ?transaction_uuid=... (or ?transaction_id=...) to them.
    "SUCCESS_URL": "members:payment_success",
    "FAILURE_URL": "members:payment_failure",
    # The REST API's payable hook: the single-page checkout names a plan, the price is decided here.
    "PAYABLE_RESOLVER": "clubsite.members.payables.resolve",
}

# --- the REST API ----------------------------------------------------------------------------------

REST_FRAMEWORK: dict[str, Any] = {
    # The checkout page is on this site: Django's session (with its CSRF token) signs its requests in.
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
}
if "drf_spectacular" in INSTALLED_APPS:
    REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "drf_spectacular.openapi.AutoSchema"
SPECTACULAR_SETTINGS = {
    "TITLE": "Riverside Club payments API",
    "DESCRIPTION": "django-paycollect's REST API for single-page and mobile checkouts.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Served from the installed sidecar's static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

PAYCOLLECT_SANDBOX: dict[str, Any] = {
    # The control API lets the demo's "simulate a kiosk payment" button and the browser tests complete
    # payments and plan callbacks. It has no authentication (it hands out the API key and completes
    # payments nobody paid): on with DEBUG only, unless CLUBSITE_SANDBOX_CONTROL_API=1 asks for it on a
    # staging site (then also acknowledged there, so `check` warns instead of refusing).
    "CONTROL_API": DEBUG or env_bool("CLUBSITE_SANDBOX_CONTROL_API", False),
    "STAGING": not DEBUG and env_bool("CLUBSITE_SANDBOX_CONTROL_API", False),
    # The dashboard shows the sandbox's credentials and changes its API payments' URLs: where the control API
    # may be on, and then, with DEBUG off, for staff only (the demo's staff login sees the credentials).
    "DASHBOARD": DEBUG or env_bool("CLUBSITE_SANDBOX_CONTROL_API", False),
    "CALLBACK_WORKER": True,
}
if env("CLUBSITE_SANDBOX_CALLBACK_RETRY_DELAYS"):
    PAYCOLLECT_SANDBOX["CALLBACK_RETRY_DELAYS"] = [
        float(delay) for delay in env_list("CLUBSITE_SANDBOX_CALLBACK_RETRY_DELAYS", [])
    ]

# --- Celery ----------------------------------------------------------------------------------------

CELERY_BROKER_URL = env("CELERY_BROKER_URL")
# No broker: every task runs inline, in the request that queues it (the demo needs no worker).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# Reconcile every 15 minutes and prune daily (used by `celery beat`; nothing runs when eager).
CELERY_BEAT_SCHEDULE = {**BEAT_SCHEDULE}
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The worker keeps its database sessions from task to task (CONN_MAX_AGE above; see the deployment docs).
CELERY_DB_REUSE_MAX = 1000
if CELERY_BROKER_URL.startswith("redis"):
    # Longer than any retry countdown of the app's tasks (see django_paycollect.tasks).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 7200}

# --- Background work -------------------------------------------------------------------------------

# CLUBSITE_TASK_RUNNER: "celery" (above; the demo's default, inline without a broker) or "django": Django's
# task framework on this site's own database (django-tasks-db), run by `manage.py db_worker`, the periodic
# jobs by the systemd timers in deploy/ (no broker, no beat).
TASK_RUNNER = env("CLUBSITE_TASK_RUNNER", "celery")
if TASK_RUNNER == "django":
    INSTALLED_APPS.append("django_tasks_db")
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    PAYCOLLECT["TASK_RUNNER"] = "django"
