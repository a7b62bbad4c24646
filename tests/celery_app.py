"""The Celery app of the test project: configured from Django settings (CELERY_*), eager by default."""

from celery import Celery

app = Celery("tests")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["django_paycollect"])
