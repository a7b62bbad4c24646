"""The WSGI application of the tests that run a real server (gunicorn): the test settings named by
DJANGO_SETTINGS_MODULE, with the test project's Celery app loaded as a project's package loads its own."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.served_settings")

from django.core.wsgi import get_wsgi_application

from tests import celery_app  # noqa: F401

application = get_wsgi_application()
