"""Minimal Django settings for building the docs: autodoc imports the Django side of the app.

Nothing here is a recommendation; see the quick start and the settings reference for real settings.
"""

SECRET_KEY = "docs-build-only-not-secret"  # noqa: S105
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "rest_framework",
    "django_paycollect",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
PAYCOLLECT = {
    "BASE_URL": "https://service.example",
    "COMMUNITY_ID": "docs-community",
    "API_KEY": "docs-api-key-not-real",
    "CALLBACK_TOKENS": ["docs-callback-token-not-real-0123"],
}
CELERY_TASK_ALWAYS_EAGER = True
