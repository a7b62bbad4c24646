"""The test settings of a project with save receivers: django-simple-history on ``Transaction``."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "simple_history", "tests.receivers"]  # noqa: F405
