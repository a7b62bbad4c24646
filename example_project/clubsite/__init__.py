"""The club site: an example project using django-paycollect as a merchant would."""

# The Celery app is loaded with Django, so shared tasks (django_paycollect.tasks) use its settings.
from .celery import app as celery_app

__all__ = ["celery_app"]
