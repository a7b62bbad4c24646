"""A project set up the way a newcomer does from the README: the app, its settings and URLs, and
``CELERY_TASK_ALWAYS_EAGER = True``, but no Celery app created from Django settings. The app's tasks then
go to Celery's unconfigured default app: the system check paycollect.E009 must say so.
"""

SECRET_KEY = "newcomer-tests-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
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
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
STATIC_URL = "/static/"
PAYCOLLECT = {
    "BASE_URL": "https://service.example",
    "COMMUNITY_ID": "newcomer-community",
    "API_KEY": "newcomer-api-key-not-real",
    "VARIABLE_AMOUNT_ID": 12,
    "CALLBACK_TOKENS": ["newcomer-callback-token-0123456789"],
}
CELERY_TASK_ALWAYS_EAGER = True
